//! The findings that cite the recorded termination settings (schema 3.1), on minimal reports.

use super::tests::{attach, failure, ids, lane, one};
use super::*;
use crate::attach::ready::NoReadyWindow;
use crate::attach::section::{FailureKind, FailureMechanism, Phase};
use crate::event::Source;
use crate::report::TimelineEntry;
use crate::settings::{
    ContainerSettings, IntOrPercent, PdbSettings, PreStop, PreStopKind, RolloutSettings,
    RolloutStrategy, SettingsSource, TerminationSettings,
};
use crate::trigger::Trigger;

fn settings(prestop: Option<u32>, grace: u32) -> TerminationSettings {
    TerminationSettings {
        source: SettingsSource::Workload,
        workload: "deployment/web".into(),
        termination_grace_period_seconds: Some(grace),
        containers: Some(vec![ContainerSettings {
            name: "app".into(),
            pre_stop: prestop.map(|s| PreStop {
                kind: PreStopKind::Sleep,
                sleep_seconds: Some(s),
            }),
            readiness_probe: None,
        }]),
        rollout: Some(RolloutSettings {
            strategy: RolloutStrategy::RollingUpdate,
            replicas: Some(2),
            max_surge: Some(IntOrPercent::Percent("25%".into())),
            max_unavailable: Some(IntOrPercent::Percent("50%".into())),
            max_surge_pods: Some(1),
            max_unavailable_pods: Some(1),
            partition: None,
        }),
        pdbs: Some(vec![]),
        unread: vec![],
    }
}

fn lagging() -> Report {
    attach(vec![failure(
        2400,
        FailureKind::Dial,
        FailureMechanism::Timeout,
        Some("p"),
        Phase::AfterExit,
    )])
}

#[test]
fn endpoint_lag_cites_the_recorded_prestop_and_how_short_it_is() {
    let mut r = lagging();
    r.trial.termination_settings = Some(settings(Some(1), 30));
    let f = one(&r, FindingId::EndpointLag);
    assert!(
        f.why
            .contains("the recorded preStop hook: sleep 1 s on app"),
        "{}",
        f.why
    );
    let rec = f.recommendation.expect("a recommendation");
    assert!(rec.text.contains("(recorded: 30 s)"), "{}", rec.text);
    let d = rec.derived.expect("a number");
    // Deletion at 1 s, last failure at 2.4 s (after the removal at 1.35 s): 1400 ms → 2 s + 1.
    assert_eq!((d.value, d.unit), (3, Unit::Seconds));
    assert!(
        d.rule.contains("delays SIGTERM 1 s, 2 s short"),
        "{}",
        d.rule
    );
    assert!(f.evidence.contains(&EvidenceRef::Field {
        path: "trial.termination_settings.containers".into()
    }));
}

#[test]
fn endpoint_lag_uses_the_endpoint_removal_when_it_came_after_the_last_failure() {
    let mut r = attach(vec![failure(
        1100,
        FailureKind::Dial,
        FailureMechanism::Refused,
        Some("p"),
        Phase::TerminatingReady,
    )]);
    // Removed 2.6 s after the deletion request: the pod had to serve until then.
    if let Some(a) = r.trial.attach.as_mut() {
        a.pods = vec![lane("p", 1000, 1050, 1300, 3600)];
    }
    let f = one(&r, FindingId::EndpointLag);
    assert!(
        f.why
            .contains("exited 2.30 s before its endpoint was removed"),
        "{}",
        f.why
    );
    let d = f.recommendation.and_then(|r| r.derived).expect("a number");
    assert_eq!(d.value, 4, "2600 ms → 3 s, plus the margin: {}", d.rule);
}

#[test]
fn a_long_enough_prestop_that_still_failed_says_so() {
    let mut r = lagging();
    r.trial.termination_settings = Some(settings(Some(10), 30));
    let d = one(&r, FindingId::EndpointLag)
        .recommendation
        .and_then(|r| r.derived)
        .expect("a number");
    assert!(
        d.rule.contains("already delays SIGTERM this long"),
        "{}",
        d.rule
    );
}

#[test]
fn attach_sigkill_needs_the_recorded_grace_period_and_an_exit_at_its_end() {
    let mut r = lagging();
    if let Some(a) = r.trial.attach.as_mut() {
        a.pods[0].exit_code = Some(137);
        a.pods[0].exited_t_ms = Some(1000 + 30_200);
    }
    assert!(
        !ids(&r).contains(&FindingId::SigkillAtGrace),
        "no grace period recorded"
    );
    r.trial.termination_settings = Some(settings(None, 30));
    let f = one(&r, FindingId::SigkillAtGrace);
    assert!(
        f.title
            .contains("exited 30.20 s after its deletion request"),
        "{}",
        f.title
    );
    assert!(
        f.why
            .contains("terminationGracePeriodSeconds 30 s (preStop: none"),
        "{}",
        f.why
    );
    // An exit 137 long before the grace period ended is some other kill.
    if let Some(a) = r.trial.attach.as_mut() {
        a.pods[0].exited_t_ms = Some(1000 + 5_000);
    }
    assert!(!ids(&r).contains(&FindingId::SigkillAtGrace));
}

fn blocked(pdb: Option<PdbSettings>) -> Report {
    let mut r = probe_report_blocked();
    let mut s = settings(None, 30);
    s.pdbs = Some(pdb.into_iter().collect());
    r.trial.termination_settings = Some(s);
    r
}

