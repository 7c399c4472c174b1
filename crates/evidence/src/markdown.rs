//! The Markdown summary of a policy run: verdict line, arms × outcomes, the findings (most
//! severe first), the thresholds missed, a Mermaid timeline per arm, and where the artifacts are. The same text is `summary.md`, the
//! job summary and the PR comment, so it must fit GitHub's limits: [`render`] drops detail
//! (timelines first, then the list of held thresholds) until it fits `max_chars`.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::attach::{self, AttachReport};
use super::mermaid;
use super::report::{Counts, Report, TrialKind};
use super::verdict::{ArmVerdict, CheckState, Decision, ThresholdDecision, TrialEvidence, Verdict};

mod baseline;
pub mod compare;
mod findings;
mod flaky;
mod no_verdict;
pub use no_verdict::{FailedStep, NoVerdict, render_tool_failure};

/// GitHub refuses comment bodies over 65 536 characters.
pub const COMMENT_MAX_CHARS: usize = 65_000;
/// GitHub accepts up to 1 MiB of job summary per step.
pub const STEP_SUMMARY_MAX_CHARS: usize = 1_000_000;

/// Where the reader finds the files behind the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Links {
    /// The uploaded artifact (download page), when known.
    pub artifact_url: Option<String>,
    /// The artifact's name, when uploaded.
    pub artifact_name: Option<String>,
    /// The workflow run, when known.
    pub run_url: Option<String>,
    /// Link the files relatively (true inside the report directory itself).
    pub relative_files: bool,
    /// Which use of the action this is (`drainwatch ci key`: job and matrix leg), when known.
    pub key: Option<String>,
    /// Leave the API server's URL out: the text lands where everyone who can read the pull
    /// request sees it (on a public repository, the world), and a cluster's endpoint is not
    /// theirs to know. The context name still says which cluster; the job summary has both.
    pub hide_server: bool,
    /// The CI run the baseline was fetched from, when it was: the baseline line links it
    /// instead of naming the runner's download directory.
    pub baseline_run: Option<super::stats::report::BaseRun>,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Detail {
    Minimal,
    NoTimelines,
    Full,
}

fn mark(d: Decision) -> &'static str {
    match d {
        Decision::Pass => "✅ pass",
        Decision::Fail => "❌ fail",
    }
}

fn threshold_mark(d: ThresholdDecision) -> &'static str {
    match d {
        ThresholdDecision::Pass => "✅ pass",
        ThresholdDecision::NotJudged => "⚠️ not judged",
        ThresholdDecision::Fail => "❌ fail",
    }
}

fn dsrtsn(c: &Counts) -> String {
    if c.total == 0 {
        return "–".into();
    }
    format!(
        "{} / {} / {} / {} / {}",
        c.drained, c.severed, c.read_timeout, c.survived_window, c.not_measured
    )
}

/// Markdown-escapes text from reports and policies for table cells and list items.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' | '*' | '_' | '`' | '<' | '>' | '[' | ']' | '\\' => {
                o.push('\\');
                o.push(c);
            }
            '\n' | '\r' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

fn arm_counts(trials: &[TrialEvidence]) -> (Counts, Counts, u32) {
    let (mut tcp, mut udp, mut rehomed) = (Counts::default(), Counts::default(), 0);
    for r in trials.iter().filter_map(|t| t.report.as_ref()) {
        for f in &r.trial.flows {
            match f.proto {
                super::flow::Proto::Tcp => tcp.add(f.outcome),
                super::flow::Proto::Udp => udp.add(f.outcome),
            }
            if f.rehomed.is_some() {
                rehomed += 1;
            }
        }
    }
    (tcp, udp, rehomed)
}

