//! Reports in, verdict out: every threshold of every arm checked against every trial of that
//! arm, separately (never pooled), so one bad trial among good ones still fails its threshold.
//!
//! Pure. The verdict is `verdict.json`, and JUnit, the job summary and the PR comment are
//! rendered from it (plus the reports for detail), so they can never disagree.

mod check;
mod measure;

#[cfg(test)]
mod attach_tests;
#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use super::policy::Policy;
use super::report::{Report, TrialStatus};
pub use check::{Check, CheckState};

/// The schema version of `verdict.json` written by this build.
pub const VERDICT_SCHEMA_VERSION: &str = "1.0";

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

    fn of(ok: bool) -> Self {
        if ok { Self::Pass } else { Self::Fail }
    }
}

/// One threshold across an arm's trials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdVerdict {
    /// The canonical threshold sentence; the JUnit test case name.
    pub name: String,
    /// Pass only when it held in every trial.
    pub verdict: Decision,
    /// One check per trial, in trial order.
    pub checks: Vec<Check>,
}

/// A trial of an arm as the verdict saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrialRef {
    /// `trial-NNN`.
    pub id: String,
    /// Its report, relative to the run directory; null when it left none.
    pub report: Option<String>,
    /// Its status; null when it left no report.
    pub status: Option<TrialStatus>,
}

/// One arm's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmVerdict {
    /// Arm name, and its directory under the run directory.
    pub name: String,
    /// The arm's description from the policy.
    pub description: Option<String>,
    /// Pass only when every threshold passed.
    pub verdict: Decision,
    /// The trials, in order.
    pub trials: Vec<TrialRef>,
    /// The thresholds, in policy order.
    pub thresholds: Vec<ThresholdVerdict>,
}

/// `verdict.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    /// `MAJOR.MINOR` of this file's schema.
    pub schema_version: String,
    /// Pass only when every arm passed.
    pub verdict: Decision,
    /// Where the policy came from: a path or `builtin:smoke`.
    pub policy: String,
    /// The policy's description.
    pub description: Option<String>,
    /// The arms, in policy order.
    pub arms: Vec<ArmVerdict>,
}

/// One trial's evidence as found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialEvidence {
    /// `trial-NNN`.
    pub id: String,
    /// The report's path relative to the run directory.
    pub report_path: String,
    /// The report; `None` when it is missing or unreadable.
    pub report: Option<Report>,
}

/// Evaluates `policy` against the trials of each arm; `trials(arm name)` lists them. An arm
/// with no trials fails every threshold: no evidence never passes.
pub fn evaluate<'a>(
    policy: &Policy,
    policy_source: &str,
    mut trials: impl FnMut(&str) -> &'a [TrialEvidence],
) -> Verdict {
    let arms: Vec<ArmVerdict> = policy
        .arms
        .iter()
        .map(|arm| {
            let ts = trials(&arm.name);
            let thresholds: Vec<ThresholdVerdict> = arm
                .thresholds
                .iter()
                .map(|t| {
                    let checks: Vec<Check> = if ts.is_empty() {
                        vec![measure::check(t, "no-trial", None)]
                    } else {
                        ts.iter()
                            .map(|e| measure::check(t, &e.id, e.report.as_ref()))
                            .collect()
                    };
                    let ok = checks.iter().all(|c| c.state == CheckState::Held);
                    ThresholdVerdict {
                        name: t.to_string(),
                        verdict: Decision::of(ok),
                        checks,
                    }
                })
                .collect();
            let ok = thresholds.iter().all(|t| t.verdict == Decision::Pass);
            ArmVerdict {
                name: arm.name.clone(),
                description: arm.description.clone(),
                verdict: Decision::of(ok),
                trials: ts
                    .iter()
                    .map(|e| TrialRef {
                        id: e.id.clone(),
                        report: e.report.as_ref().map(|_| e.report_path.clone()),
                        status: e.report.as_ref().map(|r| r.trial.status),
                    })
                    .collect(),
                thresholds,
            }
        })
        .collect();
    let ok = !arms.is_empty() && arms.iter().all(|a| a.verdict == Decision::Pass);
    Verdict {
        schema_version: VERDICT_SCHEMA_VERSION.into(),
        verdict: Decision::of(ok),
        policy: policy_source.to_string(),
        description: policy.description.clone(),
        arms,
    }
}

impl Verdict {
    /// Every failed check, as `arm: threshold: message` lines, in policy order.
    pub fn missed(&self) -> Vec<String> {
        let mut out = Vec::new();
        for a in &self.arms {
            for t in &a.thresholds {
                for c in t.checks.iter().filter(|c| c.state != CheckState::Held) {
                    out.push(format!("{}: {}: {}", a.name, t.name, c.message));
                }
            }
        }
        out
    }
}
