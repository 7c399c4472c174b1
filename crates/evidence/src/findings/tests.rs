//! Each finding on minimal reports: present when its evidence is there, absent otherwise.

use proptest::prelude::*;
use std::collections::BTreeMap;

use super::*;
use crate::attach::AttachProtocol;
use crate::attach::section::{
    AttachReport, ConnectionCounts, DialCounts, FailureKind, FailureMechanism, FailureRecord,
    Phase, PodLaneReport, RequestCounts,
};
use crate::attach::tests::config;
use crate::classify::{Mechanism, Outcome};
use crate::flow::Proto;
use crate::report::{Counts, FlowReport};
use crate::test_fixtures;

pub(super) fn ids(r: &Report) -> Vec<FindingId> {
    findings(r).iter().map(|f| f.id).collect()
}

pub(super) fn one(r: &Report, id: FindingId) -> Finding {
    let all = findings(r);
    let hits: Vec<_> = all.iter().filter(|f| f.id == id).collect();
    assert_eq!(hits.len(), 1, "{id}: {all:#?}");
    hits[0].clone()
}

pub(super) fn flow(
    id: &str,
    proto: Proto,
    outcome: Outcome,
    mechanism: Mechanism,
    end: i64,
) -> FlowReport {
    FlowReport {
        id: id.into(),
        proto,
        outcome,
        mechanism,
        connected_t_ms: Some(-1000),
        t_terminal_ms: Some(end),
        last_heartbeat_seq: None,
        last_answered_seq: None,
        last_data_t_ms: None,
        instance: Some("old".into()),
        rehomed: None,
        detail: None,
    }
}

/// A probe report (the draining fixture) holding exactly `flows`, counted.
pub(super) fn probe(flows: Vec<FlowReport>) -> Report {
    let mut r = test_fixtures::report("drain");
    let s = &mut r.trial.summary;
    (s.tcp, s.udp) = (Counts::default(), Counts::default());
    s.mechanisms.clear();
    for f in &flows {
        match f.proto {
            Proto::Tcp => s.tcp.add(f.outcome),
            Proto::Udp => s.udp.add(f.outcome),
        }
        *s.mechanisms
            .entry(f.proto)
            .or_default()
            .entry(f.mechanism)
            .or_default() += 1;
    }
    r.trial.flows = flows;
    r
}

pub(super) fn lane(
    pod: &str,
    deletion: i64,
    not_ready: i64,
    exited: i64,
    removed: i64,
) -> PodLaneReport {
    PodLaneReport {
        pod: pod.into(),
        deletion_requested_t_ms: Some(deletion),
        endpoint_not_ready_t_ms: Some(not_ready),
        endpoint_removed_t_ms: Some(removed),
        exited_t_ms: Some(exited),
        exit_code: Some(0),
        failures: 0,
        endpoint_seen_ready: Some(true),
        left_ready_before_exit: None,
    }
}

pub(super) fn failure(
    t: i64,
    kind: FailureKind,
    m: FailureMechanism,
    pod: Option<&str>,
    phase: Phase,
) -> FailureRecord {
    FailureRecord {
        t_ms: t,
        kind,
        flow_id: match kind {
            FailureKind::Dial => "dial-000001".into(),
            FailureKind::Request => "http-0001".into(),
            FailureKind::Connection => "tcp-0001".into(),
        },
        seq: None,
        mechanism: m,
        status: None,
        errno: None,
        instance: None,
        pod: pod.map(String::from),
        phase,
        h2_code: None,
        grpc_code: None,
        ingress: None,
        upstream: None,
    }
}

