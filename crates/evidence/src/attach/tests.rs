use proptest::prelude::*;

use super::*;
use crate::attach::section::{ConnOutcome, FailureKind};
use crate::event::{EventLine, EventName, Source};
use crate::shard::Losses;

const MS: i64 = 1_000_000;

pub(crate) fn config(protocol: AttachProtocol, dial_rate: u32) -> AttachConfig {
    AttachConfig {
        target: None,
        service: None,
        protocol,
        host: "127.0.0.1".into(),
        port: 8080,
        path: protocol.has_path().then(|| "/".into()),
        expect_status: protocol.has_status().then_some(200),
        tcp_flows: 2,
        interval_ms: 100,
        dial_rate,
        request_timeout_ms: 2000,
        keepalive_idle_ms: 1000,
        keepalive_interval_ms: 1000,
        keepalive_count: 3,
        user_timeout_ms: 5000,
        duration_ms: 10_000,
        tls: None,
        grpc: None,
        host_header: None,
        request_id_prefix: None,
        direct_dial: None,
    }
}

/// A client line of `flow` at `at_ms` on the client's monotonic clock, `seq` its connection
/// generation (also for the WebSocket and Watch tests).
pub(crate) fn client(event: EventName, at_ms: i64, flow: &str, seq: u64) -> EventLine {
    let mut l = EventLine::new(Source::Client, event, at_ms * MS)
        .flow(flow)
        .seq(seq);
    l.mono_ns = l.at_ns;
    l
}

fn request(at_ms: i64, flow: &str, seq: u64, result: &str, status: Option<u16>) -> EventLine {
    let mut l = client(EventName::AttachRequest, at_ms, flow, seq);
    l.result = Some(result.into());
    l.status = status;
    l.latency_ns = Some(2 * MS);
    l
}

fn dial(at_ms: i64, n: u64, result: &str, instance: Option<&str>) -> EventLine {
    let mut l = EventLine::new(Source::Client, EventName::AttachDial, at_ms * MS)
        .flow(format!("dial-{n:06}"));
    l.result = Some(result.into());
    l.instance = instance.map(String::from);
    l
}

fn k8s(event: EventName, at_ms: i64, pod: &str) -> EventLine {
    let mut l = EventLine::new(Source::K8s, event, at_ms * MS);
    l.instance = Some(pod.into());
    l
}

fn window(start: i64, end: i64) -> Vec<EventLine> {
    vec![
        EventLine::new(Source::Client, EventName::AttachWindowStarted, start * MS),
        EventLine::new(Source::Client, EventName::AttachWindowEnded, end * MS),
    ]
}

fn lane(pod: &str, del: i64, nr: i64, rm: i64, exit: i64) -> Vec<EventLine> {
    vec![
        k8s(lanes::DELETION_REQUESTED, del, pod),
        k8s(EventName::EndpointsliceReadyFalse, nr, pod),
        k8s(lanes::ENDPOINT_REMOVED, rm, pod),
        k8s(lanes::EXITED, exit, pod),
    ]
}

#[test]
fn a_graceful_rollout_has_no_failures_and_reopens() {
    let mut lines = window(0, 5000);
    lines.extend(lane("web-a", 1000, 1100, 1200, 4000));
    lines.push(client(EventName::AttachConnOpened, 10, "http-0001", 1));
    lines.push(request(100, "http-0001", 1, "ok", Some(200)));
    let mut closed = client(EventName::AttachConnClosedGraceful, 3000, "http-0001", 1);
    closed.result = Some(names::CLOSE_CONNECTION_HEADER.into());
    lines.push(closed);
    lines.push(client(EventName::AttachConnReopened, 3001, "http-0001", 2));
    lines.push(request(3100, "http-0001", 2, "ok", Some(200)));
    lines.push(client(
        EventName::AttachConnObservationEnd,
        5000,
        "http-0001",
        2,
    ));
    lines.push(dial(500, 1, "served", Some("web-b")));
    let a = attach_section(
        &lines,
        &Losses::unsharded(&lines),
        &config(AttachProtocol::Http, 20),
        1000 * MS,
    );
    let r = a.requests.as_ref().unwrap();
    assert_eq!((r.total, r.ok, r.failed), (2, 2, 0));
    assert_eq!(r.latency_max_ms, Some(2.0));
    let c = &a.connections;
    assert_eq!(
        (
            c.total,
            c.graceful_close,
            c.survived_observation_window,
            c.reopened
        ),
        (2, 1, 1, 1)
    );
    assert_eq!(a.longest_failure_window, None);
    assert!(a.failures.is_empty());
    let d = a.dials.as_ref().unwrap();
    assert_eq!(
        (d.total, d.served, d.served_by_instance.get("web-b")),
        (1, 1, Some(&1))
    );
    assert_eq!(a.window_start_t_ms, Some(-1000));
    assert_eq!(a.pods.len(), 1);
    assert_eq!(a.pods[0].endpoint_removed_t_ms, Some(200));
    assert_eq!(a.connection_records[0].ended_t_ms, Some(2000));
    assert_eq!(
        a.connection_records[1].outcome,
        ConnOutcome::SurvivedObservationWindow
    );
    assert_eq!(a.connection_records[1].ended_t_ms, None);
}

