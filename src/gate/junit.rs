//! `junit.xml` from a verdict: one testsuite per arm, one testcase per threshold. A failure's
//! message carries every failing trial's measured value and the threshold; the per-flow outcome
//! table of the arm's trials is the testsuite's system-out (and a failing testcase's, for
//! consumers that only show testcase output). A baseline threshold that found no baseline is a
//! `<skipped type="no-baseline" message="no baseline: …">` testcase under
//! `on-missing-baseline = "warn"` (it was not judged, and does not fail), a failure of type
//! `no-baseline` under `"fail"`.
//!
//! Outside the core because junit-report stamps each testsuite with the current time when it
//! is created; the stamp is replaced by the trial's recorded start, so the file is a function of
//! the reports.

use std::collections::BTreeMap;

use junit_report::{
    Duration, OffsetDateTime, ReportBuilder, TestCaseBuilder, TestSuite, TestSuiteBuilder,
};
use time::format_description::well_known::Rfc3339;

use crate::evidence::format;
use crate::evidence::report::Report;
use crate::evidence::table::{self, FlowColumn};
use crate::evidence::verdict::baseline::ARM_LEVEL;
use crate::evidence::verdict::{
    ArmVerdict, CheckState, Decision, ThresholdVerdict, TrialEvidence, Verdict,
};

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
    for arm in &v.arms {
        let trials = evidence
            .get(&arm.name)
            .map(Vec::as_slice)
            .unwrap_or_default();
        report.add_testsuite(suite(arm, trials));
    }
    let mut out = Vec::new();
    report.build().write_xml(&mut out).map_err(JunitError)?;
    out.push(b'\n');
    Ok(out)
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
    for t in &arm.thresholds {
        let mut case = match t.verdict {
            Decision::Pass => match t.checks.iter().find(|c| c.state == CheckState::NoBaseline) {
                Some(c) => TestCaseBuilder::skipped_with_cause(&t.name, "no-baseline", &c.message),
                None => TestCaseBuilder::success(&t.name, Duration::ZERO),
            },
            Decision::Fail => failure(&arm.name, t, &tables),
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

/// A failed threshold: every failing trial's message, and the flow tables of those trials.
fn failure(arm: &str, t: &ThresholdVerdict, tables: &BTreeMap<&str, String>) -> TestCaseBuilder {
    let failed: Vec<_> = t
        .checks
        .iter()
        .filter(|c| c.state != CheckState::Held)
        .collect();
    let all = |s: CheckState| failed.iter().all(|c| c.state == s);
    let kind = if all(CheckState::NotMeasured) {
        "not-measured"
    } else if all(CheckState::NoBaseline) {
        "no-baseline"
    } else {
        "threshold-missed"
    };
    let message = format!(
        "{}: {}",
        arm,
        failed
            .iter()
            .map(|c| c.message.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    );
    let mut b = TestCaseBuilder::failure(&t.name, Duration::ZERO, kind, &message);
    // An arm-level check (a baseline threshold) judged every trial of the arm.
    let out: Vec<&str> = if failed.iter().any(|c| c.trial_id == ARM_LEVEL) {
        tables.values().map(String::as_str).collect()
    } else {
        failed
            .iter()
            .filter_map(|c| tables.get(c.trial_id.as_str()).map(String::as_str))
            .collect()
    };
    b.set_trace(&cdata(&message));
    b.set_system_out(&cdata(&out.join("\n")));
    b
}
