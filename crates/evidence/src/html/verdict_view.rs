//! The verdict on top of a policy run's page: the decision, then per arm each threshold with
//! its per-trial checks.

use std::fmt::Write;

use super::tables::table;
use super::{esc, name_of};
use crate::verdict::Verdict;

/// A decision's word (`pass`, `fail`, or a threshold's `not-judged`), styled by its class.
fn decision(word: &str) -> String {
    format!("<span class=\"decision-{word}\">{word}</span>")
}

/// The verdict section.
pub(super) fn section(v: &Verdict) -> String {
    let thresholds: usize = v.arms.iter().map(|a| a.thresholds.len()).sum();
    let missed: usize = v
        .arms
        .iter()
        .flat_map(|a| &a.thresholds)
        .filter(|t| t.verdict.fails())
        .count();
    let mut o = format!(
        "<div class=\"verdict {}\" data-verdict=\"{}\"><p><b>Verdict: {}</b> — policy {}: {} of {} thresholds missed in {} arm{}{}.</p>",
        v.verdict.as_str(),
        v.verdict.as_str(),
        decision(v.verdict.as_str()),
        esc(&v.policy),
        missed,
        thresholds,
        v.arms.len(),
        if v.arms.len() == 1 { "" } else { "s" },
        if v.flaky == Some(true) {
            " (flaky: a pass needed a retry)"
        } else {
            ""
        }
    );
    if let Some(d) = &v.description {
        let _ = write!(o, "<p>{}</p>", esc(d));
    }
    o.push_str("</div>\n");
    for arm in &v.arms {
        let _ = writeln!(
            o,
            "<h3>Arm {}: {}</h3>",
            esc(&arm.name),
            decision(arm.verdict.as_str())
        );
        if let Some(d) = &arm.description {
            let _ = writeln!(o, "<p>{}</p>", esc(d));
        }
        let rows: Vec<Vec<String>> = arm
            .thresholds
            .iter()
            .map(|t| {
                let held = match (t.held, t.of) {
                    (Some(h), Some(of)) => format!("{h} of {of}"),
                    _ => "–".into(),
                };
                let checks: Vec<String> = t
                    .checks
                    .iter()
                    .map(|c| {
                        format!(
                            "<span data-state=\"{}\">{}</span>",
                            esc(&name_of(&c.state)),
                            esc(&c.message)
                        )
                    })
                    .collect();
                vec![
                    esc(&t.name),
                    decision(t.verdict.as_str()),
                    held,
                    checks.join("<br>"),
                ]
            })
            .collect();
        o.push_str(&table(&["threshold", "verdict", "held", "checks"], &rows));
    }
    o
}