#[test]
fn connections_held_when_the_client_was_lost_are_not_measured() {
    let mut lines = window(0, 5000);
    lines.push(client(EventName::AttachConnOpened, 10, "http-0001", 1));
    lines.push(client(EventName::AttachConnOpened, 10, "http-0002", 1));
    let mut closed = client(EventName::AttachConnClosedGraceful, 3000, "http-0001", 1);
    closed.result = Some(names::CLOSE_CONNECTION_HEADER.into());
    lines.push(closed);
    lines.push(client(
        EventName::AttachConnObservationEnd,
        5000,
        "http-0002",
        1,
    ));
    let cfg = config(AttachProtocol::Http, 0);
    let held = attach_section(&lines, &Losses::unsharded(&lines), &cfg, 1000 * MS);
    assert_eq!(held.connections.survived_observation_window, 1);
    lines.push(
        EventLine::new(Source::Orchestrator, EventName::ClientLost, 4000 * MS)
            .detail("client pod ns/drainwatch-client was deleted"),
    );
    let a = attach_section(&lines, &Losses::unsharded(&lines), &cfg, 1000 * MS);
    let c = &a.connections;
    assert_eq!(
        (
            c.total,
            c.graceful_close,
            c.survived_observation_window,
            c.not_measured
        ),
        (2, 1, 0, 1),
        "the close seen before stays; the connection held at the loss is not-measured"
    );
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("client was lost") && n.contains("drainwatch-client was deleted")),
        "{:?}",
        a.notes
    );
}

#[test]
fn failures_are_counted_attributed_and_windowed() {
    let mut lines = window(0, 9000);
    lines.extend(lane("web-a", 1000, 1500, 2000, 2500));
    lines.push(client(EventName::AttachConnOpened, 10, "http-0001", 1));
    lines.push(request(900, "http-0001", 1, "ok", Some(200)));
    lines.push(request(1300, "http-0001", 2, "reset", None));
    lines.push(dial(1350, 1, "refused", None));
    lines.push(request(1400, "http-0001", 3, "refused", None));
    lines.push(request(1800, "http-0001", 4, "status-5xx", Some(503)));
    lines.push(dial(2500, 2, "served", Some("web-b")));
    lines.push(request(3000, "http-0002", 1, "timeout", None));
    let a = attach_section(
        &lines,
        &Losses::unsharded(&lines),
        &config(AttachProtocol::Http, 20),
        1000 * MS,
    );
    let r = a.requests.as_ref().unwrap();
    assert_eq!((r.total, r.ok, r.failed), (5, 1, 4));
    assert_eq!(
        r.failed_by_mechanism.get(&FailureMechanism::Reset),
        Some(&1)
    );
    assert_eq!(
        r.failed_by_mechanism.get(&FailureMechanism::Status5xx),
        Some(&1)
    );
    let d = a.dials.as_ref().unwrap();
    assert_eq!(d.failed_by_result.get(&FailureMechanism::Refused), Some(&1));
    let w = a.longest_failure_window.as_ref().unwrap();
    assert_eq!(
        (w.start_t_ms, w.end_t_ms, w.duration_ms, w.failures),
        (300, 800, 500, 4)
    );
    let phases: Vec<_> = a
        .failures
        .iter()
        .map(|f| (f.t_ms, f.pod.as_deref(), f.phase))
        .collect();
    assert_eq!(
        phases,
        vec![
            (300, Some("web-a"), Phase::TerminatingReady),
            (350, Some("web-a"), Phase::TerminatingReady),
            (400, Some("web-a"), Phase::TerminatingReady),
            (800, Some("web-a"), Phase::TerminatingNotReady),
            (2000, Some("web-a"), Phase::AfterExit),
        ]
    );
    assert_eq!(a.failures[1].kind, FailureKind::Dial);
    assert_eq!(a.failures[1].seq, None);
    assert_eq!(a.failures[3].status, Some(503));
    assert_eq!(a.pods[0].failures, 5);
    assert_eq!(a.failures_by_phase.get(&Phase::TerminatingReady), Some(&3));
    // An exit seen before the removal still outranks it from then on.
    let early_exit = lanes(&lane("x", 100, 200, 400, 300));
    assert_eq!(early_exit[0].phase_at(350 * MS), Phase::AfterExit);
}

