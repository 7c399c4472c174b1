//! The thresholds judged against a baseline run (`METRIC <= baseline [+ MARGIN]`,
//! `no-regression`): **arm-level** checks, one per arm and threshold, never per trial.
//!
//! - `METRIC <= baseline + MARGIN` holds when the median of the metric over the new arm's trials
//!   is at most the median over the baseline arm's trials plus the margin (a share of the
//!   baseline's median, or an amount in the metric's unit). Medians, because a gate runs few
//!   trials and one outlier should move the comparison by at most one rank.
//! - `no-regression` holds when no metric of the arm regressed, as `drainwatch compare` decides
//!   it (`stats::runs::compare_runs`, default parameters).
//!
//! Both read every readable trial report on each side, as `drainwatch compare` does. A metric no
//! new trial measured is not-measured (it fails, as an absolute threshold does). A baseline that
//! is missing for the arm — none given, the arm absent from it, the pair incomparable (trigger,
//! protocol or flow counts changed), or the metric not measured in it — gives the check state
//! [`CheckState::NoBaseline`]: with `on-missing-baseline = "warn"` the threshold is not judged
//! (it fails nothing, and is shown as "no baseline", never as a pass), with `"fail"` it fails.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::check::{Check, CheckState};
use super::{ThresholdDecision, ThresholdVerdict, TrialEvidence};
use crate::policy::threshold::{Margin, Threshold};
use crate::policy::{Arm, OnMissingBaseline, Policy};
use crate::report::{Report, TrialStatus};
use crate::stats::decide::{Change, DecidedBy};
use crate::stats::metric::Metric;
use crate::stats::runs::{ArmResult, MetricResult, Thresholds, compare_runs};
use crate::stats::spread;

/// The `trial_id` of an arm-level check: it judges all of the arm's trials at once.
pub const ARM_LEVEL: &str = "arm";

/// Why there is no baseline when none was given and nothing else said why.
pub const NOT_GIVEN: &str = "no baseline was given (--baseline or DRAINWATCH_BASELINE_DIR)";

/// What the baseline thresholds are judged against: a baseline run, or why there is none.
#[derive(Debug, Clone, Copy)]
pub enum BaselineInput<'a> {
    /// The baseline run.
    Run(&'a Baseline<'a>),
    /// None was given; why, as each baseline threshold says it ([`NOT_GIVEN`], or what the CI
    /// step that looked for one found: "no successful push run of workflow … on branch …").
    NotGiven(&'a str),
}

impl<'a> BaselineInput<'a> {
    /// The baseline run, if one was given.
    pub fn run(self) -> Option<&'a Baseline<'a>> {
        match self {
            Self::Run(b) => Some(b),
            Self::NotGiven(_) => None,
        }
    }
}

/// The baseline run the verdict is judged against.
#[derive(Debug, Clone, Copy)]
pub struct Baseline<'a> {
    /// The directory as the user gave it (`--baseline` or `DRAINWATCH_BASELINE_DIR`).
    pub dir: &'a str,
    /// Its arms' readable trial reports (`gate::runs::load_run`).
    pub arms: &'a BTreeMap<String, Vec<Report>>,
}

/// `verdict.json`'s `baseline`: which baseline run the verdict was judged against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineRef {
    /// The directory as given.
    pub dir: String,
}

/// What the baseline held for one arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BaselineStatus {
    /// The baseline has the arm, comparably: baseline thresholds were judged.
    Compared,
    /// No baseline was given.
    NotGiven,
    /// The baseline has no readable trial report of this arm.
    ArmMissing,
    /// The baseline ran the arm differently (trigger, protocol or flow counts).
    Incomparable,
    /// The baseline has the arm, but this run left no readable trial report of it.
    NoNewTrials,
}

/// An arm's `baseline` in `verdict.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmBaseline {
    /// Found and compared, or why not.
    pub status: BaselineStatus,
    /// The baseline's readable trials of this arm; null when it has none.
    pub trials: Option<usize>,
    /// Why it was not compared, in words; null when compared.
    pub reason: Option<String>,
}

/// One arm's side of the comparison, worked out once for all its baseline thresholds.
pub(super) struct Against {
    record: ArmBaseline,
    mode: OnMissingBaseline,
    new: Vec<Report>,
    base: Vec<Report>,
    /// The compare decision per metric, when compared.
    metrics: Vec<MetricResult>,
}

