//! The findings only a trial through an ingress has, on minimal reports.

use super::tests::{attach, failure, ids, lane, one};
use super::*;
use crate::attach::section::{FailureKind, FailureMechanism, Phase};
use crate::ingress::IngressOutcome;
use crate::ingress::retries::{CountedFrom, HiddenRetries};
use crate::ingress::summary::IngressReport;

/// A failure the ingress gave `outcome`.
fn through(t: i64, outcome: IngressOutcome) -> crate::attach::section::FailureRecord {
    let mut f = failure(
        t,
        FailureKind::Request,
        FailureMechanism::Status5xx,
        None,
        Phase::TerminatingNotReady,
    );
    f.ingress = Some(outcome);
    f
}

fn ingress(hidden: Option<u64>) -> IngressReport {
    IngressReport {
        logged: 100,
        not_logged: 0,
        unclaimed: 0,
        abandoned: 0,
        duplicates: 0,
        upstreams: Vec::new(),
        routing: None,
        hidden_retries: Some(HiddenRetries {
            counted_from: Some(CountedFrom::Counters),
            replicas: vec![],
            hidden,
            upstreams: None,
        }),
        view: None,
    }
}

#[test]
fn a_503_the_ingress_gave_itself_is_no_available_server_and_asks_for_a_ready_pod() {
    let r = attach(vec![
        through(1_200, IngressOutcome::NoAvailableServer),
        through(900, IngressOutcome::UpstreamError),
        through(2_400, IngressOutcome::NoAvailableServer),
    ]);
    let f = one(&r, FindingId::IngressNoAvailableServer);
    assert_eq!(f.severity, Severity::Failure);
    assert!(
        f.title
            .starts_with("2 requests got 503 from the ingress itself, with no server to send them to, between 1.20 s and 2.40 s"),
        "{}",
        f.title
    );
    assert_eq!(
        f.evidence,
        vec![
            EvidenceRef::AttachFailure { index: 0 },
            EvidenceRef::AttachFailure { index: 2 }
        ]
    );
    // No replicas recorded: no number.
    assert!(f.recommendation.is_some_and(|r| r.derived.is_none()));
    // The 502 is not this finding's, nor is a 404 the ingress gave.
    assert!(!ids(&r).contains(&FindingId::IngressNoRoute));
}

#[test]
fn a_404_the_ingress_gave_itself_is_no_route() {
    let r = attach(vec![through(1_500, IngressOutcome::NoRoute)]);
    let f = one(&r, FindingId::IngressNoRoute);
    assert!(
        f.title
            .starts_with("1 request got 404 from the ingress itself"),
        "{}",
        f.title
    );
    assert!(
        f.recommendation
            .is_some_and(|r| r.text.contains("allowEmptyServices=true")),
    );
    assert!(!ids(&r).contains(&FindingId::IngressNoAvailableServer));
}