#[test]
fn phases_follow_the_lane() {
    let l = lanes(&lane("p", 100, 200, 300, 400));
    let at = |t: i64| attribute(&l, t * MS, None).phase;
    assert_eq!(at(50), Phase::BeforeTermination);
    assert_eq!(at(100), Phase::TerminatingReady);
    assert_eq!(at(250), Phase::TerminatingNotReady);
    assert_eq!(at(350), Phase::AfterEndpointRemoval);
    assert_eq!(at(9999), Phase::AfterExit);
}

#[test]
fn overlapping_lanes_need_the_answering_endpoint() {
    let mut lines = lane("a", 100, 200, 300, 400);
    lines.extend(lane("b", 150, 250, 350, 450));
    let l = lanes(&lines);
    let none = attribute(&l, 260 * MS, None);
    assert_eq!((none.pod, none.phase), (None, Phase::Unattributed));
    let b = attribute(&l, 260 * MS, Some("b"));
    assert_eq!(
        (b.pod.as_deref(), b.phase),
        (Some("b"), Phase::TerminatingNotReady)
    );
    // After both ended, the one that ended last.
    let late = attribute(&l, 500 * MS, None);
    assert_eq!(
        (late.pod.as_deref(), late.phase),
        (Some("b"), Phase::AfterExit)
    );
    // Before both started, no single pod.
    assert_eq!(attribute(&l, 50 * MS, None).phase, Phase::Unattributed);
    // No lanes at all.
    assert_eq!(attribute(&[], 50 * MS, Some("x")).pod, None);
    // Pods are read from `instance` only on k8s lines.
    let mut stray = k8s(lanes::EXITED, 10, "c");
    stray.source = Some(Source::Client);
    assert!(lanes(&[stray]).is_empty());
}

#[test]
fn a_tcp_arm_counts_connections_and_has_no_requests() {
    let mut lines = window(0, 5000);
    lines.push(client(EventName::AttachConnOpened, 10, "tcp-0001", 1));
    lines.push(client(EventName::AttachConnOpened, 11, "tcp-0002", 1));
    let mut sev = client(EventName::AttachConnSevered, 2000, "tcp-0001", 1);
    sev.result = Some("reset".into());
    sev.errno = Some("ECONNRESET".into());
    lines.push(sev);
    let mut fin = client(EventName::AttachConnClosedGraceful, 2500, "tcp-0002", 1);
    fin.result = Some(names::CLOSE_FIN.into());
    lines.push(fin);
    let mut failed = client(EventName::AttachConnOpenFailed, 12, "tcp-0003", 1);
    failed.result = Some("refused".into());
    lines.push(failed);
    let a = attach_section(
        &lines,
        &Losses::unsharded(&lines),
        &config(AttachProtocol::Tcp, 0),
        0,
    );
    assert_eq!(a.requests, None);
    assert_eq!(a.dials, None);
    let c = &a.connections;
    assert_eq!(
        (c.total, c.severed, c.graceful_close, c.not_measured),
        (3, 1, 1, 1)
    );
    assert_eq!(
        c.severed_by_mechanism.get(&FailureMechanism::Reset),
        Some(&1)
    );
    assert_eq!(a.failures.len(), 2);
    assert!(a.failures.iter().all(|f| f.kind == FailureKind::Connection));
    assert_eq!(a.failures[1].errno.as_deref(), Some("ECONNRESET"));
    assert!(a.notes.iter().any(|n| n.contains("no pod termination")));
    assert!(a.notes.iter().any(|n| n.contains("prober was off")));
}