/// An HTTP attach report with one terminated pod `p` (deleted at 1 s, not ready at 1.05 s,
/// exited at 1.3 s, removed at 1.35 s), 100 requests and 100 dials, and `failures` counted.
pub(super) fn attach(failures: Vec<FailureRecord>) -> Report {
    let mut r = probe(Vec::new());
    r.trial.config.attach = Some(config(AttachProtocol::Http, 10));
    let count = |k: FailureKind| failures.iter().filter(|f| f.kind == k).count() as u32;
    let by = |k: FailureKind| {
        let mut m = BTreeMap::new();
        for f in failures.iter().filter(|f| f.kind == k) {
            *m.entry(f.mechanism).or_insert(0) += 1;
        }
        m
    };
    let (req, dial, conn) = (
        count(FailureKind::Request),
        count(FailureKind::Dial),
        count(FailureKind::Connection),
    );
    r.trial.attach = Some(AttachReport {
        protocol: AttachProtocol::Http,
        window_start_t_ms: Some(-5000),
        window_end_t_ms: Some(10_000),
        requests: Some(RequestCounts {
            total: 100,
            ok: 100 - req,
            failed: req,
            failed_by_mechanism: by(FailureKind::Request),
            latency_p50_ms: Some(1.0),
            latency_p99_ms: Some(2.0),
            latency_max_ms: Some(3.0),
        }),
        connections: ConnectionCounts {
            total: 4,
            graceful_close: 2,
            closed_announced: Some(2),
            closed_unannounced_fin: Some(0),
            severed: conn,
            survived_observation_window: 2 - conn.min(2),
            not_measured: 0,
            severed_by_mechanism: by(FailureKind::Connection),
            reopened: 2,
        },
        dials: Some(DialCounts {
            total: 100,
            served: 100 - dial,
            failed: dial,
            failed_by_result: by(FailureKind::Dial),
            served_by_instance: BTreeMap::new(),
        }),
        longest_failure_window: None,
        failures_by_phase: BTreeMap::new(),
        pods: vec![lane("p", 1000, 1050, 1300, 1350)],
        context_pods: vec![],
        failures,
        connection_records: Vec::new(),
        notes: Vec::new(),
        no_ready_endpoint_windows: None,
        watches: None,
        data_plane: None,
        direct_dials: None,
        lost_clients: None,
        ingress: None,
    });
    r
}

#[test]
fn endpoint_lag_recommends_the_measured_lag_rounded_up_plus_a_second() {
    let r = attach(vec![
        failure(
            1100,
            FailureKind::Dial,
            FailureMechanism::Refused,
            Some("p"),
            Phase::TerminatingReady,
        ),
        failure(
            2400,
            FailureKind::Dial,
            FailureMechanism::Timeout,
            Some("p"),
            Phase::AfterExit,
        ),
    ]);
    let f = one(&r, FindingId::EndpointLag);
    assert_eq!(f.severity, Severity::Failure);
    assert!(
        f.title.starts_with("2 of 100 new connections failed"),
        "{}",
        f.title
    );
    assert!(
        f.why.contains("1.40 s after the deletion request"),
        "{}",
        f.why
    );
    let d = f
        .recommendation
        .and_then(|r| r.derived)
        .expect("a derived value");
    // 2400 − 1000 = 1400 ms → 2 s, plus the 1 s margin.
    assert_eq!((d.value, d.unit), (3, Unit::Seconds));
    assert!(d.rule.contains("1400 ms"), "{}", d.rule);
    assert!(
        f.evidence
            .contains(&EvidenceRef::AttachFailure { index: 1 })
    );
    assert!(f.evidence.contains(&EvidenceRef::Pod { pod: "p".into() }));
}

#[test]
fn endpoint_lag_is_absent_without_failures_on_terminating_pods() {
    let r = attach(vec![
        failure(
            -500,
            FailureKind::Dial,
            FailureMechanism::Refused,
            Some("p"),
            Phase::BeforeTermination,
        ),
        failure(
            1500,
            FailureKind::Dial,
            FailureMechanism::Timeout,
            None,
            Phase::Unattributed,
        ),
    ]);
    assert!(!ids(&r).contains(&FindingId::EndpointLag), "{:?}", ids(&r));
    // Failures were counted, so nothing-wrong does not stand either.
    assert!(!ids(&r).contains(&FindingId::NothingWrong));
}

#[test]
fn endpoint_lag_without_a_deletion_time_gives_no_number() {
    let mut r = attach(vec![failure(
        1100,
        FailureKind::Request,
        FailureMechanism::Refused,
        Some("p"),
        Phase::TerminatingReady,
    )]);
    if let Some(a) = r.trial.attach.as_mut() {
        a.pods[0].deletion_requested_t_ms = None;
    }
    let f = one(&r, FindingId::EndpointLag);
    assert_eq!(f.recommendation.and_then(|r| r.derived), None);
    assert!(f.why.contains("not measured"), "{}", f.why);
}

