use proptest::prelude::*;

use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn the_spread_of_nothing_is_not_measured() {
    assert_eq!(spread(&[]), None);
    assert_eq!(spread(&[1.0, f64::NAN]), None);
    let s = spread(&[3.0, 1.0, 2.0, 10.0]).expect("four values");
    assert_eq!((s.n, s.median, s.min, s.max), (4, 2.5, 1.0, 10.0));
    assert_eq!(spread(&[7.0]).map(|s| s.median), Some(7.0));
}

#[test]
fn binomials_and_the_smallest_reachable_p() {
    assert_eq!(choose(6, 3), 20);
    assert_eq!(choose(10, 5), 252);
    assert_eq!(choose(20, 10), MAX_ENUMERATED);
    assert_eq!(
        choose(200, 100),
        u64::MAX,
        "saturates instead of overflowing"
    );
    // 3 against 3 can never go below p = 0.10; 5 against 5 reaches 2/252.
    assert!(close(min_p(3, 3), 0.1));
    assert!(close(min_p(4, 4), 2.0 / 70.0));
    assert!(close(min_p(5, 5), 2.0 / 252.0));
    assert!(close(min_p(1, 1), 1.0));
}

#[test]
fn exact_p_values_match_the_mann_whitney_table() {
    // Fully separated: the two most extreme of C(n+m, n) assignments.
    let p = rank_sum_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).expect("3 v 3");
    assert!(close(p, 0.1), "{p}");
    let p = rank_sum_p(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).expect("5 v 5");
    assert!(close(p, 2.0 / 252.0), "{p}");
    // 4 v 4 with one inversion (U = 1): P(U <= 1) = 2/70 one-sided, 4/70 two-sided.
    let p = rank_sum_p(&[1.0, 2.0, 3.0, 5.0], &[4.0, 6.0, 7.0, 8.0]).expect("4 v 4");
    assert!(close(p, 4.0 / 70.0), "{p}");
}

#[test]
fn ties_are_midranked_and_all_equal_never_differs() {
    // Every trial failed 0 requests on both sides: nothing to tell apart.
    let p = rank_sum_p(&[0.0; 5], &[0.0; 5]).expect("5 v 5");
    assert!(close(p, 1.0), "{p}");
    // Ties across the sides: [0,0,1] v [1,2,2] has midranks 1.5 1.5 3.5 | 3.5 5.5 5.5.
    let p = rank_sum_p(&[0.0, 0.0, 1.0], &[1.0, 2.0, 2.0]).expect("3 v 3");
    // observed new sum 14.5, mean 10.5: sums at least 4 away are {14.5, 6.5} and their
    // tie-equivalents: 2 + 2 of the 20 assignments.
    assert!(close(p, 4.0 / 20.0), "{p}");
}

#[test]
fn undecidable_inputs_answer_none() {
    assert_eq!(rank_sum_p(&[], &[1.0]), None);
    assert_eq!(rank_sum_p(&[1.0], &[f64::NAN]), None);
    let big: Vec<f64> = (0..11).map(f64::from).collect();
    assert_eq!(
        rank_sum_p(&big, &big),
        None,
        "C(22, 11) exceeds the enumeration bound"
    );
}

proptest! {
    #[test]
    fn identical_samples_never_differ(xs in prop::collection::vec(0u32..1000, 1..=7)) {
        let xs: Vec<f64> = xs.into_iter().map(f64::from).collect();
        let p = rank_sum_p(&xs, &xs).expect("small");
        prop_assert!(close(p, 1.0), "{}", p);
    }

    #[test]
    fn the_test_is_symmetric_in_its_sides(
        a in prop::collection::vec(0u32..50, 1..=6),
        b in prop::collection::vec(0u32..50, 1..=6),
    ) {
        let a: Vec<f64> = a.into_iter().map(f64::from).collect();
        let b: Vec<f64> = b.into_iter().map(f64::from).collect();
        let (p, q) = (rank_sum_p(&a, &b).expect("small"), rank_sum_p(&b, &a).expect("small"));
        prop_assert!(close(p, q), "{} {}", p, q);
        prop_assert!(p > 0.0 && p <= 1.0 + 1e-12);
        // Without ties no assignment is more extreme than the two outermost; with ties the
        // distribution is lopsided and one tail can be a single assignment (see min_p).
        let mut pooled: Vec<f64> = a.iter().chain(&b).copied().collect();
        pooled.sort_by(f64::total_cmp);
        pooled.dedup();
        if pooled.len() == a.len() + b.len() {
            prop_assert!(p + 1e-12 >= min_p(a.len(), b.len()));
        }
    }

    #[test]
    fn shifting_every_new_value_past_the_baseline_reaches_the_smallest_p(
        base in prop::collection::btree_set(0u32..1000, 1..=6),
        new in prop::collection::btree_set(0u32..1000, 1..=6),
        shift in 1u32..100,
    ) {
        let base: Vec<f64> = base.into_iter().map(f64::from).collect();
        let top = base.iter().copied().fold(f64::MIN, f64::max);
        let new: Vec<f64> = new.into_iter().map(|x| top + f64::from(shift) + f64::from(x)).collect();
        let p = rank_sum_p(&base, &new).expect("small");
        prop_assert!(close(p, min_p(base.len(), new.len())), "{}", p);
    }
}