#[test]
fn an_unfinished_client_leaves_connections_not_measured() {
    let mut refused = client(EventName::AttachConnOpenFailed, 20, "http-0002", 1);
    refused.result = Some("refused".into());
    // A failed HTTP (re)open is its failed request, not a connection.
    let lines = vec![
        client(EventName::AttachConnOpened, 10, "http-0001", 1),
        refused,
    ];
    let a = attach_section(
        &lines,
        &Losses::unsharded(&lines),
        &config(AttachProtocol::Http, 20),
        0,
    );
    assert_eq!((a.connections.total, a.connections.not_measured), (1, 1));
    assert!(a.failures.is_empty());
    assert_eq!(a.window_end_t_ms, None);
    assert_eq!(a.requests.as_ref().map(|r| r.total), Some(0));
    assert_eq!(a.requests.as_ref().and_then(|r| r.latency_p50_ms), None);
    assert!(a.notes.iter().any(|n| n.contains("did not record the end")));
}

#[test]
fn latency_percentiles_use_nearest_rank() {
    let mut ns: Vec<i64> = (1..=100).rev().map(|i| i * MS).collect();
    let l = window::latency_summary(&mut ns);
    assert_eq!((l.p50, l.p99, l.max), (Some(50.0), Some(99.0), Some(100.0)));
    assert_eq!(window::latency_summary(&mut []).p50, None);
}

fn arb_line() -> impl Strategy<Value = EventLine> {
    let results = prop::sample::select(vec![
        "ok",
        "served",
        "reset",
        "timeout",
        "status-5xx",
        "unexpected-status",
        "truncated",
        "refused",
        "error",
        "bogus",
    ]);
    let events = prop::sample::select(vec![
        EventName::AttachConnOpened,
        EventName::AttachConnReopened,
        EventName::AttachConnOpenFailed,
        EventName::AttachConnClosedGraceful,
        EventName::AttachConnSevered,
        EventName::AttachConnObservationEnd,
        EventName::AttachRequest,
        EventName::AttachDial,
        lanes::DELETION_REQUESTED,
        lanes::ENDPOINT_REMOVED,
        lanes::EXITED,
        EventName::EndpointsliceServingFalse,
    ]);
    let flows = prop::sample::select(vec!["http-0001", "http-0002", "tcp-0001", "dial-000001"]);
    let pods = prop::sample::select(vec!["a", "b", "c"]);
    (
        events,
        results,
        flows,
        pods,
        0i64..10_000,
        1u64..4,
        prop::option::of(pods_inst()),
    )
        .prop_map(|(ev, res, flow, pod, at, seq, inst)| {
            if ev.as_str().starts_with("attach_") {
                let mut l = client(ev, at, flow, seq);
                l.result = Some(res.into());
                l.instance = inst;
                l.latency_ns = Some(at * 1000);
                l
            } else {
                k8s(ev, at, pod)
            }
        })
}

fn pods_inst() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "z"]).prop_map(String::from)
}

