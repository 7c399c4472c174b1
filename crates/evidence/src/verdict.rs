//! Reports in, verdict out: every threshold of every arm checked against every trial of that
//! arm, separately (never pooled), so one bad trial among good ones still fails its threshold.
//! The exception are the thresholds against a baseline run, judged once per arm
//! ([`baseline`]).
//!
//! Pure. The verdict is `verdict.json`, and JUnit, the job summary and the PR comment are
//! rendered from it (plus the reports for detail), so they can never disagree.

pub mod baseline;
mod bounded;
mod check;
mod decision;
pub mod distribution;
mod h2_checks;
mod ingress_lag;
mod ingress_retries;
mod measure;
mod node_lag;
mod pods;
pub mod quorum;
pub mod unjudged;

#[cfg(test)]
mod attach_tests;
#[cfg(any(test, feature = "test-fixtures"))]
#[doc(hidden)]
pub mod fixtures;
#[cfg(test)]
mod ingress_tests;
#[cfg(test)]
mod pod_tests;
#[cfg(test)]
mod props;
#[cfg(test)]
pub(crate) mod retry_tests;
#[cfg(test)]
pub(crate) mod tests;

use serde::{Deserialize, Serialize};

use super::policy::threshold::Threshold;
use super::policy::{Arm, Policy, Quorum};
use super::report::{Report, TrialStatus};
pub use baseline::{ArmBaseline, Baseline, BaselineInput, BaselineRef, BaselineStatus};
pub use check::{Check, CheckState};
pub use decision::{Decision, Level, ThresholdDecision};

/// The schema version of `verdict.json` written by this build. 1.1 added the baseline
/// (`baseline` at the top and per arm, the check state `no-baseline`) and repeats: the arm's
/// `rule`, attempts (`attempt`, `retry_of`, `counted`), `held`/`of`/`level`/`flaky` per threshold
/// and `flaky` per arm and run; all optional, so 1.0 files still read. 2.0 added the threshold
/// decision `not-judged` (1.1 wrote such a threshold as `pass`): a value of a closed enum, so
/// MAJOR; 1.x files still read.
pub const VERDICT_SCHEMA_VERSION: &str = "2.0";

/// One threshold across an arm's trials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdVerdict {
    /// The canonical threshold sentence; the JUnit test case name.
    pub name: String,
    /// Per-trial: pass when it held in at least the quorum's number of counted trials (every
    /// trial by default). Arm-level: pass when the one check held; not judged when a baseline
    /// threshold found no baseline under `on-missing-baseline = "warn"`.
    pub verdict: ThresholdDecision,
    /// Per-trial: one check per attempt, in trial order; arm-level: one check.
    pub checks: Vec<Check>,
    /// Per-trial or arm-level (absent in 1.0: per-trial).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
    /// Per-trial: counted trials (the last attempt of each) in which it held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<u32>,
    /// Per-trial: counted trials judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of: Option<u32>,
    /// A pass that held only after a retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flaky: Option<bool>,
}

impl ThresholdVerdict {
    /// Whether it passed only after a retry.
    pub fn is_flaky(&self) -> bool {
        self.flaky == Some(true)
    }

    /// The check that found no baseline to judge it against, if any: such a threshold is not
    /// judged (`on-missing-baseline = "warn"`) or fails (`"fail"`), and every renderer names
    /// the missing baseline.
    pub fn no_baseline(&self) -> Option<&Check> {
        self.checks
            .iter()
            .find(|c| c.state == CheckState::NoBaseline)
    }

    /// The word a console line gives it: `warn` for one not judged, which fails nothing.
    pub fn word(&self) -> &'static str {
        match self.verdict {
            ThresholdDecision::NotJudged => "warn",
            d => d.as_str(),
        }
    }
}

/// A trial attempt of an arm as the verdict saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrialRef {
    /// `trial-NNN`, or `trial-NNN-retry-R` for a retry.
    pub id: String,
    /// Its report, relative to the run directory; null when it left none.
    pub report: Option<String>,
    /// Its status; null when it left no report.
    pub status: Option<TrialStatus>,
    /// 1 for a trial's first attempt, R + 1 for `-retry-R` (absent in 1.0: 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// The trial a retry re-runs (`trial-NNN`); null for a first attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_of: Option<String>,
    /// Whether per-trial thresholds count it: the last attempt of its trial (absent in 1.0:
    /// true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<bool>,
}

impl TrialRef {
    /// Whether per-trial thresholds count this attempt.
    pub fn is_counted(&self) -> bool {
        self.counted != Some(false)
    }
}

