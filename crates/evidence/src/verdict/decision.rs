//! The decisions a verdict writes: per threshold pass, not judged or fail; per arm and run pass
//! or fail; and whether a threshold was checked per trial or once per arm.

use serde::{Deserialize, Serialize};

/// Pass or fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// Every threshold held in every trial.
    Pass,
    /// At least one threshold was missed or not measured in at least one trial.
    Fail,
}

impl Decision {
    /// The word written in outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
        }
    }

    pub(super) fn of(ok: bool) -> Self {
        if ok { Self::Pass } else { Self::Fail }
    }
}

/// One threshold's decision: a [`Decision`], or not judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThresholdDecision {
    /// It held (in the quorum's number of counted trials, or in its one arm-level check).
    Pass,
    /// A baseline threshold that found no baseline, under `on-missing-baseline = "warn"`: it
    /// fails nothing, and it is not a pass either, since nothing was compared.
    NotJudged,
    /// It was missed or not measured (or found no baseline under `"fail"`).
    Fail,
}

impl ThresholdDecision {
    /// The word written in `verdict.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::NotJudged => "not-judged",
            Self::Fail => "fail",
        }
    }

    /// Whether it fails its arm: only a miss does, never a threshold left unjudged by policy.
    pub fn fails(self) -> bool {
        self == Self::Fail
    }

    pub(super) fn of(ok: bool) -> Self {
        if ok { Self::Pass } else { Self::Fail }
    }
}

/// Whether a threshold is checked in each trial or once across the arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// One check per attempt; the quorum decides.
    Trial,
    /// One check across the arm's counted trials (distributions).
    Arm,
}
