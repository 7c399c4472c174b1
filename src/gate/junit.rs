//! `junit.xml` from a verdict: one testsuite per arm, one testcase per threshold. A failure's
//! message carries every failing trial's measured value and the threshold; the per-flow outcome
//! table of the arm's trials is the testsuite's system-out (and a failing testcase's, for
//! consumers that only show testcase output). A baseline threshold that found no baseline is a
//! `<skipped type="no-baseline" message="no baseline: …">` testcase under
//! `on-missing-baseline = "warn"` (it was not judged, and does not fail), a failure of type
//! `no-baseline` under `"fail"`.
//!
//! **Retries** (junit-report has no Surefire `flakyFailure`/`rerunFailure`): each attempt that
//! missed a threshold and was retried is its own testcase of the same name and classname, with a
//! `failure` of type `retried-attempt`, written *before* the threshold's final testcase, which
//! carries the verdict (a flaky pass says so in its `system-out`). This is the shape Gradle's
//! test-retry plugin writes and what mikepenz/action-junit-report's `check_retries` folds into
//! one retried (flaky) test; docs/ci.md says how each consumer shows it.
//!
//! **Findings** (`evidence::findings`): each testsuite carries `<properties>` named
//! `drainwatch.finding.<id>.<severity|trials|title|why|recommendation|value|rule>`, and a
//! failed threshold's failure text lists the warning and failure findings of its trials.
//!
//! Outside the core because junit-report stamps each testsuite with the current time when it
//! is created; the stamp is replaced by the trial's recorded start, so the file is a function of
//! the reports.

use std::collections::BTreeMap;

use junit_report::{
    Duration, OffsetDateTime, ReportBuilder, TestCaseBuilder, TestSuite, TestSuiteBuilder,
};
use time::format_description::well_known::Rfc3339;

use crate::evidence::attach;
use crate::evidence::format;
use crate::evidence::report::{Report, TrialKind};
use crate::evidence::table::{self, FlowColumn};
use crate::evidence::verdict::baseline::ARM_LEVEL;
use crate::evidence::verdict::{
    ArmVerdict, Check, CheckState, ThresholdDecision, ThresholdVerdict, TrialEvidence, TrialRef,
    Verdict,
};

/// The failure type of an attempt that missed and was retried.
pub const RETRIED_ATTEMPT: &str = "retried-attempt";