#[test]
fn retries_the_counters_show_are_a_warning_and_none_or_unmeasured_are_not() {
    let mut r = attach(vec![]);
    let cases = [(Some(8), true), (Some(0), false), (None, false)];
    assert_eq!(cases.len(), 3);
    for (hidden, found) in cases {
        if let Some(a) = r.trial.attach.as_mut() {
            a.ingress = Some(ingress(hidden));
        }
        assert_eq!(
            ids(&r).contains(&FindingId::IngressHiddenRetry),
            found,
            "{hidden:?}"
        );
    }
    if let Some(a) = r.trial.attach.as_mut() {
        a.ingress = Some(ingress(Some(8)));
    }
    let f = one(&r, FindingId::IngressHiddenRetry);
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(
        f.title,
        "The ingress retried 8 failed attempts its clients never saw."
    );
    assert!(f.why.contains("a POST"), "{}", f.why);
    // No routing to derive the sleep from: no number, not a made-up one.
    assert!(f.recommendation.is_some_and(|r| r.derived.is_none()));
    // Hidden retries are something wrong: nothing-wrong is not said beside them.
    assert!(!ids(&r).contains(&FindingId::NothingWrong));
    // Where they were counted: Traefik's counters, or Envoy's attempts per logged request.
    assert!(f.why.contains("request counters grew by 8"), "{}", f.why);
    // Counted from the attempts the log gives each request (Envoy's): said so, whatever the
    // controller.
    if let Some(h) = r
        .trial
        .attach
        .as_mut()
        .and_then(|a| a.ingress.as_mut())
        .and_then(|i| i.hidden_retries.as_mut())
    {
        h.counted_from = Some(CountedFrom::AttemptCounts);
    }
    let f = one(&r, FindingId::IngressHiddenRetry);
    assert!(
        f.why.starts_with(
            "Its access log gives the trial's requests 8 more attempts upstream than one each:"
        ),
        "{}",
        f.why
    );
    assert!(
        f.why.contains("only each request's last upstream"),
        "{}",
        f.why
    );
    // With a line per attempt in the log, the pods the retried attempts failed on are named.
    if let Some(h) = r
        .trial
        .attach
        .as_mut()
        .and_then(|a| a.ingress.as_mut())
        .and_then(|i| i.hidden_retries.as_mut())
    {
        h.upstreams = Some(vec![
            crate::ingress::retries::RetriedUpstream {
                pod: Some("bad-shutdown-old".into()),
                upstream: "10.244.0.4:8080".into(),
                retried: 7,
            },
            crate::ingress::retries::RetriedUpstream {
                pod: None,
                upstream: "10.244.9.9:8080".into(),
                retried: 1,
            },
        ]);
    }
    let f = one(&r, FindingId::IngressHiddenRetry);
    assert!(
        f.why
            .contains("(retried from bad-shutdown-old (7), 10.244.9.9:8080 (no pod, 1))"),
        "{}",
        f.why
    );
    assert!(!f.why.contains("last upstream"), "{}", f.why);
}

#[test]
fn endpoint_lag_names_the_ingress_that_still_sent_the_pod_requests() {
    use crate::attach::data_plane::PodRouting;
    use crate::ingress::routing::{IngressRouting, ReplicaRouting};
    use crate::ingress::summary::IngressReport;
    let mut r = attach(vec![failure(
        1900,
        FailureKind::Request,
        FailureMechanism::Status5xx,
        Some("p"),
        Phase::AfterExit,
    )]);
    let routing = |lag: i64| IngressRouting {
        replicas: vec![ReplicaRouting {
            replica: Some("traefik-0".into()),
            requests_answered: 90,
            pods: vec![PodRouting {
                pod: "p".into(),
                last_served_t_ms: Some(1200),
                lag_after_not_ready_ms: Some(150),
                lag_after_removed_ms: None,
                last_routed_t_ms: Some(1050 + lag),
                lag_at_least_ms: Some(lag),
                lag_at_most_ms: None,
                routed_after_not_ready: None,
            }],
            lag_at_least_ms: Some(lag),
            lag_at_most_ms: None,
        }],
        logged_after_not_ready: Some(40),
        not_logged_after_not_ready: Some(0),
        last_request_lag_ms: Some(lag),
    };
    let ingress = |lag: i64| IngressReport {
        view: None,
        logged: 100,
        not_logged: 0,
        unclaimed: 0,
        abandoned: 0,
        hidden_retries: None,
        duplicates: 0,
        upstreams: Vec::new(),
        routing: Some(routing(lag)),
    };
    if let Some(a) = r.trial.attach.as_mut() {
        a.ingress = Some(ingress(800));
    }
    let f = one(&r, FindingId::EndpointLag);
    assert!(
        f.why.contains("Through the ingress, traefik-0 sent this pod a request at 1.85 s, 0.80 s after its endpoint turned not ready"),
        "{}",
        f.why
    );
    assert!(f.evidence.contains(&field("trial.attach.ingress.routing")));
    assert!(!f.why.contains("kube-proxy"), "{}", f.why);
    // With the direct prober's dials, kube-proxy's lag in the same trial is set beside it.
    if let Some(a) = r.trial.attach.as_mut() {
        a.direct_dials = Some(crate::attach::section::DialCounts {
            total: 50,
            served: 50,
            ..Default::default()
        });
        a.data_plane = Some(vec![crate::attach::data_plane::NodeView {
            node: Some("node1".into()),
            dials_served: 50,
            pods: vec![],
            max_lag_after_not_ready_ms: Some(100),
            max_lag_after_removed_ms: None,
            lag_at_least_ms: Some(100),
            lag_at_most_ms: Some(150),
        }]);
    }
    let f = one(&r, FindingId::EndpointLag);
    assert!(
        f.why.contains("In the same trial, after a terminated pod's endpoint turned not ready, kube-proxy (the Service dialled directly from each client node) still sent it new connections for node1: 100 ms (at most 150 ms), the ingress requests for 800 ms: the ingress went on at least 650 ms longer than the slowest node."),
        "{}",
        f.why
    );
    assert!(f.evidence.contains(&field("trial.attach.data_plane")));
    // No request after the edge: nothing to say about the ingress.
    if let Some(a) = r.trial.attach.as_mut() {
        a.ingress = Some(ingress(0));
    }
    let f = one(&r, FindingId::EndpointLag);
    assert!(!f.why.contains("Through the ingress"), "{}", f.why);
}

