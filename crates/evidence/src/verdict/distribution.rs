//! Distribution thresholds (`p50 sigterm-to-last-flow-end <= 26s`): one check across an arm's
//! trials, on the nearest-rank percentile of the trials' values of one metric.
//!
//! **Nearest rank**: with the n values sorted ascending as x₁ ≤ … ≤ xₙ, the P-th percentile
//! (P in 1..=100) is x_⌈P·n/100⌉. It is always one of the measured values (no interpolation, so
//! a count stays a count), p100 is the largest, and p50 of an even n is the lower middle value.
//! Absence is never 0: a trial that did not measure the metric, or left no complete report, makes
//! the whole check not-measured, since the percentile of the other trials is not the arm's.

use crate::policy::threshold::Distribution;
use crate::report::TrialStatus;
use crate::stats::metric::Unit;

use super::TrialEvidence;
use super::check::{Check, CheckState};
use crate::rank;

/// The `trial_id` of an arm-level check: it belongs to no one trial.
pub const ARM_LEVEL_ID: &str = "arm";

/// The nearest-rank `p`-th percentile of `values` (see the module doc); `None` when there are
/// no values or `p` is outside 1..=100.
pub fn nearest_rank(values: &[i64], p: u8) -> Option<i64> {
    if values.is_empty() || !(1..=100).contains(&p) {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    rank::nearest_rank(&v, usize::from(p) * 10)
}

fn not_measured(why: String) -> Check {
    Check {
        trial_id: ARM_LEVEL_ID.into(),
        state: CheckState::NotMeasured,
        measured: None,
        value: None,
        of: None,
        message: format!("arm: not measured: {why}"),
    }
}

fn show(unit: Unit, v: i64) -> String {
    match unit {
        Unit::Milliseconds => format!("{v} ms"),
        Unit::Count => v.to_string(),
    }
}

/// Checks `d` against the arm's counted trials (the last attempt of each), in trial order.
pub fn check(d: &Distribution, trials: &[&TrialEvidence]) -> Check {
    let name = d.metric.name();
    if trials.is_empty() {
        return not_measured("the arm has no trial".into());
    }
    let mut values = Vec::with_capacity(trials.len());
    for t in trials {
        let Some(r) = &t.report else {
            return not_measured(format!(
                "{} left no report, so p{} {name} over the arm's trials cannot be computed",
                t.id, d.percentile
            ));
        };
        if r.trial.status != TrialStatus::Completed {
            return not_measured(format!(
                "{} is {}, so its evidence is partial",
                t.id,
                r.trial.status.as_str()
            ));
        }
        let Some(v) = d.metric.of(r) else {
            return not_measured(format!(
                "{} did not measure {name} (absence is not 0), so p{} over the arm's trials cannot be computed",
                t.id, d.percentile
            ));
        };
        // Every metric is whole milliseconds or a count, so rounding is exact.
        values.push(v.round() as i64);
    }
    let Some(p) = nearest_rank(&values, d.percentile) else {
        return not_measured("no value".into());
    };
    let unit = d.metric.unit();
    let listed: Vec<String> = trials
        .iter()
        .zip(&values)
        .map(|(t, v)| format!("{} {}", t.id, show(unit, *v)))
        .collect();
    let measured = format!(
        "p{} {name} of {} trials = {} ({})",
        d.percentile,
        values.len(),
        show(unit, p),
        listed.join(", ")
    );
    let max = i64::try_from(d.max).unwrap_or(i64::MAX);
    let held = p <= max;
    let message = if held {
        format!("arm: {measured}")
    } else {
        format!("arm: {measured}; the threshold is ≤ {}", show(unit, max))
    };
    Check {
        trial_id: ARM_LEVEL_ID.into(),
        state: if held {
            CheckState::Held
        } else {
            CheckState::Missed
        },
        measured: Some(measured),
        value: Some(p),
        of: u32::try_from(values.len()).ok(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn nearest_rank_on_known_small_tables() {
        // (values, p, expected): x_⌈p·n/100⌉ of the sorted values.
        let table: [(&[i64], u8, i64); 10] = [
            (&[5], 1, 5),
            (&[5], 100, 5),
            (&[3, 1, 2], 50, 2),
            (&[1, 2, 3, 4], 50, 2),
            (&[1, 2, 3, 4], 51, 3),
            (&[15, 20, 35, 40, 50], 30, 20),
            (&[15, 20, 35, 40, 50], 40, 20),
            (&[15, 20, 35, 40, 50], 50, 35),
            (&[15, 20, 35, 40, 50], 100, 50),
            (&[0, 0, 0, 0, 7], 90, 7),
        ];
        for (values, p, want) in table {
            assert_eq!(nearest_rank(values, p), Some(want), "p{p} of {values:?}");
        }
        assert_eq!(nearest_rank(&[], 50), None);
        assert_eq!(nearest_rank(&[1], 0), None);
        assert_eq!(nearest_rank(&[1], 101), None);
    }

    proptest! {
        #[test]
        fn the_percentile_of_identical_values_is_that_value(v in -1000i64..100_000, n in 1usize..12, p in 1u8..=100) {
            prop_assert_eq!(nearest_rank(&vec![v; n], p), Some(v));
        }

        #[test]
        fn p100_is_the_max_and_p1_at_most_the_median(values in prop::collection::vec(0i64..100_000, 1..12)) {
            let max = values.iter().copied().max();
            prop_assert_eq!(nearest_rank(&values, 100), max);
            let min = values.iter().copied().min();
            prop_assert_eq!(nearest_rank(&values, 1), min);
        }

        #[test]
        fn the_percentile_is_a_measured_value_and_grows_with_p(values in prop::collection::vec(0i64..1000, 1..12), p in 1u8..100) {
            let a = nearest_rank(&values, p).unwrap();
            let b = nearest_rank(&values, p + 1).unwrap();
            prop_assert!(values.contains(&a));
            prop_assert!(a <= b);
        }
    }
}
