//! One threshold checked against one trial: the unit the verdict is made of. Its own file so
//! the measuring (`measure.rs`) and the verdict that collects the checks (`verdict.rs`) both
//! use it without importing each other.

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