#[test]
fn endpoint_lag_derives_the_prestop_from_the_ingress_lag_when_every_replica_bounds_it() {
    use crate::attach::data_plane::PodRouting;
    use crate::ingress::routing::{IngressRouting, ReplicaRouting};
    use crate::ingress::summary::IngressReport;
    // A 502 at 1.9 s; the pod was deleted at 1 s and turned not ready at 1.05 s.
    let mut r = attach(vec![failure(
        1900,
        FailureKind::Request,
        FailureMechanism::Status5xx,
        Some("p"),
        Phase::AfterExit,
    )]);
    let replica = |name: &str, at_most: Option<i64>| ReplicaRouting {
        replica: Some(name.into()),
        requests_answered: 90,
        pods: vec![PodRouting {
            pod: "p".into(),
            last_served_t_ms: Some(1200),
            lag_after_not_ready_ms: Some(150),
            lag_after_removed_ms: None,
            last_routed_t_ms: Some(1850),
            lag_at_least_ms: Some(800),
            lag_at_most_ms: at_most,
            routed_after_not_ready: None,
        }],
        lag_at_least_ms: Some(800),
        lag_at_most_ms: at_most,
    };
    let through = |replicas: Vec<ReplicaRouting>| IngressReport {
        view: None,
        logged: 100,
        not_logged: 0,
        unclaimed: 0,
        abandoned: 0,
        hidden_retries: None,
        duplicates: 0,
        upstreams: Vec::new(),
        routing: Some(IngressRouting {
            replicas,
            logged_after_not_ready: Some(40),
            not_logged_after_not_ready: Some(0),
            last_request_lag_ms: Some(800),
        }),
    };
    let derived = |r: &Report| {
        one(r, FindingId::EndpointLag)
            .recommendation
            .and_then(|r| r.derived)
            .expect("a derived value")
    };
    // Without an ingress: the failure's span, 900 ms → 1 s, plus the margin.
    assert_eq!(derived(&r).value, 2);
    if let Some(a) = r.trial.attach.as_mut() {
        a.ingress = Some(through(vec![
            replica("traefik-0", Some(900)),
            replica("traefik-1", Some(2045)),
        ]));
    }
    let f = one(&r, FindingId::EndpointLag);
    assert!(
        f.recommendation
            .as_ref()
            .is_some_and(|r| r.text.contains("until the ingress stops routing to it")),
        "{:?}",
        f.recommendation
    );
    let d = derived(&r);
    // 50 ms to not ready plus traefik-1's 2045 ms: 2095 ms → 3 s, plus the margin.
    assert_eq!((d.value, d.unit), (4, Unit::Seconds));
    assert!(
        d.rule
            .contains("traefik-1 sent it requests for at most 2045 ms"),
        "{}",
        d.rule
    );
    assert!(d.rule.contains("2095 ms"), "{}", d.rule);
    assert!(
        d.rule.contains("the failures' span (the later of an endpoint's removal and a pod's last failure, a timed-out attempt placed when the client gave up) is 900 ms"),
        "{}",
        d.rule
    );
    assert!(f.evidence.contains(&field("trial.attach.ingress.routing")));
    // One replica whose lag no later run bounds: the ingress's span is not known, and a sleep
    // from the other replica would not cover it; the failures' span again.
    if let Some(a) = r.trial.attach.as_mut() {
        a.ingress = Some(through(vec![
            replica("traefik-0", None),
            replica("traefik-1", Some(2045)),
        ]));
    }
    assert_eq!(derived(&r).value, 2);
    // A terminated pod the replica has no entry for: not bounded either.
    if let Some(a) = r.trial.attach.as_mut() {
        a.pods.push(lane("q", 1500, 1600, 1800, 1850));
        a.ingress = Some(through(vec![replica("traefik-1", Some(2045))]));
    }
    assert_eq!(derived(&r).value, 2);
}