fn headline(v: &Verdict) -> String {
    let arms = v.arms.len();
    let thresholds: usize = v.arms.iter().map(|a| a.thresholds.len()).sum();
    let failed_arms = v
        .arms
        .iter()
        .filter(|a| a.verdict == Decision::Fail)
        .count();
    let missed: usize = v
        .arms
        .iter()
        .flat_map(|a| &a.thresholds)
        .filter(|t| t.verdict.fails())
        .count();
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    let unjudged = baseline::unjudged(v);
    let without = baseline::note(unjudged);
    match v.verdict {
        Decision::Pass => format!(
            "## ✅ drainwatch: pass — {} held in {}{without}{}",
            plural(thresholds - unjudged, "threshold"),
            plural(arms, "arm"),
            flaky::headline_note(v)
        ),
        Decision::Fail => format!(
            "## ❌ drainwatch: fail — {} of {} missed in {} of {}{without}",
            missed,
            plural(thresholds, "threshold"),
            failed_arms,
            plural(arms, "arm")
        ),
    }
}

fn environment_line(first: Option<&Report>, hide_server: bool) -> Option<String> {
    let e = &first?.environment;
    let mut parts = vec![format!("platform {}", e.platform)];
    if let Some(c) = &e.cluster {
        // The API server and context as the run resolved them: which cluster was gated.
        parts.push(match (&c.context, hide_server) {
            (Some(ctx), false) => format!("cluster {} (context {ctx})", c.server),
            (None, false) => format!("cluster {} (in-cluster service account)", c.server),
            (Some(ctx), true) => format!("cluster context {ctx}"),
            (None, true) => "cluster: in-cluster service account".to_string(),
        });
    }
    if let Some(k) = &e.kubernetes_version {
        parts.push(format!("Kubernetes {k}"));
    }
    if let Some(n) = e.node_count {
        parts.push(format!("{n} nodes"));
    }
    if let Some(m) = &e.kube_proxy_mode {
        parts.push(format!("kube-proxy {m}"));
    }
    if let Some(c) = &e.cni {
        parts.push(format!("CNI {c}"));
    }
    parts.push(format!(
        "drainwatch {} ({})",
        e.drainwatch_version, e.git_commit
    ));
    Some(esc(&parts.join(" · ")))
}

/// Whether every trial with a report is an attach trial (and there is one): the arms table then
/// leaves out the probe's columns, which would be dashes and "not measured" only.
fn attach_only(ev: &BTreeMap<String, Vec<TrialEvidence>>) -> bool {
    let mut kinds = ev
        .values()
        .flatten()
        .filter_map(|t| t.report.as_ref())
        .map(|r| r.trial.kind())
        .peekable();
    kinds.peek().is_some() && kinds.all(|k| k == TrialKind::Attach)
}

fn arms_table(o: &mut String, v: &Verdict, ev: &BTreeMap<String, Vec<TrialEvidence>>) {
    if attach_only(ev) {
        o.push_str("| arm | verdict | trials |\n|---|---|---:|\n");
        for a in &v.arms {
            let trials = ev.get(&a.name).map(Vec::as_slice).unwrap_or_default();
            let _ = writeln!(
                o,
                "| `{}` | {} | {} |",
                a.name,
                flaky::arm_mark(a),
                flaky::trials_cell(a, trials.len())
            );
        }
        return;
    }
    o.push_str("| arm | verdict | trials | TCP d / s / rt / sw / nm | UDP d / s / rt / sw / nm | UDP re-homed | SIGTERM → last flow end |\n");
    o.push_str("|---|---|---:|---:|---:|---:|---:|\n");
    for a in &v.arms {
        let trials = ev.get(&a.name).map(Vec::as_slice).unwrap_or_default();
        let (tcp, udp, rehomed) = arm_counts(trials);
        let last: Vec<String> = trials
            .iter()
            .map(|t| {
                t.report
                    .as_ref()
                    .and_then(|r| r.trial.summary.sigterm_to_last_flow_terminal_ms)
                    .map_or_else(|| "not measured".to_string(), |ms| format!("{ms} ms"))
            })
            .collect();
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            a.name,
            flaky::arm_mark(a),
            flaky::trials_cell(a, trials.len()),
            dsrtsn(&tcp),
            dsrtsn(&udp),
            if udp.total == 0 {
                "–".to_string()
            } else {
                rehomed.to_string()
            },
            if last.is_empty() {
                "–".to_string()
            } else {
                last.join(", ")
            }
        );
    }
    o.push_str("\n<sub>d / s / rt / sw / nm = drained-clean-close / severed / read-timeout / survived-observation-window / not-measured, summed over the arm's trials (every attempt, retried ones included); thresholds hold per trial.</sub>\n");
}