/// The JUnit file could not be rendered.
#[derive(Debug, thiserror::Error)]
#[error("failed to render junit.xml")]
pub struct JunitError(#[source] junit_report::Error);

/// A CDATA section ends at `]]>`, so it must not occur inside one.
fn cdata(s: &str) -> String {
    s.replace("]]>", "]] >")
}

/// The flow table's columns in junit.xml: the text table's without LAST_SEQ, as junit.xml
/// has always shown them.
const COLUMNS: [FlowColumn; 6] = [
    FlowColumn::Id,
    FlowColumn::Proto,
    FlowColumn::Outcome,
    FlowColumn::Mechanism,
    FlowColumn::TTerminal,
    FlowColumn::Detail,
];

/// The per-flow outcome table of one trial.
pub fn flow_table(trial_id: &str, report: Option<&Report>) -> String {
    let Some(r) = report else {
        return format!("{trial_id}: no report (the trial produced no evidence)\n");
    };
    if r.trial.kind() == TrialKind::Attach {
        // An attach trial holds no probe flows: what its clients saw is the table.
        let what = r
            .trial
            .config
            .attach
            .as_ref()
            .map_or_else(String::new, |a| {
                format!(", attach {} {}:{}", a.protocol, a.host, a.port)
            });
        return format!(
            "{trial_id} ({}, {} trigger{what})\n{}",
            r.trial.status.as_str(),
            r.trial.config.trigger,
            r.trial.attach.as_ref().map_or_else(
                || "  not-measured: the clients recorded nothing\n".into(),
                attach::render::text
            )
        );
    }
    let rows = table::flow_rows(&r.trial.flows, &COLUMNS);
    format!(
        "{trial_id} ({}, {} trigger, behavior {})\n{}",
        r.trial.status.as_str(),
        r.trial.config.trigger,
        r.trial.config.drain_behavior.map_or("-", |b| b.as_str()),
        format::tabulate(&rows, "  ")
    )
}

fn started(trials: &[TrialEvidence]) -> OffsetDateTime {
    trials
        .iter()
        .filter_map(|t| t.report.as_ref())
        .find_map(|r| OffsetDateTime::parse(&r.environment.wall_clock_start, &Rfc3339).ok())
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// Renders `junit.xml`.
pub fn render(
    v: &Verdict,
    evidence: &BTreeMap<String, Vec<TrialEvidence>>,
) -> Result<Vec<u8>, JunitError> {
    let mut report = ReportBuilder::new();
    let mut props = Vec::new();
    for arm in &v.arms {
        let trials = evidence
            .get(&arm.name)
            .map(Vec::as_slice)
            .unwrap_or_default();
        report.add_testsuite(suite(arm, trials));
        props.push(findings::properties(trials));
    }
    let mut out = Vec::new();
    report.build().write_xml(&mut out).map_err(JunitError)?;
    let mut doc = findings::inject(&String::from_utf8_lossy(&out), &props).into_bytes();
    doc.push(b'\n');
    Ok(doc)
}

/// One arm's testsuite: its trials' flow tables as system-out, one testcase per threshold.
fn suite(arm: &ArmVerdict, trials: &[TrialEvidence]) -> TestSuite {
    let tables: BTreeMap<&str, String> = trials
        .iter()
        .map(|t| (t.id.as_str(), flow_table(&t.id, t.report.as_ref())))
        .collect();
    let mut suite = TestSuiteBuilder::new(&arm.name);
    suite.set_timestamp(started(trials));
    suite.set_system_out(&cdata(
        &tables.values().cloned().collect::<Vec<_>>().join("\n"),
    ));
    let counted = |c: &Check| {
        arm.trials
            .iter()
            .find(|r| r.id == c.trial_id)
            .is_none_or(TrialRef::is_counted)
    };
    for t in &arm.thresholds {
        // The retried attempts first, so that a consumer folding repeated names keeps the last.
        for c in t
            .checks
            .iter()
            .filter(|c| !counted(c) && c.state != CheckState::Held)
        {
            let message = format!("{}: {} (attempt retried)", arm.name, c.message);
            let mut b =
                TestCaseBuilder::failure(&t.name, Duration::ZERO, RETRIED_ATTEMPT, &message);
            b.set_trace(&cdata(&message));
            if let Some(table) = tables.get(c.trial_id.as_str()) {
                b.set_system_out(&cdata(table));
            }
            b.set_classname(&format!("drainwatch.{}", arm.name));
            suite.add_testcase(b.build());
        }
        let mut case = match t.verdict {
            // Only a baseline threshold without a baseline is left unjudged.
            ThresholdDecision::NotJudged => TestCaseBuilder::skipped_with_cause(
                &t.name,
                "no-baseline",
                t.no_baseline().map_or("not judged", |c| c.message.as_str()),
            ),
            ThresholdDecision::Pass => passed(arm, t, &counted),
            ThresholdDecision::Fail => failure(arm, t, &tables, trials, &counted),
        };
        case.set_classname(&format!("drainwatch.{}", arm.name));
        suite.add_testcase(case.build());
    }
    let mut built = suite.build();
    if let Some(r) = trials.iter().find_map(|t| t.report.as_ref()) {
        built.hostname = r.environment.hostname.clone();
    }
    built
}

/// A passed threshold; when it passed only after a retry, or with trials missing under a
/// quorum, its `system-out` says so (never a silent pass).
fn passed(
    arm: &ArmVerdict,
    t: &ThresholdVerdict,
    counted: &dyn Fn(&Check) -> bool,
) -> TestCaseBuilder {
    let mut b = TestCaseBuilder::success(&t.name, Duration::ZERO);
    let mut notes = Vec::new();
    if t.is_flaky() {
        notes.push(format!(
            "flaky: {}: held only after a retry; the retried attempts that missed it are the {RETRIED_ATTEMPT} testcases of this name",
            arm.name
        ));
    }
    let missed: Vec<&str> = t
        .checks
        .iter()
        .filter(|c| counted(c) && c.state != CheckState::Held)
        .map(|c| c.message.as_str())
        .collect();
    if let (false, Some(held), Some(of), Some(rule)) =
        (missed.is_empty(), t.held, t.of, arm.rule.as_ref())
    {
        notes.push(format!(
            "held in {held} of {of} trials (quorum {}): {}",
            rule.quorum,
            missed.join("; ")
        ));
    }
    if !notes.is_empty() {
        b.set_system_out(&cdata(&notes.join("\n")));
    }
    b
}

/// A failed threshold: every failing counted trial's message, and the flow tables of those
/// trials.
fn failure(
    arm: &ArmVerdict,
    t: &ThresholdVerdict,
    tables: &BTreeMap<&str, String>,
    trials: &[TrialEvidence],
    counted: &dyn Fn(&Check) -> bool,
) -> TestCaseBuilder {
    let failed: Vec<_> = t
        .checks
        .iter()
        .filter(|c| counted(c) && c.state != CheckState::Held)
        .collect();
    let all = |s: CheckState| failed.iter().all(|c| c.state == s);
    let kind = if all(CheckState::NotMeasured) {
        "not-measured"
    } else if all(CheckState::NoBaseline) {
        "no-baseline"
    } else {
        "threshold-missed"
    };
    let mut message = format!(
        "{}: {}",
        arm.name,
        failed
            .iter()
            .map(|c| c.message.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    );
    // Under a k/n quorum the count is the reason, not any one trial.
    if let (Some(held), Some(of), Some(rule)) = (t.held, t.of, arm.rule.as_ref())
        && rule.quorum != "all"
    {
        message.push_str(&format!(
            " (held in {held} of {of} trials; quorum {} needs {})",
            rule.quorum, rule.need
        ));
    }
    // What the findings of the failing trials say went wrong: named in the message, in full in
    // the failure's text.
    let ids: Vec<&str> = if failed.iter().any(|c| c.trial_id == ARM_LEVEL) {
        trials.iter().map(|t| t.id.as_str()).collect()
    } else {
        failed.iter().map(|c| c.trial_id.as_str()).collect()
    };
    let found = findings::failure_lines(trials, &ids);
    let mut b = TestCaseBuilder::failure(&t.name, Duration::ZERO, kind, &message);
    let mut text = message.clone();
    if !found.is_empty() {
        text.push_str("\nFindings:\n");
        text.push_str(&found.join("\n"));
    }
    // An arm-level check (a baseline threshold) judged every trial of the arm.
    let out: Vec<&str> = if failed.iter().any(|c| c.trial_id == ARM_LEVEL) {
        tables.values().map(String::as_str).collect()
    } else {
        failed
            .iter()
            .filter_map(|c| tables.get(c.trial_id.as_str()).map(String::as_str))
            .collect()
    };
    b.set_trace(&cdata(&text));
    b.set_system_out(&cdata(&out.join("\n")));
    b
}

mod findings;
#[cfg(test)]
mod tests;