/// A request the client gave up on, which the ingress logged as closed by the client, its
/// upstream `pod` in `phase`.
fn closed_by_client(
    t: i64,
    pod: Option<&str>,
    phase: Phase,
) -> crate::attach::section::FailureRecord {
    let mut f = failure(t, FailureKind::Dial, FailureMechanism::Timeout, pod, phase);
    f.ingress = Some(IngressOutcome::ClientClosed);
    f
}

#[test]
fn clients_timing_out_on_an_exited_pod_the_ingress_still_waited_on_is_an_upstream_hang() {
    let mut r = attach(vec![
        closed_by_client(3_580, Some("old-b"), Phase::AfterExit),
        // Before the exit the pod's sockets were there: not a hang on a gone pod.
        closed_by_client(1_200, Some("old-a"), Phase::TerminatingNotReady),
        closed_by_client(4_480, Some("old-a"), Phase::AfterExit),
        // Unattributed: no pod to name.
        closed_by_client(4_600, None, Phase::AfterExit),
        through(1_400, IngressOutcome::UpstreamError),
    ]);
    if let Some(c) = r.trial.config.attach.as_mut() {
        c.request_timeout_ms = 2_000;
    }
    let f = one(&r, FindingId::IngressUpstreamHang);
    assert_eq!(f.severity, Severity::Failure);
    assert_eq!(
        f.title,
        "2 requests timed out at the client while the ingress still waited on pods that had exited (old-a, old-b), between 3.58 s and 4.48 s after the trigger."
    );
    assert!(
        f.why.contains("past the clients' 2.00 s timeout"),
        "{}",
        f.why
    );
    assert_eq!(
        f.evidence,
        vec![
            EvidenceRef::AttachFailure { index: 0 },
            EvidenceRef::AttachFailure { index: 2 },
            field("trial.config.attach.request_timeout_ms"),
        ]
    );
    let rec = f.recommendation.unwrap();
    assert!(
        rec.text
            .starts_with("Keep the ingress from choosing a pod after it exits: a preStop sleep"),
        "{}",
        rec.text
    );
    assert!(rec.text.contains("proxy-connect-timeout"), "{}", rec.text);
    // No connect timeout to derive: whole seconds times the ingress's tries do not fit in a
    // client's few seconds (measured: results/2026-12-06-ingress-upstream-hang).
    assert!(rec.derived.is_none(), "{rec:?}");
}

#[test]
fn an_upstream_hang_without_the_clients_timeout_recorded_cites_none() {
    let mut r = attach(vec![closed_by_client(3_000, Some("old"), Phase::AfterExit)]);
    r.trial.config.attach = None;
    let f = one(&r, FindingId::IngressUpstreamHang);
    assert_eq!(f.evidence, vec![EvidenceRef::AttachFailure { index: 0 }]);
    assert!(f.why.contains("past the clients' timeout"), "{}", f.why);
    assert!(
        f.title.contains("waited on a pod that had exited (old)"),
        "{}",
        f.title
    );
}

#[test]
fn a_client_closed_request_before_the_exit_or_a_timeout_without_the_ingress_is_no_upstream_hang() {
    let direct = failure(
        3_000,
        FailureKind::Dial,
        FailureMechanism::Timeout,
        Some("old"),
        Phase::AfterExit,
    );
    let cases = [
        closed_by_client(3_000, Some("old"), Phase::TerminatingReady),
        closed_by_client(3_000, Some("old"), Phase::AfterEndpointRemoval),
        closed_by_client(3_000, None, Phase::AfterExit),
        direct,
    ];
    assert_eq!(cases.len(), 4);
    for f in cases {
        let r = attach(vec![f.clone()]);
        assert!(!ids(&r).contains(&FindingId::IngressUpstreamHang), "{f:?}");
    }
}

