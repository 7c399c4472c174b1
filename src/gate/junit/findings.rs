//! Findings in `junit.xml`: a `<properties>` block per testsuite (junit-report writes none, so
//! it is inserted into the rendered document), one set of properties per finding of the arm's
//! trials, and the findings of a failed threshold's trials in its failure text.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::evidence::findings::{Finding, FindingId, Severity, of_report};
use crate::evidence::verdict::TrialEvidence;

/// Escapes text for an XML attribute value.
fn attr(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\n' | '\r' | '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// The distinct findings of `trials` (first occurrence) with the trials each came up in, most
/// severe first.
fn distinct(trials: &[TrialEvidence]) -> Vec<(Finding, Vec<&str>)> {
    let mut by: BTreeMap<FindingId, (Finding, Vec<&str>)> = BTreeMap::new();
    for t in trials {
        let Some(r) = &t.report else { continue };
        for f in of_report(r) {
            by.entry(f.id)
                .or_insert_with(|| (f.clone(), Vec::new()))
                .1
                .push(&t.id);
        }
    }
    let mut out: Vec<_> = by.into_values().collect();
    out.sort_by(|a, b| {
        b.0.severity
            .cmp(&a.0.severity)
            .then_with(|| a.0.id.as_str().cmp(b.0.id.as_str()))
    });
    out
}

/// The `<properties>` element of one arm's testsuite; empty when no trial has a finding.
pub(super) fn properties(trials: &[TrialEvidence]) -> String {
    let all = distinct(trials);
    if all.is_empty() {
        return String::new();
    }
    let mut o = String::from("<properties>");
    for (f, ids) in &all {
        let id = f.id.as_str();
        let mut prop = |k: &str, v: &str| {
            let _ = write!(
                o,
                "<property name=\"drainwatch.finding.{id}.{k}\" value=\"{}\"/>",
                attr(v)
            );
        };
        prop("severity", f.severity.as_str());
        prop("trials", &ids.join(","));
        prop("title", &f.title);
        prop("why", &f.why);
        if let Some(r) = &f.recommendation {
            prop("recommendation", &r.text);
            if let Some(d) = &r.derived {
                prop("value", &format!("{} {}", d.value, d.unit.as_str()));
                prop("rule", &d.rule);
            }
        }
    }
    o.push_str("</properties>");
    o
}

/// The findings of the trials `ids` worth a failure's text (warnings and failures), one line
/// each: "[severity] id (trial): title Change: text (value)".
pub(super) fn failure_lines(trials: &[TrialEvidence], ids: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for t in trials.iter().filter(|t| ids.contains(&t.id.as_str())) {
        let Some(r) = &t.report else { continue };
        for f in of_report(r)
            .into_iter()
            .filter(|f| f.severity >= Severity::Warning)
        {
            let mut line = format!("[{}] {} ({}): {}", f.severity, f.id, t.id, f.title);
            if let Some(rec) = &f.recommendation {
                let _ = write!(line, " Change: {}", rec.text);
                if let Some(d) = &rec.derived {
                    let _ = write!(line, " ({} {}: {})", d.value, d.unit.as_str(), d.rule);
                }
            }
            out.push(line);
        }
    }
    out
}

/// Inserts `props[i]` as the first child of the i-th `<testsuite>` of `doc`.
pub(super) fn inject(doc: &str, props: &[String]) -> String {
    let mut out = String::with_capacity(doc.len() + props.iter().map(String::len).sum::<usize>());
    let mut rest = doc;
    let mut i = 0;
    while let Some(at) = rest.find("<testsuite ") {
        let Some(close) = rest[at..].find('>').map(|c| at + c) else {
            break;
        };
        let p = props.get(i).map(String::as_str).unwrap_or_default();
        i += 1;
        let self_closing = rest[..close].ends_with('/');
        if p.is_empty() {
            out.push_str(&rest[..=close]);
        } else if self_closing {
            out.push_str(&rest[..close - 1]);
            let _ = write!(out, ">{p}</testsuite>");
        } else {
            out.push_str(&rest[..=close]);
            out.push_str(p);
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}