fn probe_report_blocked() -> Report {
    let mut r = super::tests::probe(Vec::new());
    r.trial.status = TrialStatus::BlockedByPdb;
    r.trial.status_detail = Some("the PodDisruptionBudget refused every eviction".into());
    r.trial.timeline = vec![
        TimelineEntry {
            t_ms: 10,
            source: Source::Orchestrator,
            event: EventName::EvictionRefused,
            flow_id: None,
            detail: Some("429".into()),
            approximate: false,
            pod: None,
            ready: None,
        },
        TimelineEntry {
            t_ms: 5010,
            source: Source::Orchestrator,
            event: EventName::TrialBlockedByPdb,
            flow_id: None,
            detail: None,
            approximate: false,
            pod: None,
            ready: None,
        },
    ];
    r
}

#[test]
fn a_pdb_that_blocked_the_eviction_is_named_with_the_replicas_it_needs() {
    let r = blocked(Some(PdbSettings {
        name: "web".into(),
        min_available: Some(IntOrPercent::Int(2)),
        max_unavailable: None,
        disruptions_allowed: Some(0),
        current_healthy: Some(2),
        desired_healthy: Some(2),
        expected_pods: Some(2),
    }));
    assert_eq!(ids(&r), vec![FindingId::PdbBlockedEviction]);
    let f = one(&r, FindingId::PdbBlockedEviction);
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.title.contains("for the whole trial (1 refusals)"),
        "{}",
        f.title
    );
    assert!(
        f.why.contains(
            "web (minAvailable 2, disruptionsAllowed 0 at the start, 2 of 2 pods healthy)"
        ),
        "{}",
        f.why
    );
    let d = f.recommendation.and_then(|r| r.derived).expect("a number");
    assert_eq!((d.value, d.unit), (3, Unit::Pods));
    assert!(f.evidence.contains(&EvidenceRef::TimelineRow {
        index: 1,
        event: EventName::TrialBlockedByPdb
    }));
}

#[test]
fn a_blocked_eviction_without_recorded_pdbs_still_says_so_without_a_number() {
    let mut r = blocked(None);
    r.trial.termination_settings = None;
    let f = one(&r, FindingId::PdbBlockedEviction);
    assert!(f.why.contains("were not recorded"), "{}", f.why);
    assert_eq!(f.recommendation.and_then(|r| r.derived), None);
}

#[test]
fn a_pdb_percentage_resolves_against_the_replicas_when_status_is_unknown() {
    let r = blocked(Some(PdbSettings {
        name: "web".into(),
        min_available: None,
        max_unavailable: Some(IntOrPercent::Int(0)),
        disruptions_allowed: None,
        current_healthy: None,
        desired_healthy: None,
        expected_pods: None,
    }));
    let d = one(&r, FindingId::PdbBlockedEviction)
        .recommendation
        .and_then(|r| r.derived)
        .expect("a number");
    // maxUnavailable 0 of 2 replicas demands 2 healthy: 3 let one go.
    assert_eq!(d.value, 3, "{}", d.rule);
}

fn rollout(windows: Option<Vec<NoReadyWindow>>) -> Report {
    let mut r = attach(vec![failure(
        1200,
        FailureKind::Dial,
        FailureMechanism::Refused,
        None,
        Phase::Unattributed,
    )]);
    r.trial.config.trigger = Trigger::RolloutRestart;
    if let Some(a) = r.trial.attach.as_mut() {
        a.no_ready_endpoint_windows = windows;
    }
    r.trial.termination_settings = Some(settings(None, 30));
    r
}

#[test]
fn a_rollout_that_left_no_ready_endpoint_cites_max_unavailable() {
    let r = rollout(Some(vec![NoReadyWindow {
        start_t_ms: 1000,
        end_t_ms: 1800,
        duration_ms: 800,
        open_at_end: false,
    }]));
    let f = one(&r, FindingId::RolloutNoReadyEndpoint);
    assert_eq!(f.severity, Severity::Failure, "a failure fell inside");
    assert!(
        f.title.contains("no ready endpoint for 0.80 s in 1 window"),
        "{}",
        f.title
    );
    assert!(
        f.why.contains("maxUnavailable 50% resolved to 1"),
        "{}",
        f.why
    );
    let rec = f.recommendation.expect("a recommendation");
    assert!(
        rec.text.contains("maxUnavailable 0 and maxSurge"),
        "{}",
        rec.text
    );
    assert_eq!(
        rec.derived.map(|d| (d.value, d.unit)),
        Some((0, Unit::Pods))
    );
    assert!(
        f.evidence
            .contains(&EvidenceRef::AttachFailure { index: 0 })
    );
}

#[test]
fn no_window_or_an_unmeasured_one_is_no_rollout_finding() {
    assert!(!ids(&rollout(Some(vec![]))).contains(&FindingId::RolloutNoReadyEndpoint));
    assert!(!ids(&rollout(None)).contains(&FindingId::RolloutNoReadyEndpoint));
    // A window that closed before the trigger is the settle's, not the rollout's.
    let before = rollout(Some(vec![NoReadyWindow {
        start_t_ms: -900,
        end_t_ms: -100,
        duration_ms: 800,
        open_at_end: false,
    }]));
    assert!(!ids(&before).contains(&FindingId::RolloutNoReadyEndpoint));
}