impl Against {
    /// The arm's baseline, or `None` when the arm has no baseline threshold and no baseline
    /// was given (nothing to record).
    pub(super) fn new(
        policy: &Policy,
        arm: &Arm,
        trials: &[TrialEvidence],
        input: BaselineInput<'_>,
    ) -> Option<Self> {
        let baseline = input.run();
        if baseline.is_none() && !arm.thresholds.iter().any(Threshold::against_baseline) {
            return None;
        }
        // Completed trials only: an aborted or not-terminated trial is no sample of the arm.
        let new: Vec<Report> = trials
            .iter()
            .filter_map(|t| t.report.clone())
            .filter(|r| r.trial.status == TrialStatus::Completed)
            .collect();
        let base: Vec<Report> = baseline
            .and_then(|b| b.arms.get(&arm.name))
            .cloned()
            .unwrap_or_default();
        let mut metrics = Vec::new();
        let missing = |status, reason: String| ArmBaseline {
            status,
            trials: (!base.is_empty()).then_some(base.len()),
            reason: Some(reason),
        };
        let record = match input {
            BaselineInput::NotGiven(why) => missing(BaselineStatus::NotGiven, why.into()),
            BaselineInput::Run(b) if base.is_empty() => missing(
                BaselineStatus::ArmMissing,
                format!(
                    "the baseline {} has no readable trial report of arm {:?}",
                    b.dir, arm.name
                ),
            ),
            BaselineInput::Run(_) if new.is_empty() => missing(
                BaselineStatus::NoNewTrials,
                "this run left no readable trial report of the arm".into(),
            ),
            BaselineInput::Run(_) => {
                let one = |rs: &[Report]| BTreeMap::from([(arm.name.clone(), rs.to_vec())]);
                let cmp = compare_runs(&one(&base), &one(&new), &Thresholds::default());
                match cmp.into_iter().next().map(|c| c.result) {
                    Some(ArmResult::Compared { metrics: m, .. }) => {
                        metrics = m;
                        ArmBaseline {
                            status: BaselineStatus::Compared,
                            trials: Some(base.len()),
                            reason: None,
                        }
                    }
                    Some(ArmResult::Incomparable { reason }) => missing(
                        BaselineStatus::Incomparable,
                        format!("the baseline ran the arm differently: {reason}"),
                    ),
                    // Both sides are non-empty, so compare_runs compares or refuses the pair.
                    _ => missing(
                        BaselineStatus::Incomparable,
                        "the pair could not be compared".into(),
                    ),
                }
            }
        };
        Some(Self {
            record,
            mode: arm
                .on_missing_baseline
                .unwrap_or(policy.on_missing_baseline),
            new,
            base,
            metrics,
        })
    }

    /// What the verdict records for the arm.
    pub(super) fn record(&self) -> ArmBaseline {
        self.record.clone()
    }

    /// The verdict of `t` when it is a baseline threshold, `None` for the per-trial ones.
    pub(super) fn judge(&self, t: &Threshold) -> Option<ThresholdVerdict> {
        let check = match t {
            Threshold::Baseline { metric, margin } => self.median(t, *metric, *margin),
            Threshold::NoRegression => self.no_regression(),
            _ => return None,
        };
        let verdict = match check.state {
            CheckState::Held => ThresholdDecision::Pass,
            CheckState::NoBaseline if self.mode == OnMissingBaseline::Warn => {
                ThresholdDecision::NotJudged
            }
            CheckState::NoBaseline | CheckState::Missed | CheckState::NotMeasured => {
                ThresholdDecision::Fail
            }
        };
        Some(ThresholdVerdict {
            name: t.to_string(),
            verdict,
            checks: vec![check],
            level: Some(super::Level::Arm),
            held: None,
            of: None,
            flaky: Some(false),
        })
    }

    fn missing_reason(&self) -> Option<&str> {
        match self.record.status {
            BaselineStatus::Compared => None,
            _ => Some(self.record.reason.as_deref().unwrap_or("no baseline")),
        }
    }