/// How an arm's trials combined: the rule applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrialRule {
    /// `all` or `k/n`, as the policy's `quorum`.
    pub quorum: String,
    /// Counted trials a per-trial threshold had to hold in.
    pub need: u32,
    /// Retries the policy allowed per trial.
    pub retries: u32,
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
    /// The trials, in order; every attempt.
    pub trials: Vec<TrialRef>,
    /// The thresholds, in policy order.
    pub thresholds: Vec<ThresholdVerdict>,
    /// The quorum and retries applied (absent in 1.0: every trial, no retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<TrialRule>,
    /// Some threshold passed only after a retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flaky: Option<bool>,
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
    /// Some threshold of some arm passed only after a retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flaky: Option<bool>,
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

/// Evaluates `policy` against the trials of each arm; `trials(arm name)` lists them (every
/// attempt, in directory order). An arm with no trials fails every threshold: no evidence never
/// passes.
pub fn evaluate<'a>(
    policy: &Policy,
    policy_source: &str,
    trials: impl FnMut(&str) -> &'a [TrialEvidence],
) -> Verdict {
    evaluate_against(
        policy,
        policy_source,
        BaselineInput::NotGiven(baseline::NOT_GIVEN),
        trials,
    )
}

/// [`evaluate`], with the baseline run that the baseline thresholds are judged against, or why
/// there is none (each of them then finds no baseline, and says why).
pub fn evaluate_against<'a>(
    policy: &Policy,
    policy_source: &str,
    baseline: BaselineInput<'_>,
    mut trials: impl FnMut(&str) -> &'a [TrialEvidence],
) -> Verdict {
    let arms: Vec<ArmVerdict> = policy
        .arms
        .iter()
        .map(|arm| evaluate_arm(policy, arm, trials(&arm.name), baseline))
        .collect();
    let ok = !arms.is_empty() && arms.iter().all(|a| a.verdict == Decision::Pass);
    let flaky = arms.iter().any(|a| a.flaky == Some(true));
    Verdict {
        schema_version: VERDICT_SCHEMA_VERSION.into(),
        verdict: Decision::of(ok),
        policy: policy_source.to_string(),
        description: policy.description.clone(),
        arms,
        flaky: Some(flaky),
        baseline: baseline.run().map(|b| BaselineRef {
            dir: b.dir.to_string(),
        }),
    }
}

/// Whether one attempt held every per-trial threshold of `thresholds` (arm-level ones are
/// skipped): the decision to retry it, made by the same checks the verdict makes.
pub fn trial_held(thresholds: &[Threshold], trial_id: &str, report: Option<&Report>) -> bool {
    thresholds
        .iter()
        .filter(|t| !t.arm_level())
        .all(|t| measure::check(t, trial_id, report).state == CheckState::Held)
}

fn evaluate_arm(
    policy: &Policy,
    arm: &Arm,
    ts: &[TrialEvidence],
    baseline: BaselineInput<'_>,
) -> ArmVerdict {
    let quorum = arm.settings.quorum.unwrap_or(Quorum::All);
    // A planned trial that left no directory is judged as a trial without a report: never
    // held, and never left out of "all".
    let absent: Vec<TrialEvidence> = if ts.is_empty() {
        Vec::new()
    } else {
        let ids: Vec<&str> = ts.iter().map(|e| e.id.as_str()).collect();
        quorum::missing(&ids, arm.settings.repeat.unwrap_or(1))
            .into_iter()
            .map(|id| TrialEvidence {
                report_path: format!("{id}/report.json"),
                id,
                report: None,
            })
            .collect()
    };
    let mut all: Vec<TrialEvidence> = ts.to_vec();
    if !absent.is_empty() {
        all.extend(absent);
        all.sort_by(|a, b| a.id.cmp(&b.id));
    }
    let ts = all.as_slice();
    let ids: Vec<&str> = ts.iter().map(|e| e.id.as_str()).collect();
    let attempts = quorum::attempts(&ids);
    let counted: Vec<&TrialEvidence> = ts
        .iter()
        .zip(&attempts)
        .filter(|(_, a)| a.counted)
        .map(|(e, _)| e)
        .collect();
    // A baseline compares the counted attempts: a retry adds no second sample of a trial.
    let counted_owned: Vec<TrialEvidence> = counted.iter().map(|e| (*e).clone()).collect();
    let against = baseline::Against::new(policy, arm, &counted_owned, baseline);
    let thresholds: Vec<ThresholdVerdict> = arm
        .thresholds
        .iter()
        .map(|t| {
            if let Some(v) = against.as_ref().and_then(|a| a.judge(t)) {
                return v;
            }
            if let Threshold::Distribution(d) = t {
                let c = distribution::check(d, &counted);
                return ThresholdVerdict {
                    name: t.to_string(),
                    verdict: ThresholdDecision::of(c.state == CheckState::Held),
                    checks: vec![c],
                    level: Some(Level::Arm),
                    held: None,
                    of: None,
                    flaky: Some(false),
                };
            }
            if ts.is_empty() {
                return ThresholdVerdict {
                    name: t.to_string(),
                    verdict: ThresholdDecision::Fail,
                    checks: vec![measure::check(t, "no-trial", None)],
                    level: Some(Level::Trial),
                    held: Some(0),
                    of: Some(0),
                    flaky: Some(false),
                };
            }
            let checks: Vec<Check> = ts
                .iter()
                .map(|e| measure::check(t, &e.id, e.report.as_ref()))
                .collect();
            let tally = quorum::tally(quorum, &checks, &attempts);
            ThresholdVerdict {
                name: t.to_string(),
                verdict: ThresholdDecision::of(tally.pass),
                checks,
                level: Some(Level::Trial),
                held: Some(tally.held),
                of: Some(tally.trials),
                flaky: Some(tally.flaky),
            }
        })
        .collect();
    let ok = !thresholds.iter().any(|t| t.verdict.fails());
    let flaky = thresholds.iter().any(ThresholdVerdict::is_flaky);
    let finals = u32::try_from(counted.len()).unwrap_or(u32::MAX);
    ArmVerdict {
        name: arm.name.clone(),
        description: arm.description.clone(),
        verdict: Decision::of(ok),
        trials: ts
            .iter()
            .zip(&attempts)
            .map(|(e, a)| TrialRef {
                id: e.id.clone(),
                report: e.report.as_ref().map(|_| e.report_path.clone()),
                status: e.report.as_ref().map(|r| r.trial.status),
                attempt: Some(a.attempt),
                retry_of: (a.attempt > 1).then(|| a.trial.clone()),
                counted: Some(a.counted),
            })
            .collect(),
        thresholds,
        rule: Some(TrialRule {
            quorum: quorum.to_string(),
            need: quorum.need(finals),
            retries: arm.settings.retries.unwrap_or(0),
        }),
        flaky: Some(flaky),
        baseline: against.as_ref().map(baseline::Against::record),
    }
}