#[test]
fn rst_instead_of_close_on_attach_connections_not_requests() {
    let held = attach(vec![failure(
        1200,
        FailureKind::Connection,
        FailureMechanism::Reset,
        Some("p"),
        Phase::TerminatingNotReady,
    )]);
    let f = one(&held, FindingId::RstInsteadOfClose);
    assert_eq!(f.evidence, vec![EvidenceRef::AttachFailure { index: 0 }]);
    let request = attach(vec![failure(
        1200,
        FailureKind::Request,
        FailureMechanism::Reset,
        Some("p"),
        Phase::TerminatingNotReady,
    )]);
    assert!(
        !ids(&request).contains(&FindingId::RstInsteadOfClose),
        "{:?}",
        ids(&request)
    );
}

#[test]
fn keepalive_closed_in_flight_on_truncated_or_reset_requests() {
    let r = attach(vec![
        failure(
            1200,
            FailureKind::Request,
            FailureMechanism::Truncated,
            Some("p"),
            Phase::TerminatingNotReady,
        ),
        failure(
            1250,
            FailureKind::Request,
            FailureMechanism::Reset,
            Some("p"),
            Phase::TerminatingNotReady,
        ),
    ]);
    let f = one(&r, FindingId::KeepaliveClosedInFlight);
    assert!(f.title.contains("(1 truncated, 1 reset)"), "{}", f.title);
    assert!(f.why.contains("on pod p"), "{}", f.why);
    // Refused and timed-out requests are new-connection failures, not cuts in flight.
    let r = attach(vec![
        failure(
            1200,
            FailureKind::Request,
            FailureMechanism::Refused,
            Some("p"),
            Phase::TerminatingNotReady,
        ),
        failure(
            1250,
            FailureKind::Request,
            FailureMechanism::Timeout,
            Some("p"),
            Phase::AfterExit,
        ),
    ]);
    assert!(
        !ids(&r).contains(&FindingId::KeepaliveClosedInFlight),
        "{:?}",
        ids(&r)
    );
}

#[test]
fn readiness_not_failed_on_an_attach_lane() {
    let mut r = attach(Vec::new());
    assert!(!ids(&r).contains(&FindingId::ReadinessNotFailed));
    if let Some(a) = r.trial.attach.as_mut() {
        a.pods[0].endpoint_not_ready_t_ms = None;
    }
    let f = one(&r, FindingId::ReadinessNotFailed);
    assert_eq!(
        f.evidence.first(),
        Some(&EvidenceRef::Pod { pod: "p".into() })
    );
}

#[test]
fn nothing_wrong_says_what_was_measured() {
    let r = attach(Vec::new());
    assert_eq!(ids(&r), vec![FindingId::NothingWrong]);
    let f = one(&r, FindingId::NothingWrong);
    assert!(
        f.title.contains("100 of 100 requests succeeded"),
        "{}",
        f.title
    );
    assert!(
        f.title.contains("100 of 100 new connections"),
        "{}",
        f.title
    );
    let r = probe(vec![flow(
        "tcp-0001",
        Proto::Tcp,
        Outcome::DrainedCleanClose,
        Mechanism::FinAfterAnnouncement,
        900,
    )]);
    assert_eq!(ids(&r), vec![FindingId::NothingWrong]);
    // A pod under test that never exited in the window (its kubelet stopped): its flows
    // outlived the window, and no termination was measured.
    let mut never = probe(vec![flow(
        "tcp-0001",
        Proto::Tcp,
        Outcome::SurvivedObservationWindow,
        Mechanism::ObservationEnd,
        900,
    )]);
    assert_eq!(ids(&never), vec![FindingId::NothingWrong], "exited: fine");
    never.trial.summary.trigger_to_container_terminated_ms = None;
    assert!(ids(&never).is_empty(), "never exited: not nothing-wrong");
    // A failure no finding explains still rules it out; so does measuring nothing.
    assert!(!ids(&test_fixtures::report("drain")).contains(&FindingId::NothingWrong));
    assert!(ids(&probe(Vec::new())).is_empty());
}