fn attach_table(v: &Verdict, ev: &BTreeMap<String, Vec<TrialEvidence>>) -> String {
    let arms: Vec<(String, Vec<&AttachReport>)> = v
        .arms
        .iter()
        .map(|a| {
            let reports = ev
                .get(&a.name)
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .filter_map(|t| t.report.as_ref()?.trial.attach.as_ref())
                .collect();
            (a.name.clone(), reports)
        })
        .collect();
    attach::render::markdown_table(&arms)
}

fn thresholds_section(o: &mut String, v: &Verdict, detail: Detail) {
    let missed = v.missed();
    if missed.is_empty() && baseline::unjudged(v) == 0 && flaky::all_clear(v) {
        o.push_str("\nEvery threshold held in every trial.\n");
    } else if missed.is_empty() {
        o.push_str("\nNo threshold was missed.\n");
    } else {
        // What missed and what could not be measured are said apart: a reader fixes the one
        // in the service and the other in the trial.
        for (state, heading) in [
            (CheckState::Missed, "Thresholds missed"),
            (
                CheckState::NotMeasured,
                "Not measured (each fails its threshold)",
            ),
            (
                CheckState::NoBaseline,
                "Without a baseline (each fails its threshold)",
            ),
        ] {
            let mut lines = Vec::new();
            for a in &v.arms {
                for t in a.thresholds.iter().filter(|t| t.verdict.fails()) {
                    for c in t.checks.iter().filter(|c| c.state == state) {
                        lines.push(format!(
                            "- **{}** · `{}` — {}",
                            a.name,
                            t.name,
                            esc(&c.message)
                        ));
                    }
                }
            }
            if !lines.is_empty() {
                let _ = write!(o, "\n### {heading}\n\n{}\n", lines.join("\n"));
            }
        }
    }
    baseline::section(o, v);
    flaky::section(o, v);
    if detail == Detail::Minimal {
        return;
    }
    o.push_str("\n<details><summary>All thresholds</summary>\n\n");
    o.push_str("| arm | threshold | result | measured |\n|---|---|---|---|\n");
    for a in &v.arms {
        for t in &a.thresholds {
            let measured: Vec<String> = t.checks.iter().map(|c| esc(&c.message)).collect();
            let _ = writeln!(
                o,
                "| `{}` | `{}` | {} | {} |",
                a.name,
                t.name,
                baseline::mark(t).map_or_else(|| flaky::threshold_mark(a, t), str::to_string),
                measured.join("<br>")
            );
        }
    }
    o.push_str("\n</details>\n");
}

/// The trial whose timeline is shown: the first that missed something, else the first.
fn shown_trial<'a>(a: &ArmVerdict, trials: &'a [TrialEvidence]) -> Option<&'a TrialEvidence> {
    let failing = a
        .thresholds
        .iter()
        .flat_map(|t| &t.checks)
        .find(|c| c.state != CheckState::Held)
        .map(|c| c.trial_id.as_str());
    let with_report = |t: &&TrialEvidence| t.report.is_some();
    failing
        .and_then(|id| trials.iter().filter(with_report).find(|t| t.id == id))
        .or_else(|| trials.iter().find(with_report))
}

fn timelines(o: &mut String, v: &Verdict, ev: &BTreeMap<String, Vec<TrialEvidence>>) {
    for a in &v.arms {
        let trials = ev.get(&a.name).map(Vec::as_slice).unwrap_or_default();
        let Some(t) = shown_trial(a, trials) else {
            continue;
        };
        let Some(r) = &t.report else { continue };
        let open = if a.verdict == Decision::Fail {
            " open"
        } else {
            ""
        };
        let more = mermaid::not_drawn(r)
            .map(|m| format!("\n<sub>{m}</sub>\n"))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "\n<details{open}><summary>Timeline: <code>{}</code> · {} (ms after the trigger)</summary>\n\n```mermaid\n{}```\n{more}\n</details>",
            a.name,
            t.id,
            mermaid::gantt(&format!("{} · {}", a.name, t.id), r)
        );
    }
}