proptest! {
    #[test]
    fn counts_always_add_up(lines in prop::collection::vec(arb_line(), 0..80), http in any::<bool>()) {
        let proto = if http { AttachProtocol::Http } else { AttachProtocol::Tcp };
        let a = attach_section(&lines, &Losses::unsharded(&lines), &config(proto, 20), 0);
        let c = &a.connections;
        prop_assert_eq!(c.total, c.graceful_close + c.severed + c.survived_observation_window + c.not_measured);
        prop_assert_eq!(c.severed, c.severed_by_mechanism.values().sum::<u32>());
        prop_assert_eq!(c.total as usize, a.connection_records.len());
        if let Some(r) = &a.requests {
            prop_assert_eq!(r.total, r.ok + r.failed);
            prop_assert_eq!(r.failed, r.failed_by_mechanism.values().sum::<u32>());
            prop_assert_eq!(r.ok == 0, r.latency_max_ms.is_none());
        }
        if let Some(d) = &a.dials {
            prop_assert!(d.total > 0);
            prop_assert_eq!(d.total, d.served + d.failed);
            prop_assert_eq!(d.failed, d.failed_by_result.values().sum::<u32>());
        }
        prop_assert_eq!(a.failures.len() as u32, a.failures_by_phase.values().sum::<u32>());
        prop_assert_eq!(a.longest_failure_window.is_some(), !a.failures.is_empty());
        if let Some(w) = &a.longest_failure_window {
            prop_assert!(w.start_t_ms <= w.end_t_ms && w.duration_ms == w.end_t_ms - w.start_t_ms);
            prop_assert!(w.failures >= 1 && w.failures as usize <= a.failures.len());
        }
        for f in &a.failures {
            prop_assert_eq!(f.pod.is_none(), f.phase == Phase::Unattributed);
        }
        let attributed: u32 = a.pods.iter().chain(&a.context_pods).map(|p| p.failures).sum();
        prop_assert_eq!(attributed as usize, a.failures.iter().filter(|f| f.pod.is_some()).count());
        prop_assert!(a.failures.windows(2).all(|w| w[0].t_ms <= w[1].t_ms));
        // Deterministic: the same lines give the same section.
        prop_assert_eq!(&a, &attach_section(&lines, &Losses::unsharded(&lines), &config(proto, 20), 0));
    }

    #[test]
    fn the_answering_endpoint_wins_and_phases_only_advance(
        times in prop::collection::vec(prop::option::of(0i64..1000), 4),
        t1 in 0i64..1200,
        t2 in 0i64..1200,
        seen_ready in prop::option::of(any::<bool>()),
    ) {
        let lane = PodLane {
            pod: "p".into(),
            deletion_ns: times[0],
            not_ready_ns: times[1],
            removed_ns: times[2],
            exited_ns: times[3],
            exit_code: None,
            endpoint_seen_ready: seen_ready,
        };
        let other = PodLane { pod: "q".into(), deletion_ns: Some(500), ..PodLane::default() };
        let both = [lane.clone(), other];
        let named = attribute(&both, t1, Some("p"));
        prop_assert_eq!(named.pod.as_deref(), Some("p"));
        let (lo, hi) = (t1.min(t2), t1.max(t2));
        prop_assert!(lane.phase_at(lo) <= lane.phase_at(hi));
        prop_assert!(lane.phase_at(lo) != Phase::Unattributed);
    }

    #[test]
    fn the_failure_window_is_a_run_without_successes(outcomes in prop::collection::vec((0i64..1000, any::<bool>()), 0..60)) {
        let mut o = outcomes;
        o.sort_by_key(|x| x.0);
        let w = window::longest_failure_window(&o);
        prop_assert_eq!(w.is_some(), o.iter().any(|x| x.1));
        if let Some(w) = w {
            let inside: Vec<_> = o.iter().filter(|x| x.0 >= w.start_t_ms && x.0 <= w.end_t_ms).collect();
            prop_assert!(inside.iter().filter(|x| x.1).count() as u32 >= w.failures);
            // No run is longer.
            let mut start = None;
            for &(at, failed) in &o {
                match (failed, start) {
                    (true, None) => start = Some(at),
                    (true, Some(s)) => prop_assert!(at - s <= w.duration_ms),
                    (false, _) => start = None,
                }
            }
        }
    }
}

#[test]
fn an_attach_client_may_stop_after_its_request_timeout_ran_out() {
    use crate::plan::client::{AttachClient, ClientInvocation};
    let mut c = config(AttachProtocol::Http, 20);
    c.request_timeout_ms = 30_000;
    let patient = ClientInvocation::Attach(Box::new(AttachClient {
        config: c.clone(),
        shard: None,
    }));
    assert_eq!(patient.grace_seconds(), 40);
    c.request_timeout_ms = 2_500;
    let brief = ClientInvocation::Attach(Box::new(AttachClient {
        config: c,
        shard: None,
    }));
    assert_eq!(brief.grace_seconds(), 13);
}