#[test]
fn a_cut_grpc_watch_rules_out_nothing_wrong() {
    use crate::attach::watch::WatchReport;
    let watches = |cut: u32| WatchReport {
        total: 2,
        drained: 2 - cut,
        ended_with_status: 0,
        cut,
        survived_observation_window: 0,
        not_measured: 0,
        cut_by_mechanism: BTreeMap::new(),
        records: Vec::new(),
    };
    let mut r = attach(Vec::new());
    if let Some(a) = r.trial.attach.as_mut() {
        a.watches = Some(watches(0));
    }
    let f = one(&r, FindingId::NothingWrong);
    assert!(
        f.title.contains("2 gRPC Watches were not cut"),
        "{}",
        f.title
    );
    if let Some(a) = r.trial.attach.as_mut() {
        a.watches = Some(watches(1));
    }
    assert!(!ids(&r).contains(&FindingId::NothingWrong));
}

#[test]
fn ordering_is_severity_then_id() {
    let mut r = attach(vec![
        failure(
            1200,
            FailureKind::Request,
            FailureMechanism::Truncated,
            Some("p"),
            Phase::TerminatingNotReady,
        ),
        failure(
            1250,
            FailureKind::Dial,
            FailureMechanism::Refused,
            Some("p"),
            Phase::TerminatingNotReady,
        ),
    ]);
    if let Some(a) = r.trial.attach.as_mut() {
        a.pods[0].endpoint_not_ready_t_ms = None;
    }
    assert_eq!(
        ids(&r),
        vec![
            FindingId::EndpointLag,
            FindingId::KeepaliveClosedInFlight,
            FindingId::ReadinessNotFailed
        ]
    );
}

#[test]
fn names_are_kebab_case_on_the_wire() {
    for id in FindingId::ALL {
        assert_eq!(
            serde_json::to_value(id).ok(),
            Some(serde_json::json!(id.as_str()))
        );
    }
    for s in [Severity::Info, Severity::Warning, Severity::Failure] {
        assert_eq!(
            serde_json::to_value(s).ok(),
            Some(serde_json::json!(s.as_str()))
        );
    }
    let e = EvidenceRef::AttachFailure { index: 3 };
    assert_eq!(
        serde_json::to_value(&e).ok(),
        Some(serde_json::json!({"kind": "attach-failure", "index": 3}))
    );
}

#[test]
fn the_block_renders_every_finding() {
    let r = test_fixtures::report("exit-now");
    let text = render::block(&r);
    assert!(
        text.starts_with("FINDINGS\n  [failure] rst-instead-of-close\n"),
        "{text}"
    );
}

fn arb_failure() -> impl Strategy<Value = FailureRecord> {
    let kinds = prop::sample::select(vec![
        FailureKind::Request,
        FailureKind::Dial,
        FailureKind::Connection,
    ]);
    let mechs = prop::sample::select(FailureMechanism::ALL.to_vec());
    let phases = prop::sample::select(vec![
        Phase::BeforeTermination,
        Phase::TerminatingReady,
        Phase::TerminatingNotReady,
        Phase::AfterEndpointRemoval,
        Phase::AfterExit,
        Phase::Unattributed,
    ]);
    (-2000i64..8000, kinds, mechs, phases).prop_map(|(t, k, m, p)| {
        let pod = (p != Phase::Unattributed).then_some("p");
        failure(t, k, m, pod, p)
    })
}

proptest! {
    /// Findings are a pure function of the report, and their order is the stated one.
    #[test]
    fn findings_are_pure_and_ordered(mut fs in prop::collection::vec(arb_failure(), 0..12)) {
        fs.sort_by_key(|f| f.t_ms);
        let r = attach(fs);
        let a = findings(&r);
        let b = findings(&r.clone());
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(serde_json::to_string(&a).ok(), serde_json::to_string(&b).ok());
        for w in a.windows(2) {
            prop_assert!(
                w[0].severity > w[1].severity
                    || (w[0].severity == w[1].severity && w[0].id.as_str() < w[1].id.as_str()),
                "{} before {}", w[0].id, w[1].id
            );
        }
        let mut seen: Vec<FindingId> = a.iter().map(|f| f.id).collect();
        seen.dedup();
        prop_assert_eq!(seen.len(), a.len(), "one finding per id");
    }
}
