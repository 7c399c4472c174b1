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
}

/// One threshold checked against one trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// The trial.
    pub trial_id: String,
    /// Held, missed or not measured.
    pub state: CheckState,
    /// What was measured, in words; null when not measured.
    pub measured: Option<String>,
    /// The number that decided it (a flow count, or milliseconds); null when not measured.
    pub value: Option<i64>,
    /// The flows in scope, for count thresholds.
    pub of: Option<u32>,
    /// One line naming the trial, the measured value and, when missed, the threshold.
    pub message: String,
}
