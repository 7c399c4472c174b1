use super::*;
use crate::event::EventName;
use crate::policy::Policy;
use crate::report::{TimelineEntry, TrialStatus};

pub(crate) use super::fixtures::evidence;
pub(crate) use crate::test_fixtures::report as fixture;

fn policy(thresholds: &[&str]) -> Policy {
    let list = thresholds
        .iter()
        .map(|t| format!("{t:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    Policy::parse(&format!(
        "version = 1\n[[arm]]\nname = \"a\"\nthresholds = [{list}]"
    ))
    .unwrap()
}

fn run(thresholds: &[&str], trials: &[TrialEvidence]) -> Verdict {
    evaluate(&policy(thresholds), "p.toml", |_| trials)
}

#[test]
fn a_draining_probe_passes_the_smoke_thresholds() {
    let v = run(
        &[
            "tcp drained-clean-close >= 100%",
            "tcp severed <= 0",
            "sigterm-to-last-flow-end <= 3s",
        ],
        &[evidence("trial-001", Some(fixture("drain")))],
    );
    assert_eq!(v.verdict, Decision::Pass, "{:?}", v.missed());
    let t = &v.arms[0].thresholds[0];
    assert_eq!(t.name, "tcp drained-clean-close ≥ 100%");
    assert_eq!(
        t.checks[0].message,
        "trial-001: 3 of 3 tcp flows drained-clean-close (100%)"
    );
    assert_eq!((t.checks[0].value, t.checks[0].of), (Some(3), Some(3)));
    assert!(v.missed().is_empty());
    assert_eq!(
        v.arms[0].trials[0].report.as_deref(),
        Some("a/trial-001/report.json")
    );
}

#[test]
fn missed_thresholds_carry_the_measured_numbers_and_the_threshold() {
    let v = run(
        &[
            "tcp drained-clean-close >= 100%",
            "sigterm-to-last-flow-end <= 1s",
        ],
        &[evidence("trial-001", Some(fixture("exit-now")))],
    );
    assert_eq!(v.verdict, Decision::Fail);
    let m = v.missed();
    assert_eq!(
        m[0],
        "a: tcp drained-clean-close ≥ 100%: trial-001: 0 of 3 tcp flows drained-clean-close (0%); the threshold is ≥ 100%"
    );
    // exit-now ends its flows quickly, so the time bound holds while the drain bound does not.
    assert_eq!(m.len(), 1);
    let v = run(
        &["sigterm-to-last-flow-end <= 4s"],
        &[evidence("trial-001", Some(fixture("ignore")))],
    );
    assert_eq!(
        v.missed(),
        [
            "a: sigterm-to-last-flow-end ≤ 4s: trial-001: sigterm-to-last-flow-end 4440 ms; the threshold is ≤ 4000 ms"
        ]
    );
}

#[test]
fn thresholds_hold_per_trial_and_are_never_pooled() {
    // Two good trials and one bad: pooled, 6 of 9 flows would drain; per trial, one fails.
    let trials = [
        evidence("trial-001", Some(fixture("drain"))),
        evidence("trial-002", Some(fixture("exit-now"))),
        evidence("trial-003", Some(fixture("drain"))),
    ];
    let v = run(&["tcp drained-clean-close >= 60%"], &trials);
    assert_eq!(v.verdict, Decision::Fail);
    let states: Vec<_> = v.arms[0].thresholds[0]
        .checks
        .iter()
        .map(|c| c.state)
        .collect();
    assert_eq!(
        states,
        [CheckState::Held, CheckState::Missed, CheckState::Held]
    );
}