/// A 502 the ingress had from `pod` in `phase`.
fn upstream_502(t: i64, pod: Option<&str>, phase: Phase) -> crate::attach::section::FailureRecord {
    let mut f = failure(
        t,
        FailureKind::Request,
        FailureMechanism::Status5xx,
        pod,
        phase,
    );
    f.ingress = Some(IngressOutcome::UpstreamError);
    f.status = Some(502);
    f
}

#[test]
fn envoys_503_for_a_connection_a_serving_pod_closed_is_the_same_context() {
    let mut closed = upstream_502(1_200, Some("web-b"), Phase::BeforeTermination);
    closed.ingress = Some(IngressOutcome::UpstreamClosed);
    closed.status = Some(503);
    let r = attach(vec![closed]);
    let f = one(&r, FindingId::IngressErrorOnServingPod);
    assert_eq!(
        f.title,
        "1 request got 503 from the ingress on a pod not terminating (web-b), at 1.20 s after the trigger."
    );
}

#[test]
fn a_connection_a_serving_pod_refused_or_never_answered_is_not_the_keep_alive_race() {
    let cases = [
        IngressOutcome::UpstreamRefused,
        IngressOutcome::UpstreamConnectTimeout,
    ];
    assert_eq!(cases.len(), 2);
    for outcome in cases {
        let mut f = upstream_502(1_200, Some("web-b"), Phase::BeforeTermination);
        f.ingress = Some(outcome);
        f.status = Some(503);
        let r = attach(vec![f]);
        assert!(
            !ids(&r).contains(&FindingId::IngressErrorOnServingPod),
            "{outcome:?}"
        );
    }
}

#[test]
fn a_502_from_a_pod_that_was_not_terminating_is_context_not_the_terminations() {
    let r = attach(vec![
        upstream_502(-3_000, Some("web-b"), Phase::BeforeTermination),
        upstream_502(900, Some("web-a"), Phase::TerminatingNotReady),
        upstream_502(2_500, Some("web-c"), Phase::BeforeTermination),
        upstream_502(2_600, None, Phase::Unattributed),
    ]);
    let f = one(&r, FindingId::IngressErrorOnServingPod);
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(
        f.title,
        "2 requests got 502 from the ingress on pods not terminating (web-b, web-c), between -3.00 s and 2.50 s after the trigger."
    );
    assert!(f.why.contains("keep-alive race"), "{}", f.why);
    assert_eq!(
        f.evidence,
        vec![
            EvidenceRef::AttachFailure { index: 0 },
            EvidenceRef::AttachFailure { index: 2 }
        ]
    );
    assert!(
        f.recommendation
            .is_some_and(|r| r.derived.is_none() && r.text.contains("idleConnTimeout"))
    );
}

#[test]
fn no_serving_pod_error_without_a_502_from_a_pod_before_its_termination() {
    let mut timeout = upstream_502(100, Some("web-b"), Phase::BeforeTermination);
    timeout.ingress = Some(IngressOutcome::ClientClosed);
    let cases = [
        upstream_502(100, Some("web-a"), Phase::TerminatingReady),
        upstream_502(100, Some("web-a"), Phase::AfterExit),
        upstream_502(100, None, Phase::BeforeTermination),
        timeout,
    ];
    assert_eq!(cases.len(), 4);
    for f in cases {
        let r = attach(vec![f.clone()]);
        assert!(
            !ids(&r).contains(&FindingId::IngressErrorOnServingPod),
            "{f:?}"
        );
    }
}

#[test]
fn one_failure_is_said_at_its_time_not_between_it_and_itself() {
    let r = attach(vec![upstream_502(
        1_935,
        Some("web-b"),
        Phase::BeforeTermination,
    )]);
    let f = one(&r, FindingId::IngressErrorOnServingPod);
    assert_eq!(
        f.title,
        "1 request got 502 from the ingress on a pod not terminating (web-b), at 1.93 s after the trigger."
    );
}
