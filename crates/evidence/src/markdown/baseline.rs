//! What the summary (and so the job summary and the PR comment) says about the baseline: which
//! run it was and what it held per arm, and every baseline threshold that found no baseline —
//! shown whether it passed (`on-missing-baseline = "warn"`) or failed (`"fail"`), never silent.

use std::fmt::Write;

use super::esc;
use crate::stats::report::BaseRun;
use crate::verdict::{ArmBaseline, BaselineStatus, ThresholdDecision, ThresholdVerdict, Verdict};

/// The result cell of the all-thresholds table, when the threshold found no baseline.
pub(super) fn mark(t: &ThresholdVerdict) -> Option<&'static str> {
    t.no_baseline().is_some().then_some(match t.verdict {
        ThresholdDecision::Fail => "❌ no baseline",
        ThresholdDecision::NotJudged | ThresholdDecision::Pass => "⚠️ no baseline",
    })
}

/// How many thresholds were not judged for want of a baseline.
pub(super) fn unjudged(v: &Verdict) -> usize {
    v.not_judged().count()
}

/// `, 5 without a baseline` for the headline, when any.
pub(super) fn note(unjudged: usize) -> String {
    if unjudged == 0 {
        String::new()
    } else {
        format!(", {unjudged} without a baseline")
    }
}

fn status(b: &ArmBaseline) -> String {
    let trials = b
        .trials
        .map(|n| format!(" ({n} trial{})", if n == 1 { "" } else { "s" }))
        .unwrap_or_default();
    let word = match b.status {
        BaselineStatus::Compared => "compared",
        BaselineStatus::NotGiven => "no baseline given",
        BaselineStatus::ArmMissing => "not in the baseline",
        BaselineStatus::Incomparable => "not comparable",
        BaselineStatus::NoNewTrials => "no trial of this run",
    };
    format!("{word}{trials}")
}

/// `Baseline `DIR`: `drain` compared (3 trials) · `rollout` not in the baseline`, when a
/// baseline was given or an arm has a baseline threshold; `Baseline [run 7](URL): …` when it
/// was fetched from that CI run (its download directory says nothing to a reader).
pub(super) fn line(v: &Verdict, from: Option<&BaseRun>) -> Option<String> {
    let arms: Vec<String> = v
        .arms
        .iter()
        .filter_map(|a| {
            a.baseline
                .as_ref()
                .map(|b| format!("`{}` {}", a.name, status(b)))
        })
        .collect();
    if v.baseline.is_none() && arms.is_empty() {
        return None;
    }
    let dir = match (&v.baseline, from) {
        (None, _) => "none given".to_string(),
        (Some(_), Some(run)) => format!("[run {}]({})", run.id, run.url),
        (Some(b), None) => format!("`{}`", b.dir.replace('`', "'")),
    };
    Some(format!("Baseline {dir}: {}", arms.join(" · ")))
}

/// The thresholds that passed only because no baseline judged them.
pub(super) fn section(o: &mut String, v: &Verdict) {
    let lines: Vec<String> = v
        .not_judged()
        .map(|(a, t, c)| format!("- **{}** · `{}` — {}", a.name, t.name, esc(&c.message)))
        .collect();
    if lines.is_empty() {
        return;
    }
    o.push_str("\n### Thresholds without a baseline\n\n");
    o.push_str(
        "Not judged, and not failing (`on-missing-baseline = \"warn\"`; `\"fail\"` fails them):\n\n",
    );
    for l in lines {
        let _ = writeln!(o, "{l}");
    }
}
