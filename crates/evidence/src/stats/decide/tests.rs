use proptest::prelude::*;

use super::*;

const MS: Rule = Rule {
    alpha: 0.05,
    min_effect: 5.0,
    counts_failures: false,
};
const COUNTS: Rule = Rule {
    alpha: 0.05,
    min_effect: 1.0,
    counts_failures: true,
};

fn some(xs: &[f64]) -> Vec<Option<f64>> {
    xs.iter().copied().map(Some).collect()
}

#[test]
fn a_failure_in_every_new_trial_and_no_baseline_trial_regresses_at_any_n() {
    // 1 against 1: no test could decide, the count rule does.
    let c = compare(&some(&[0.0]), &some(&[2.0]), &COUNTS);
    assert_eq!(
        (c.change, c.decided_by),
        (Change::Regressed, DecidedBy::EveryTrialAgainstNone)
    );
    let c = compare(&some(&[3.0, 1.0, 2.0]), &some(&[0.0, 0.0, 0.0]), &COUNTS);
    assert_eq!(
        (c.change, c.decided_by),
        (Change::Improved, DecidedBy::EveryTrialAgainstNone)
    );
    // Not in every new trial: the count rule is silent, and 3 v 3 cannot reach 0.05.
    let c = compare(&some(&[0.0, 0.0, 0.0]), &some(&[2.0, 0.0, 1.0]), &COUNTS);
    assert_eq!(
        (c.change, c.decided_by),
        (Change::Unchanged, DecidedBy::TooFewTrials)
    );
}

#[test]
fn intervals_need_significance_and_the_minimum_effect() {
    let base = some(&[100.0, 101.0, 102.0, 103.0, 104.0]);
    // Every new value 6 ms later: p = 2/252, but below a 10 ms effect: jitter, unchanged.
    let jitter = some(&[106.0, 107.0, 108.0, 109.0, 110.0]);
    let c = compare(
        &base,
        &jitter,
        &Rule {
            min_effect: 10.0,
            ..MS
        },
    );
    assert_eq!(c.decided_by, DecidedBy::NoSignificantDifference);
    assert_eq!(c.change, Change::Unchanged);
    // 50 ms later in every trial: regressed by the rank-sum test.
    let late = some(&[150.0, 151.0, 152.0, 153.0, 154.0]);
    let c = compare(&base, &late, &MS);
    assert_eq!(
        (c.change, c.decided_by),
        (Change::Regressed, DecidedBy::RankSum)
    );
    assert!(c.p.is_some_and(|p| (p - 2.0 / 252.0).abs() < 1e-12));
    assert_eq!(c.new.map(|s| s.median), Some(152.0));
}

#[test]
fn not_measured_is_never_zero() {
    let c = compare(&[None, None], &some(&[1.0, 2.0]), &COUNTS);
    assert_eq!(
        (c.change, c.decided_by, c.base),
        (Change::NotMeasured, DecidedBy::Missing, None)
    );
    // Trials that did not measure are left out, not counted as 0.
    let c = compare(&[Some(0.0), None], &[Some(2.0), None], &COUNTS);
    assert_eq!(c.change, Change::Regressed);
    assert_eq!(c.base.map(|s| s.n), Some(1));
}

#[test]
fn more_trials_than_the_enumeration_takes_is_said() {
    let xs: Vec<Option<f64>> = (0..11).map(|i| Some(f64::from(i))).collect();
    let c = compare(&xs, &xs, &MS);
    assert_eq!(c.decided_by, DecidedBy::TooManyTrials);
}

proptest! {
    #[test]
    fn identical_runs_never_regress(
        xs in prop::collection::vec(0u32..100, 1..=8),
        counts in any::<bool>(),
    ) {
        let xs: Vec<Option<f64>> = xs.into_iter().map(|x| Some(f64::from(x))).collect();
        let rule = Rule { alpha: 0.05, min_effect: 0.0, counts_failures: counts };
        prop_assert_eq!(compare(&xs, &xs, &rule).change, Change::Unchanged);
    }

    #[test]
    fn a_shift_beyond_the_effect_with_enough_trials_always_regresses(
        base in prop::collection::vec(0u32..100, 5..=8),
        shift in 0u32..50,
    ) {
        // Every new value above every baseline value by more than the 5 ms effect.
        let top = f64::from(*base.iter().max().expect("five or more"));
        let new: Vec<Option<f64>> =
            (0..5).map(|i| Some(top + 6.0 + f64::from(shift) + f64::from(i))).collect();
        let base: Vec<Option<f64>> = base.into_iter().map(|x| Some(f64::from(x))).collect();
        let c = compare(&base, &new, &MS);
        prop_assert_eq!(c.change, Change::Regressed);
        // Swapping the sides gives the mirror decision.
        prop_assert_eq!(compare(&new, &base, &MS).change, Change::Improved);
    }
}
