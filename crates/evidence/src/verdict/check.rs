//! One threshold checked against one trial: the unit the verdict is made of. Its own file so
//! the measuring (`measure.rs`) and the verdict that collects the checks (`verdict.rs`) both
//! use it without importing each other.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One threshold in one trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckState {
    /// The measured value meets the threshold.
    Held,
    /// The measured value does not.
    Missed,
    /// There is no value to compare; this fails the threshold.
    NotMeasured,
    /// An arm-level check against a baseline that has nothing to compare with (none given, the
    /// arm absent or incomparable, the metric not measured there): fails the threshold only
    /// under `on-missing-baseline = "fail"`.
    NoBaseline,
}

/// One threshold checked against one trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// The trial, or `arm` for an arm-level check (a baseline threshold), which judges all
    /// of the arm's trials at once.
    pub trial_id: String,
    /// Held, missed, not measured or no baseline.
    pub state: CheckState,
    /// What was measured, in words; null when not measured.
    pub measured: Option<String>,
    /// The number that decided it (a flow count, or milliseconds); null when not measured,
    /// and for arm-level checks (their medians are in `measured`).
    pub value: Option<i64>,
    /// The flows in scope, for count thresholds.
    pub of: Option<u32>,
    /// One line naming the trial, the measured value and, when missed, the threshold.
    pub message: String,
}

/// A check that could not be measured, saying why: never held.
pub(super) fn not_measured(trial_id: &str, why: String) -> Check {
    Check {
        trial_id: trial_id.to_string(),
        state: CheckState::NotMeasured,
        measured: None,
        value: None,
        of: None,
        message: format!("{trial_id}: not measured: {why}"),
    }
}

/// The one place a measured trial becomes held or missed, so every measure words its check
/// alike; `missed` is said only when it missed.
pub(super) fn decide(
    trial_id: &str,
    ok: bool,
    measured: String,
    value: i64,
    of: Option<u32>,
    missed: fmt::Arguments<'_>,
) -> Check {
    let message = if ok {
        format!("{trial_id}: {measured}")
    } else {
        format!("{trial_id}: {measured}; {missed}")
    };
    Check {
        trial_id: trial_id.to_string(),
        state: if ok {
            CheckState::Held
        } else {
            CheckState::Missed
        },
        measured: Some(measured),
        value: Some(value),
        of,
        message,
    }
}

/// A measure that holds only when nothing went wrong: `bad` of `total`.
pub(super) fn none_bad(
    trial_id: &str,
    bad: u32,
    total: u32,
    measured: String,
    rule: &str,
) -> Check {
    decide(
        trial_id,
        bad == 0,
        measured,
        i64::from(bad),
        Some(total),
        format_args!("the threshold is {rule}"),
    )
}
