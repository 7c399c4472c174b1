//! The "Findings" section of the summary and the PR comment: the findings of every arm's
//! trials, most severe first, one line per (arm, finding id) with the number of trials it
//! came up in, so five identical trials make one line and the comment stays within its bound.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{Detail, esc};
use crate::findings::{Finding, FindingId, Severity, of_report};
use crate::verdict::{TrialEvidence, Verdict};

/// Findings shown in full; the rest are counted.
const SHOWN: usize = 6;

fn mark(s: Severity) -> &'static str {
    match s {
        Severity::Failure => "❌",
        Severity::Warning => "⚠️",
        Severity::Info => "ℹ️",
    }
}

/// One line of the section: a finding as first seen in an arm, and in how many of its trials.
struct Line<'a> {
    arm: &'a str,
    arm_index: usize,
    finding: Finding,
    trial: String,
    trials: usize,
    of: usize,
}

fn lines<'a>(v: &'a Verdict, ev: &BTreeMap<String, Vec<TrialEvidence>>) -> Vec<Line<'a>> {
    let mut out: Vec<Line> = Vec::new();
    for (arm_index, a) in v.arms.iter().enumerate() {
        let trials = ev.get(&a.name).map(Vec::as_slice).unwrap_or_default();
        let with: Vec<(&TrialEvidence, Vec<Finding>)> = trials
            .iter()
            .filter_map(|t| t.report.as_ref().map(|r| (t, of_report(r))))
            .collect();
        let of = with.len();
        let mut seen: BTreeMap<FindingId, usize> = BTreeMap::new();
        for (t, fs) in &with {
            for f in fs {
                match seen.get(&f.id) {
                    Some(&i) => {
                        if let Some(l) = out.get_mut(i) {
                            l.trials += 1;
                        }
                    }
                    None => {
                        seen.insert(f.id, out.len());
                        out.push(Line {
                            arm: &a.name,
                            arm_index,
                            finding: f.clone(),
                            trial: t.id.clone(),
                            trials: 1,
                            of,
                        });
                    }
                }
            }
        }
    }
    out.sort_by(|x, y| {
        y.finding
            .severity
            .cmp(&x.finding.severity)
            .then(x.arm_index.cmp(&y.arm_index))
            .then_with(|| x.finding.id.as_str().cmp(y.finding.id.as_str()))
    });
    out
}

/// Appends the section; nothing when no trial has a report.
pub(super) fn section(
    o: &mut String,
    v: &Verdict,
    ev: &BTreeMap<String, Vec<TrialEvidence>>,
    detail: Detail,
) {
    let all = lines(v, ev);
    if all.is_empty() {
        return;
    }
    o.push_str("\n### Findings\n\n");
    let shown = if detail == Detail::Minimal { 3 } else { SHOWN };
    for l in all.iter().take(shown) {
        let f = &l.finding;
        let _ = writeln!(
            o,
            "- {} **{}** `{}` · `{}` ({} of {} trials; {}) — {}",
            mark(f.severity),
            f.severity,
            f.id,
            l.arm,
            l.trials,
            l.of,
            l.trial,
            esc(&f.title)
        );
        if detail == Detail::Minimal {
            continue;
        }
        let _ = writeln!(o, "  - why: {}", esc(&f.why));
        if let Some(r) = &f.recommendation {
            let mut text = format!("  - change: {}", esc(&r.text));
            if let Some(d) = &r.derived {
                let _ = write!(
                    text,
                    " **{} {}** (rule: {})",
                    d.value,
                    d.unit.as_str(),
                    esc(&d.rule)
                );
            }
            let _ = writeln!(o, "{text}");
        }
    }
    if all.len() > shown {
        let _ = writeln!(
            o,
            "- … {} more findings: each trial's `report.json` (`findings`)",
            all.len() - shown
        );
    }
}
