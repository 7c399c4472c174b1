//! The "FINDINGS" block printed after the text table: a pure function of the findings.

use std::fmt::Write;

use super::{EvidenceRef, Finding};
use crate::format::wrap;
use crate::report::{Report, TrialStatus};

/// References shown per finding; the rest are counted.
const SHOWN_REFS: usize = 8;

/// Text width of wrapped sentences.
const WIDTH: usize = 74;

fn reference(r: &EvidenceRef) -> String {
    match r {
        EvidenceRef::TimelineRow { index, event } => {
            format!("timeline[{index}] {}", event.as_str())
        }
        EvidenceRef::Flow { id } => format!("flow {id}"),
        EvidenceRef::AttachFailure { index } => format!("attach.failures[{index}]"),
        EvidenceRef::Pod { pod } => format!("pod {pod}"),
        EvidenceRef::Field { path } => path.clone(),
    }
}

/// Renders the findings block; `empty` is the line shown when there is none.
pub fn render(findings: &[Finding], empty: &str) -> String {
    let mut o = String::from("FINDINGS\n");
    if findings.is_empty() {
        let _ = writeln!(o, "  {empty}");
        return o;
    }
    for f in findings {
        let _ = writeln!(o, "  [{}] {}", f.severity, f.id);
        o.push_str(&wrap(&f.title, WIDTH, "    "));
        o.push_str(&wrap(&format!("why: {}", f.why), WIDTH, "    "));
        if let Some(r) = &f.recommendation {
            let mut text = format!("change: {}", r.text);
            if let Some(d) = &r.derived {
                let _ = write!(
                    text,
                    " Value: {} {}. Rule: {}.",
                    d.value,
                    d.unit.as_str(),
                    d.rule
                );
            }
            o.push_str(&wrap(&text, WIDTH, "    "));
        }
        let mut refs: Vec<String> = f.evidence.iter().take(SHOWN_REFS).map(reference).collect();
        if f.evidence.len() > SHOWN_REFS {
            refs.push(format!("and {} more", f.evidence.len() - SHOWN_REFS));
        }
        o.push_str(&wrap(
            &format!("evidence: {}", refs.join(", ")),
            WIDTH,
            "    ",
        ));
    }
    o
}

/// The findings block of one report, as printed after its table.
pub fn block(report: &Report) -> String {
    let n = super::failures_counted(report);
    let empty = if n > 0 {
        format!("no finding explains the {n} failures counted above yet")
    } else if report.trial.status != TrialStatus::Completed {
        format!("no finding: the trial is {}", report.trial.status.as_str())
    } else {
        "no finding: the trial measured no flow, request or connection".to_string()
    };
    render(&super::findings(report), &empty)
}
