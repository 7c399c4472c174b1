//! `report.html`: one self-contained page per run directory (issue 17, item 3), a pure function
//! of the reports (and, for a policy run, the verdict) in, a `String` out.
//!
//! Self-contained means openable from a file with no network: inline CSS, inline SVG, no
//! script at all, no font or image from anywhere, and a Content-Security-Policy that forbids
//! every load (`default-src 'none'`), so a browser refuses anything a future change might add.
//! Every string that came from a report (pod names, details, policy sentences) is escaped by
//! [`esc`], which is the only way text reaches the page.
//!
//! The picture follows the report's honesty rules: absent values are written "not measured",
//! never 0; times mapped from another clock with a bound say so ("±N ms", a shaded band).
//!
//! Stable hooks for tests and readers: `svg.timeline`, `g.lane` (`data-kind` pod / unattributed
//! / flow / conn / dials / group, `data-pod`, `data-flow`), `g.marker` (`data-event`,
//! `data-t-ms`, `data-pod` on a pod lane's own events), `.fail` (`data-mechanism` or
//! `data-outcome`, `data-t-ms`), `.terminal` (a probe flow's end).

mod attach_tables;
mod chart;
mod clocks;
mod ingress;
mod lanes;
mod legend;
mod shell;
mod tables;
#[cfg(test)]
mod tests;
mod timeline;
mod verdict_view;

use std::fmt::Write;

use super::findings::findings;
use super::report::{Report, TrialKind};
use super::verdict::Verdict;

/// Flows drawn as one lane each; beyond it, flows are drawn grouped by outcome and mechanism.
pub const FLOW_LANE_CAP: usize = 40;

/// The file name written in every run directory.
pub const HTML_FILE: &str = "report.html";

/// One trial of a run page: where it sits (arm, trial id) and its report when one was read.
#[derive(Debug, Clone, Copy)]
pub struct PageTrial<'a> {
    /// The policy arm, when the run has arms.
    pub arm: Option<&'a str>,
    /// `trial-NNN`, `trial-NNN-retry-R`, or the report's own id.
    pub id: &'a str,
    /// Its report; `None` when the trial left none (or it did not parse).
    pub report: Option<&'a Report>,
}

/// The page of a one-trial run directory.
pub fn trial_page(report: &Report) -> String {
    run_page(
        None,
        &[PageTrial {
            arm: None,
            id: &report.trial.id,
            report: Some(report),
        }],
    )
}

/// The page of a run directory: the verdict on top (policy runs), then one section per trial
/// (findings, timeline, tables), then the environment (the same for every trial of a run).
pub fn run_page(verdict: Option<&Verdict>, trials: &[PageTrial<'_>]) -> String {
    let mut body = String::new();
    let title = match (verdict, trials) {
        (Some(v), _) => format!("drainwatch: {} ({})", v.verdict.as_str(), v.policy),
        (None, [one]) => format!("drainwatch: {}", one.id),
        (None, many) => format!("drainwatch: {} trials", many.len()),
    };
    let _ = writeln!(body, "<h1>{}</h1>", esc(&title));
    if let Some(first) = trials.iter().find_map(|t| t.report) {
        let _ = writeln!(
            body,
            "<p class=\"meta\">drainwatch {} ({}) · schema {}</p>",
            esc(&first.drainwatch_version),
            esc(&first.git_commit),
            esc(&first.schema_version)
        );
    }
    if let Some(v) = verdict {
        body.push_str(&verdict_view::section(v));
    }
    if trials.len() > 1 {
        body.push_str(&contents(trials));
    }
    for t in trials {
        body.push_str(&trial_section(t, trials.len() > 1));
    }
    if let Some(first) = trials.iter().find_map(|t| t.report) {
        body.push_str(&tables::environment(&first.environment));
    }
    shell::page(&title, &body)
}

/// The anchor of a trial's section.
fn anchor(t: &PageTrial<'_>) -> String {
    match t.arm {
        Some(arm) => format!("trial-{}-{}", slug(arm), slug(t.id)),
        None => format!("trial-{}", slug(t.id)),
    }
}

/// Letters, digits and `-` only: safe in an id and a fragment without escaping.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn heading(t: &PageTrial<'_>) -> String {
    match t.arm {
        Some(arm) => format!("{arm} / {}", t.id),
        None => t.id.to_string(),
    }
}

fn contents(trials: &[PageTrial<'_>]) -> String {
    let mut o = String::from("<nav><h2>Trials</h2><ul>\n");
    for t in trials {
        let what = t.report.map_or_else(
            || "no report".to_string(),
            |r| {
                let n = findings(r).len();
                format!(
                    "{}, {n} finding{}",
                    r.trial.status.as_str(),
                    if n == 1 { "" } else { "s" }
                )
            },
        );
        let _ = writeln!(
            o,
            "<li><a href=\"#{}\">{}</a> ({})</li>",
            anchor(t),
            esc(&heading(t)),
            esc(&what)
        );
    }
    o.push_str("</ul></nav>\n");
    o
}

fn trial_section(t: &PageTrial<'_>, many: bool) -> String {
    let mut o = format!("<section class=\"trial\" id=\"{}\">\n", anchor(t));
    let h = if many { "h2" } else { "h2 class=\"only\"" };
    let _ = writeln!(o, "<{h}>Trial {}</h2>", esc(&heading(t)));
    let Some(r) = t.report else {
        o.push_str("<p class=\"nm\">This trial left no readable report.json.</p>\n</section>\n");
        return o;
    };
    o.push_str(&tables::trial_header(r));
    o.push_str(&tables::findings(&findings(r)));
    // An attach trial shows what its clients measured before the picture, and none of the
    // probe's intervals (SIGTERM is not observable on a workload drainwatch did not deploy).
    let timeline = |o: &mut String| {
        o.push_str("<h3>Timeline</h3>\n");
        o.push_str(&timeline::svg(r));
        o.push_str(&legend::legend(r));
    };
    match r.trial.kind() {
        TrialKind::Attach => {
            match &r.trial.attach {
                Some(a) => o.push_str(&attach_tables::all(a)),
                None => o.push_str(
                    "<h3>Outcomes</h3>\n<p class=\"nm\">not measured: the clients recorded nothing.</p>\n",
                ),
            }
            timeline(&mut o);
        }
        TrialKind::Probe => {
            timeline(&mut o);
            o.push_str(&tables::intervals(r));
            o.push_str(&tables::probe(r));
        }
    }
    o.push_str(&tables::timeline_rows(r));
    o.push_str(&clocks::clocks(r));
    o.push_str("</section>\n");
    o
}

/// HTML-escapes text for element content and double- or single-quoted attributes.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// The HTML for an absent value.
const NOT_MEASURED: &str = "<span class=\"nm\">not measured</span>";

/// A time in ms, or "not measured".
fn ms(v: Option<i64>) -> String {
    v.map_or_else(|| NOT_MEASURED.to_string(), |t| format!("{t} ms"))
}

/// Any optional value, escaped, or "not measured".
fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| NOT_MEASURED.to_string(), |x| esc(&x.to_string()))
}

/// An optional text; absent (not "not measured": text fields are not measurements) as "–".
fn text(v: Option<&str>) -> String {
    v.map_or_else(|| "–".to_string(), esc)
}

/// The serde name of a value that serializes to a string (a closed enum); its JSON otherwise.
fn name_of<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}