#[test]
fn no_evidence_never_passes() {
    // No report at all.
    let v = run(&["severed <= 1"], &[evidence("trial-001", None)]);
    assert_eq!(v.verdict, Decision::Fail);
    assert_eq!(
        v.arms[0].thresholds[0].checks[0].message,
        "trial-001: not measured: no report: the trial produced no evidence"
    );
    assert_eq!(v.arms[0].trials[0].report, None);
    // No trials.
    let v = run(&["severed <= 1"], &[]);
    assert_eq!(v.verdict, Decision::Fail);
    // A blocked or aborted trial.
    for status in [TrialStatus::BlockedByPdb, TrialStatus::Aborted] {
        let mut r = fixture("drain");
        r.trial.status = status;
        let v = run(
            &["tcp drained-clean-close >= 100%"],
            &[evidence("trial-001", Some(r))],
        );
        assert_eq!(
            v.arms[0].thresholds[0].checks[0].state,
            CheckState::NotMeasured
        );
    }
    // A trial whose trigger terminated nothing: its clean flows are no pass, and the reason
    // recorded in the report is the check's.
    let mut r = fixture("drain");
    r.trial.status = TrialStatus::NotTerminated;
    r.trial.status_detail = Some("the evict trigger terminated no pod of the target".into());
    let v = run(
        &["tcp drained-clean-close >= 100%", "severed <= 0"],
        &[evidence("trial-001", Some(r))],
    );
    assert_eq!(v.verdict, Decision::Fail);
    assert_eq!(v.arms[0].thresholds.len(), 2);
    for t in &v.arms[0].thresholds {
        assert_eq!(t.checks[0].state, CheckState::NotMeasured);
        assert_eq!(
            t.checks[0].message,
            "trial-001: not measured: the evict trigger terminated no pod of the target"
        );
    }
    // A report without flows.
    let mut r = fixture("drain");
    r.trial.flows.clear();
    let v = run(&["severed <= 0"], &[evidence("trial-001", Some(r))]);
    assert_eq!(v.verdict, Decision::Fail);
    assert!(v.missed()[0].ends_with("not measured: the report holds no flows"));
}

#[test]
fn not_measured_flows_defeat_upper_bounds_but_not_lower_ones() {
    let mut r = fixture("drain");
    r.trial.flows[0].outcome = crate::classify::Outcome::NotMeasured;
    let v = run(
        &["tcp severed <= 0"],
        &[evidence("trial-001", Some(r.clone()))],
    );
    assert_eq!(
        v.arms[0].thresholds[0].checks[0].state,
        CheckState::NotMeasured
    );
    assert!(
        v.missed()[0].contains("1 of 3 tcp flows were not measured"),
        "{:?}",
        v.missed()
    );
    let v = run(
        &["tcp drained-clean-close >= 2"],
        &[evidence("trial-001", Some(r))],
    );
    assert_eq!(v.verdict, Decision::Pass);
}

#[test]
fn unmeasured_values_fail_their_threshold() {
    // The local platform has no endpoints: the predicate cannot be shown.
    let v = run(
        &["endpoint-not-ready-before-exit"],
        &[evidence("trial-001", Some(fixture("drain")))],
    );
    assert_eq!(
        v.arms[0].thresholds[0].checks[0].state,
        CheckState::NotMeasured
    );
    let v = run(
        &["trigger-to-endpoint-removed <= 10s"],
        &[evidence("trial-001", Some(fixture("drain")))],
    );
    assert_eq!(v.verdict, Decision::Fail);
    assert!(v.missed()[0].contains("trigger-to-endpoint-removed was not observed"));
}

#[test]
fn endpoint_before_exit_follows_timeline_order() {
    let mut r = fixture("drain");
    let exit = r
        .trial
        .timeline
        .iter()
        .position(|e| e.event == EventName::ContainerTerminated)
        .unwrap();
    let at = |t_ms| TimelineEntry {
        t_ms,
        source: crate::event::Source::K8s,
        event: EventName::EndpointsliceReadyFalse,
        flow_id: None,
        detail: None,
        approximate: false,
        pod: None,
        ready: None,
    };
    let mut before = r.clone();
    before.trial.timeline.insert(exit, at(5));
    let v = run(
        &["endpoint-not-ready-before-exit"],
        &[evidence("trial-001", Some(before))],
    );
    assert_eq!(v.verdict, Decision::Pass, "{:?}", v.missed());
    r.trial.timeline.insert(exit + 1, at(1500));
    let v = run(
        &["endpoint-not-ready-before-exit"],
        &[evidence("trial-001", Some(r))],
    );
    assert_eq!(v.verdict, Decision::Fail);
    assert!(
        v.missed()[0].contains("endpoint left the ready set at 1500 ms"),
        "{:?}",
        v.missed()
    );
}

#[test]
fn verdict_json_round_trips() {
    let v = run(
        &["tcp drained-clean-close >= 100%"],
        &[evidence("trial-001", Some(fixture("ignore")))],
    );
    let text = serde_json::to_string_pretty(&v).unwrap();
    let back: Verdict = serde_json::from_str(&text).unwrap();
    assert_eq!(back, v);
    assert!(text.contains("\"verdict\": \"fail\""));
    assert!(text.contains("\"state\": \"missed\""));
}