    fn median(&self, t: &Threshold, metric: Metric, margin: Margin) -> Check {
        let values =
            |rs: &[Report]| -> Vec<f64> { rs.iter().filter_map(|r| metric.of(r)).collect() };
        let Some(new) = spread(&values(&self.new)) else {
            return not_measured(format!(
                "{} was not measured in any of the {} new trial(s), so \"{t}\" cannot be shown",
                metric.name(),
                self.new.len()
            ));
        };
        if let Some(why) = self.missing_reason() {
            return no_baseline(why);
        }
        let Some(base) = spread(&values(&self.base)) else {
            return no_baseline(&format!(
                "{} was not measured in any of the {} baseline trial(s)",
                metric.name(),
                self.base.len()
            ));
        };
        let bound = margin.bound(base.median);
        let unit = metric.unit();
        let measured = format!(
            "median {} {} over {} trial(s); baseline median {} over {} trial(s), so at most {}",
            metric.name(),
            unit.show(new.median),
            new.n,
            unit.show(base.median),
            base.n,
            unit.show(bound)
        );
        decide(
            new.median <= bound,
            measured,
            &format!("the threshold is \"{t}\""),
        )
    }

    fn no_regression(&self) -> Check {
        if self.new.is_empty() {
            return not_measured("this run left no readable trial report of the arm".into());
        }
        if let Some(why) = self.missing_reason() {
            return no_baseline(why);
        }
        let both: Vec<&MetricResult> = self
            .metrics
            .iter()
            .filter(|m| m.comparison.change != Change::NotMeasured)
            .collect();
        if both.is_empty() {
            return not_measured("no metric was measured on both sides".into());
        }
        let of = |c: Change| -> Vec<String> {
            both.iter()
                .filter(|m| m.comparison.change == c)
                .map(|m| describe(m))
                .collect()
        };
        let (regressed, improved) = (of(Change::Regressed), of(Change::Improved));
        // A regression shown is a miss whatever else; otherwise a metric the rules could not
        // decide is no "unchanged": with too few trials a
        // regression cannot be excluded. A failure count that is 0 in every new trial cannot
        // have regressed, whatever n.
        let undecided: Vec<String> = both
            .iter()
            .filter(|m| {
                matches!(
                    m.comparison.decided_by,
                    DecidedBy::TooFewTrials | DecidedBy::TooManyTrials
                ) && !(m.metric.counts_failures() && m.comparison.new.is_some_and(|s| s.max == 0.0))
            })
            .map(|m| describe(m))
            .collect();
        if regressed.is_empty() && !undecided.is_empty() {
            return not_measured(format!(
                "{} new against {} baseline trial(s) cannot decide {} (a regression cannot be excluded with so few trials: raise repeat on both sides, 4 trials each at least at alpha 0.05)",
                self.new.len(),
                self.base.len(),
                undecided.join(", ")
            ));
        }
        let mut measured = format!(
            "{} new against {} baseline trial(s), {} metric(s) measured on both sides",
            self.new.len(),
            self.base.len(),
            both.len()
        );
        if regressed.is_empty() {
            measured.push_str(": no regression");
        } else {
            measured.push_str(&format!(": regressed {}", regressed.join(", ")));
        }
        if !improved.is_empty() {
            measured.push_str(&format!("; improved {}", improved.join(", ")));
        }
        decide(
            regressed.is_empty(),
            measured,
            "the threshold is \"no-regression\"",
        )
    }
}

/// `tcp-severed 0 → 3 (every-trial-against-none)`: the medians and the rule that decided.
fn describe(m: &MetricResult) -> String {
    let unit = m.metric.unit();
    let med = |s: Option<crate::stats::Spread>| {
        s.map_or_else(|| "-".to_string(), |s| unit.show(s.median))
    };
    let by = serde_json::to_value(m.comparison.decided_by)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    format!(
        "{} {} → {} ({by})",
        m.metric,
        med(m.comparison.base),
        med(m.comparison.new)
    )
}

fn decide(ok: bool, measured: String, rule: &str) -> Check {
    let message = if ok {
        measured.clone()
    } else {
        format!("{measured}; {rule}")
    };
    Check {
        trial_id: ARM_LEVEL.into(),
        state: if ok {
            CheckState::Held
        } else {
            CheckState::Missed
        },
        measured: Some(measured),
        value: None,
        of: None,
        message,
    }
}

fn not_measured(why: String) -> Check {
    Check {
        trial_id: ARM_LEVEL.into(),
        state: CheckState::NotMeasured,
        measured: None,
        value: None,
        of: None,
        message: format!("not measured: {why}"),
    }
}

fn no_baseline(why: &str) -> Check {
    Check {
        trial_id: ARM_LEVEL.into(),
        state: CheckState::NoBaseline,
        measured: None,
        value: None,
        of: None,
        message: format!("no baseline: {why}"),
    }
}

#[cfg(test)]
mod tests;