fn artifacts(
    o: &mut String,
    v: &Verdict,
    ev: &BTreeMap<String, Vec<TrialEvidence>>,
    links: &Links,
) {
    o.push_str("\n### Artifacts\n\n");
    key_line(o, links);
    match (&links.artifact_url, &links.artifact_name) {
        (Some(url), name) => {
            let _ = writeln!(
                o,
                "- [{}]({url}): `report.html` (findings and a timeline per trial; opens offline in a browser), every report, event log, `junit.xml` and `verdict.json`",
                esc(name.as_deref().unwrap_or("report artifact"))
            );
        }
        (None, Some(name)) => {
            let _ = writeln!(
                o,
                "- artifact `{}`: `report.html` (findings and a timeline per trial; opens offline in a browser), every report, event log, `junit.xml` and `verdict.json`",
                esc(name)
            );
        }
        (None, None) => {}
    }
    if let Some(run) = &links.run_url {
        let _ = writeln!(o, "- [workflow run]({run})");
    }
    let file = |p: &str| {
        if links.relative_files {
            format!("[`{p}`]({p})")
        } else {
            format!("`{p}`")
        }
    };
    let _ = writeln!(
        o,
        "- {} · {} · {} · {}",
        file("report.html"),
        file("verdict.json"),
        file("junit.xml"),
        file("summary.md")
    );
    for a in &v.arms {
        let trials = ev.get(&a.name).map(Vec::as_slice).unwrap_or_default();
        let reports: Vec<String> = trials
            .iter()
            .filter(|t| t.report.is_some())
            .map(|t| file(&t.report_path))
            .collect();
        if !reports.is_empty() {
            let _ = writeln!(o, "- `{}`: {}", a.name, reports.join(" · "));
        }
    }
}

fn render_at(
    v: &Verdict,
    ev: &BTreeMap<String, Vec<TrialEvidence>>,
    links: &Links,
    detail: Detail,
) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{}\n", headline(v));
    let first = v
        .arms
        .iter()
        .filter_map(|a| ev.get(&a.name))
        .flatten()
        .find_map(|t| t.report.as_ref());
    let mut about = Vec::new();
    if let Some(d) = &v.description {
        about.push(esc(d));
    }
    about.push(format!("policy `{}`", v.policy.replace('`', "'")));
    if let Some(env) = environment_line(first, links.hide_server) {
        about.push(env);
    }
    let _ = writeln!(o, "{}\n", about.join(" · "));
    if let Some(b) = baseline::line(v, links.baseline_run.as_ref()) {
        let _ = writeln!(o, "{b}\n");
    }
    arms_table(&mut o, v, ev);
    o.push_str(&attach_table(v, ev));
    findings::section(&mut o, v, ev, detail);
    thresholds_section(&mut o, v, detail);
    if detail == Detail::Full {
        timelines(&mut o, v, ev);
    }
    artifacts(&mut o, v, ev, links);
    o
}

/// The summary, with as much detail as fits in `max_chars`.
pub fn render(
    v: &Verdict,
    evidence: &BTreeMap<String, Vec<TrialEvidence>>,
    links: &Links,
    max_chars: usize,
) -> String {
    for detail in [Detail::Full, Detail::NoTimelines, Detail::Minimal] {
        let s = render_at(v, evidence, links, detail);
        if s.chars().count() <= max_chars {
            return s;
        }
    }
    let s = render_at(v, evidence, links, Detail::Minimal);
    let note = "\n\n…(truncated to fit; the full summary is summary.md in the artifact)\n";
    let keep = max_chars.saturating_sub(note.chars().count());
    let mut out: String = s.chars().take(keep).collect();
    out.push_str(note);
    out
}

/// The key line of the artifacts list: which use of the action (job, matrix leg) this is.
fn key_line(o: &mut String, links: &Links) {
    if let Some(key) = &links.key {
        let _ = writeln!(
            o,
            "- key `{key}`: this job and matrix leg (the comment's marker, the default artifact name)"
        );
    }
}

#[cfg(test)]
mod tests;
