//! Reports in, verdict out: every threshold of every arm checked against every trial of that
//! arm, separately (never pooled), so one bad trial among good ones still fails its threshold.
//! The exception are the thresholds against a baseline run, judged once per arm
//! ([`baseline`]).
//!
//! Pure. The verdict is `verdict.json`, and JUnit, the job summary and the PR comment are
//! rendered from it (plus the reports for detail), so they can never disagree.

pub mod baseline;
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
pub use baseline::{ArmBaseline, Baseline, BaselineRef, BaselineStatus};
pub use check::{Check, CheckState};

/// The schema version of `verdict.json` written by this build.
/// 1.1 added the baseline: `baseline` at the top and per arm, the check state `no-baseline`.
pub const VERDICT_SCHEMA_VERSION: &str = "1.1";

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
    /// Pass only when it held in every trial (a baseline threshold: when its arm-level check
    /// held, or found no baseline under `on-missing-baseline = "warn"`).
    pub verdict: Decision,
    /// One check per trial, in trial order; one arm-level check for a baseline threshold.
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
    /// What the baseline held for this arm; absent when no baseline was given and the arm has
    /// no baseline threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<ArmBaseline>,
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
    /// The baseline run judged against; absent when none was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineRef>,
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
    trials: impl FnMut(&str) -> &'a [TrialEvidence],
) -> Verdict {
    evaluate_against(policy, policy_source, None, trials)
}

/// [`evaluate`], with the baseline run that the baseline thresholds are judged against (`None`:
/// none was given, so they find no baseline).
pub fn evaluate_against<'a>(
    policy: &Policy,
    policy_source: &str,
    baseline: Option<&Baseline<'_>>,
    mut trials: impl FnMut(&str) -> &'a [TrialEvidence],
) -> Verdict {
    let arms: Vec<ArmVerdict> = policy
        .arms
        .iter()
        .map(|arm| {
            let ts = trials(&arm.name);
            let against = baseline::Against::new(policy, arm, ts, baseline);
            let thresholds: Vec<ThresholdVerdict> = arm
                .thresholds
                .iter()
                .map(|t| {
                    if let Some(v) = against.as_ref().and_then(|a| a.judge(t)) {
                        return v;
                    }
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
                baseline: against.as_ref().map(baseline::Against::record),
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
        baseline: baseline.map(|b| BaselineRef {
            dir: b.dir.to_string(),
        }),
    }
}

impl Verdict {
    /// Every failed check, as `arm: threshold: message` lines, in policy order.
    pub fn missed(&self) -> Vec<String> {
        let mut out = Vec::new();
        for a in &self.arms {
            for t in a.thresholds.iter().filter(|t| t.verdict == Decision::Fail) {
                for c in t.checks.iter().filter(|c| c.state != CheckState::Held) {
                    out.push(format!("{}: {}: {}", a.name, t.name, c.message));
                }
            }
        }
        out
    }
    /// Every baseline threshold that passed without a baseline (`on-missing-baseline =
    /// "warn"`), as `arm: threshold: message` lines: shown, never silent.
    pub fn without_baseline(&self) -> Vec<String> {
        let mut out = Vec::new();
        for a in &self.arms {
            for t in a.thresholds.iter().filter(|t| t.verdict == Decision::Pass) {
                for c in t
                    .checks
                    .iter()
                    .filter(|c| c.state == CheckState::NoBaseline)
                {
                    out.push(format!("{}: {}: {}", a.name, t.name, c.message));
                }
            }
        }
        out
    }
}