impl Verdict {
    /// Every check that did not hold of every failed threshold, as `arm: threshold: message`
    /// lines, in policy order. (A passing threshold's misses, under a quorum or before a retry,
    /// are not why anything failed; [`Verdict::flaky_lines`] lists the retried ones.)
    pub fn missed(&self) -> Vec<String> {
        let mut out = Vec::new();
        for a in &self.arms {
            for t in a.thresholds.iter().filter(|t| t.verdict.fails()) {
                for c in t.checks.iter().filter(|c| c.state != CheckState::Held) {
                    out.push(format!("{}: {}: {}", a.name, t.name, c.message));
                }
            }
        }
        out
    }

    /// The checks in `state` of every failed threshold, as `arm: threshold: message` lines, in
    /// policy order: `missed` split by why.
    pub fn failing(&self, state: CheckState) -> Vec<String> {
        let mut out = Vec::new();
        for a in &self.arms {
            for t in a.thresholds.iter().filter(|t| t.verdict.fails()) {
                for c in t.checks.iter().filter(|c| c.state == state) {
                    out.push(format!("{}: {}: {}", a.name, t.name, c.message));
                }
            }
        }
        out
    }

    /// The console's lines for the checks of every failed threshold, each with its word
    /// (`missed`, `not measured`, `no baseline`): what missed is said apart from what could
    /// not be measured, by check state, never by reading the message.
    pub fn failing_lines(&self) -> Vec<String> {
        [
            (CheckState::Missed, "missed"),
            (CheckState::NotMeasured, "not measured"),
            (CheckState::NoBaseline, "no baseline"),
        ]
        .into_iter()
        .flat_map(|(state, word)| {
            self.failing(state)
                .into_iter()
                .map(move |m| format!("  {word}: {m}"))
        })
        .collect()
    }

    /// Every threshold that passed only after a retry, with the attempts that missed it, as
    /// `arm: threshold: message` lines, in policy order.
    pub fn flaky_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for a in &self.arms {
            for t in a.thresholds.iter().filter(|t| t.is_flaky()) {
                for c in t.checks.iter().filter(|c| c.state != CheckState::Held) {
                    out.push(format!(
                        "{}: {}: flaky, retried: {}",
                        a.name, t.name, c.message
                    ));
                }
            }
        }
        out
    }

    /// Every threshold not judged (a baseline threshold without a baseline, under
    /// `on-missing-baseline = "warn"`), with its arm and the check that found none: the one
    /// list the console, the summary and its headline count read.
    pub fn not_judged(&self) -> impl Iterator<Item = (&ArmVerdict, &ThresholdVerdict, &Check)> {
        self.arms.iter().flat_map(|a| {
            a.thresholds
                .iter()
                .filter(|t| t.verdict == ThresholdDecision::NotJudged)
                .filter_map(move |t| t.no_baseline().map(|c| (a, t, c)))
        })
    }

    /// [`Self::not_judged`] as `arm: threshold: message` lines: shown, never silent.
    pub fn not_judged_lines(&self) -> Vec<String> {
        self.not_judged()
            .map(|(a, t, c)| format!("{}: {}: {}", a.name, t.name, c.message))
            .collect()
    }
}
