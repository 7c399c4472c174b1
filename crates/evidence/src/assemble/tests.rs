use super::*;
use crate::classify::Mechanism;
use crate::clock::Mapping;
use crate::event::{EventLine, EventName};

pub(crate) use super::fixtures::header;

const MS: i64 = 1_000_000;

fn client(event: EventName, at_ms: i64, flow: &str) -> EventLine {
    EventLine::new(Source::Client, event, 1000 * MS + at_ms * MS).flow(flow)
}

fn probe(event: EventName, mono_ms: i64) -> EventLine {
    let mut l = EventLine::new(Source::Probe, event, 1000 * MS + mono_ms * MS + 7);
    l.mono_ns = Some(1000 * MS + mono_ms * MS);
    l.boot_id = Some("boot-a".into());
    l
}

pub(crate) fn drain_trial() -> Vec<EventLine> {
    let mut v = vec![header(1, 1)];
    v.push(probe(EventName::ProbeStarted, -2000));
    let mut c = client(EventName::FlowConnected, -1500, "tcp-0001");
    v.push(c.clone());
    c = client(EventName::FlowData, -1000, "tcp-0001").seq(0);
    c.instance = Some("p1".into());
    c.peer_wall_ns = Some(5);
    v.push(c);
    v.push(client(EventName::FlowConnected, -1400, "udp-0001"));
    let mut a = client(EventName::FlowData, -900, "udp-0001").seq(3);
    a.instance = Some("p1".into());
    v.push(a);
    v.push(
        EventLine::new(Source::Orchestrator, EventName::TriggerIssued, 1000 * MS)
            .detail("signal=SIGTERM"),
    );
    v.push(probe(EventName::SigtermReceived, 2));
    v.push(probe(EventName::TcpHeartbeat, 3));
    v.push(client(EventName::FlowBye, 25_000, "tcp-0001").seq(50));
    v.push(client(EventName::FlowEof, 25_001, "tcp-0001"));
    let mut b = client(EventName::FlowData, 2_400, "udp-0001").seq(9);
    b.instance = Some("p2".into());
    v.push(b);
    let mut t = EventLine::new(
        Source::Orchestrator,
        EventName::ContainerTerminated,
        1000 * MS + 25_100 * MS,
    );
    t.exit_code = Some(0);
    v.push(t);
    v
}

#[test]
fn a_drain_trial_reads_as_drained_and_rehomed() {
    let r = build_report(&drain_trial()).unwrap();
    let tcp = &r.trial.flows[0];
    assert_eq!(tcp.id, "tcp-0001");
    assert_eq!(tcp.outcome, Outcome::DrainedCleanClose);
    assert_eq!(tcp.t_terminal_ms, Some(25_001));
    assert_eq!(tcp.connected_t_ms, Some(-1500));
    assert_eq!(tcp.last_heartbeat_seq, Some(50));
    let udp = &r.trial.flows[1];
    assert_eq!(udp.mechanism, Mechanism::Rehomed);
    let rh = udp.rehomed.as_ref().unwrap();
    assert_eq!(rh.last_original_reply_t_ms, Some(-900));
    assert_eq!(rh.first_new_reply_t_ms, 2_400);
    assert_eq!(udp.last_answered_seq, Some(3));
    let s = &r.trial.summary;
    assert_eq!(s.trigger_to_sigterm_ms, Some(2));
    assert_eq!(s.sigterm_to_last_flow_terminal_ms, Some(24_999));
    assert_eq!(s.trigger_to_container_terminated_ms, Some(25_100));
    assert_eq!(s.container_exit_code, Some(0));
    assert_eq!(s.sigterm_to_ready_false_ms, None);
    assert!(counts_are_consistent(s));
    assert_eq!(r.trial.clock.probe.mapping, Mapping::SameHostMonotonic);
    // Same host: probe rows are exact, and heartbeats stay off the timeline.
    assert!(r.trial.timeline.iter().all(|e| !e.approximate));
    assert!(
        r.trial
            .timeline
            .iter()
            .all(|e| e.event != EventName::TcpHeartbeat)
    );
}

#[test]
fn another_host_is_approximate_with_a_stated_offset() {
    let mut lines = drain_trial();
    for l in &mut lines {
        if l.source == Some(Source::Probe) {
            l.boot_id = Some("boot-b".into());
            l.wall = Some(crate::timeline::format_wall_ns(l.mono_ns.unwrap() - 5));
        }
    }
    let r = build_report(&lines).unwrap();
    assert_eq!(r.trial.clock.probe.mapping, Mapping::OffsetOneSided);
    assert_eq!(r.trial.clock.probe.samples, 1);
    let sig = r
        .trial
        .timeline
        .iter()
        .find(|e| e.event == EventName::SigtermReceived)
        .unwrap();
    assert!(sig.approximate);
}

#[test]
fn missing_header_is_an_error_and_timeline_is_sorted() {
    assert_eq!(build_report(&[]).unwrap_err(), AssembleError::NoHeader);
    let r = build_report(&drain_trial()).unwrap();
    let keys: Vec<_> = r.trial.timeline.iter().map(|e| e.t_ms).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
}

#[test]
fn unobserved_configured_flows_are_not_measured() {
    let r = build_report(&[header(2, 0)]).unwrap();
    assert_eq!(r.trial.flows.len(), 2);
    assert!(
        r.trial
            .flows
            .iter()
            .all(|f| f.outcome == Outcome::NotMeasured)
    );
    assert_eq!(r.trial.summary.tcp.not_measured, 2);
    assert!(
        r.trial
            .summary
            .notes
            .iter()
            .any(|n| n.contains("no trigger"))
    );
}

#[test]
fn aborted_trials_say_so() {
    let mut lines = drain_trial();
    lines.push(
        EventLine::new(Source::Orchestrator, EventName::TrialAborted, 0)
            .detail("interrupted by SIGINT"),
    );
    let r = build_report(&lines).unwrap();
    assert_eq!(r.trial.status, TrialStatus::Aborted);
    assert_eq!(
        r.trial.status_detail.as_deref(),
        Some("interrupted by SIGINT")
    );
}

#[test]
fn a_lost_client_leaves_its_unended_flows_not_measured() {
    let mut lines = vec![header(3, 0)];
    for f in ["tcp-0001", "tcp-0002", "tcp-0003"] {
        lines.push(client(EventName::FlowConnected, -1500, f));
        lines.push(client(EventName::FlowData, -1000, f).seq(0));
    }
    lines.push(EventLine::new(
        Source::Orchestrator,
        EventName::TriggerIssued,
        1000 * MS,
    ));
    // Seen before the client went: an unannounced FIN.
    lines.push(client(EventName::FlowEof, 500, "tcp-0001"));
    // Written by the client as its pod was deleted under it, not by the window's close.
    lines.push(client(EventName::FlowObservationEnd, 2_000, "tcp-0002"));
    let survived = build_report(&lines).unwrap();
    assert_eq!(
        survived.trial.flows[1].outcome,
        Outcome::SurvivedObservationWindow,
        "without the loss recorded the end reads as the window's"
    );
    lines.push(
        EventLine::new(
            Source::Orchestrator,
            EventName::ClientLost,
            1000 * MS + 1_900 * MS,
        )
        .detail("client pod drainwatch-client was deleted"),
    );
    let r = build_report(&lines).unwrap();
    let f = &r.trial.flows;
    assert_eq!(f.len(), 3);
    assert_eq!(f[0].outcome, Outcome::Severed, "what was seen stays");
    for g in &f[1..] {
        assert_eq!(g.outcome, Outcome::NotMeasured, "{}", g.id);
        assert_eq!(g.mechanism, Mechanism::None);
        assert_eq!(g.t_terminal_ms, None);
        let d = g.detail.as_deref().unwrap();
        assert!(
            d.contains("client was lost") && d.contains("drainwatch-client was deleted"),
            "{d}"
        );
    }
    assert_eq!(r.trial.summary.tcp.not_measured, 2);
    assert!(counts_are_consistent(&r.trial.summary));
}

#[test]
fn a_lost_shard_leaves_only_its_slice_not_measured() {
    let mut h = header(4, 0);
    if let Some(h) = h.header.as_mut() {
        h.config.clients = 2;
    }
    let mut lines = vec![h];
    for f in ["tcp-0001", "tcp-0002", "tcp-0003", "tcp-0004"] {
        lines.push(client(EventName::FlowConnected, -1500, f));
        lines.push(client(EventName::FlowData, -1000, f).seq(0));
    }
    lines.push(EventLine::new(
        Source::Orchestrator,
        EventName::TriggerIssued,
        1000 * MS,
    ));
    // The pod under test exits: the trial terminated something.
    let mut exited = EventLine::new(Source::K8s, EventName::ContainerTerminated, 1_050 * MS);
    exited.instance = Some("web-1".into());
    lines.push(exited);
    // Shard 2 (tcp-0003, tcp-0004) is deleted: its client ends its flows as it goes.
    let mut lost = EventLine::new(Source::Orchestrator, EventName::ClientLost, 2000 * MS)
        .detail("client pod ns/drainwatch-client-2 was deleted");
    lost.shard = Some(2);
    lines.push(lost);
    for f in ["tcp-0003", "tcp-0004"] {
        lines.push(client(EventName::FlowObservationEnd, 1_100, f));
    }
    // The window closes on the other shard's flows.
    for f in ["tcp-0001", "tcp-0002"] {
        lines.push(client(EventName::FlowObservationEnd, 9_000, f));
    }
    let r = build_report(&lines).unwrap();
    let f = &r.trial.flows;
    assert_eq!(f.len(), 4);
    assert_eq!(r.trial.status, TrialStatus::Completed);
    for g in &f[..2] {
        assert_eq!(g.outcome, Outcome::SurvivedObservationWindow, "{}", g.id);
    }
    for g in &f[2..] {
        assert_eq!(g.outcome, Outcome::NotMeasured, "{}", g.id);
        let d = g.detail.as_deref().unwrap();
        assert!(d.contains("drainwatch-client-2 was deleted"), "{d}");
    }
    assert_eq!(r.trial.summary.tcp.not_measured, 2);
    assert!(counts_are_consistent(&r.trial.summary));
}

#[test]
fn a_streamed_recording_without_its_end_line_was_cut_off() {
    let mut lines = drain_trial();
    if let Some(h) = lines[0].header.as_mut() {
        h.streamed = true;
    }
    let r = build_report(&lines).unwrap();
    assert_eq!(r.trial.status, TrialStatus::Aborted);
    assert_eq!(r.trial.status_detail.as_deref(), Some(super::CUT_OFF));
    // With its end line it is whole; a recording written in one piece never needs one.
    lines.push(EventLine::new(
        Source::Orchestrator,
        EventName::TrialEnded,
        9_000 * MS,
    ));
    let r = build_report(&lines).unwrap();
    assert_eq!(r.trial.status, TrialStatus::Completed);
    lines[0].header.as_mut().unwrap().streamed = false;
    lines.pop();
    assert_eq!(
        build_report(&lines).unwrap().trial.status,
        TrialStatus::Completed
    );
}

#[test]
fn relayed_client_lines_are_placed_and_watch_gaps_noted() {
    let mut lines = vec![header(1, 0)];
    let mut trig = EventLine::new(Source::Orchestrator, EventName::TriggerIssued, 1000 * MS);
    trig.wall = Some("2026-11-30T00:00:01Z".into());
    // A client pod on another kernel: emitted at its 5 ms, received at our 1002 ms and 1003 ms.
    for (ev, mono, at) in [
        (EventName::FlowConnected, 5, 1002),
        (EventName::FlowEof, 10, 1003),
    ] {
        let mut l = EventLine::new(Source::Client, ev, at * MS).flow("tcp-0001");
        l.mono_ns = Some(mono * MS);
        l.boot_id = Some("client-kernel".into());
        lines.push(l);
    }
    lines.push(trig);
    lines.push(EventLine::new(
        Source::K8s,
        EventName::WatchInterrupted,
        1001 * MS,
    ));
    let r = build_report(&lines).unwrap();
    let c = r.trial.clock.client.as_ref().unwrap();
    assert_eq!(c.mapping, Mapping::OffsetOneSided);
    // Offset = min(receive - emit) = min(997, 993) = 993 ms: the eof lands at 1003 ms (t = 3)
    // and the connect at 998 ms (t = -2), keeping the client's own 5 ms between them.
    let f = &r.trial.flows[0];
    assert_eq!((f.connected_t_ms, f.t_terminal_ms), (Some(-2), Some(3)));
    assert!(
        r.trial
            .timeline
            .iter()
            .any(|e| e.event == EventName::FlowTerminal && e.approximate)
    );
    assert!(
        r.trial
            .summary
            .notes
            .iter()
            .any(|n| n.starts_with("k8s watch: 1 interruption"))
    );
    // In-process lines (no boot id) leave the client clock out of the report.
    assert!(
        build_report(&[header(1, 0)])
            .unwrap()
            .trial
            .clock
            .client
            .is_none()
    );
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn arb_client_line() -> impl Strategy<Value = EventLine> {
        let events = prop::sample::select(vec![
            EventName::FlowConnected,
            EventName::FlowData,
            EventName::FlowBye,
            EventName::FlowGap,
            EventName::FlowEof,
            EventName::FlowSocketError,
            EventName::FlowSilence,
            EventName::FlowReadTimeout,
            EventName::FlowObservationEnd,
            EventName::FlowUnrecognised,
            EventName::FlowDialFailed,
            EventName::parse("flow_teleported"),
        ]);
        let flows = prop::sample::select(vec![
            "tcp-0001", "tcp-0002", "udp-0001", "udp-0002", "tcp-0099",
        ]);
        (
            events,
            flows,
            0i64..10_000,
            0u64..20,
            prop::sample::select(vec!["a", "b"]),
            prop::sample::select(vec!["ECONNRESET", "EPIPE", "ECONNREFUSED"]),
        )
            .prop_map(|(ev, flow, at, seq, inst, errno)| {
                let mut l = EventLine::new(Source::Client, ev, at * MS)
                    .flow(flow)
                    .seq(seq);
                l.instance = Some(inst.into());
                l.errno = Some(errno.into());
                l
            })
    }

    proptest! {
        /// Any stream of client events yields one record per flow, each with exactly one
        /// outcome, and counts that sum to their totals.
        #[test]
        fn every_flow_gets_one_outcome_and_counts_add_up(lines in prop::collection::vec(arb_client_line(), 0..60)) {
            let mut all = vec![header(2, 2)];
            all.extend(lines);
            let r = build_report(&all).unwrap();
            prop_assert!(counts_are_consistent(&r.trial.summary));
            let ids: std::collections::BTreeSet<_> = r.trial.flows.iter().map(|f| f.id.clone()).collect();
            prop_assert_eq!(ids.len(), r.trial.flows.len());
            let total = r.trial.summary.tcp.total + r.trial.summary.udp.total;
            prop_assert_eq!(total as usize, r.trial.flows.len());
            for f in &r.trial.flows {
                let timed = !matches!(f.outcome, Outcome::SurvivedObservationWindow | Outcome::NotMeasured);
                prop_assert_eq!(f.t_terminal_ms.is_some(), timed);
            }
            // Pure: the same lines give the same report.
            prop_assert_eq!(build_report(&all).unwrap(), r);
        }

        /// No input line, however broken, panics the event-line parser.
        #[test]
        fn event_line_parser_never_panics(s in ".*") {
            let _ = EventLine::parse(&s);
        }
    }
}

#[test]
fn flows_past_9999_are_listed_in_numeric_order() {
    let r = build_report(&[header(10_001, 2)]).unwrap();
    let ids: Vec<&str> = r.trial.flows.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids.len(), 10_003);
    assert_eq!(&ids[998..1001], ["tcp-0999", "tcp-1000", "tcp-1001"]);
    assert_eq!(
        &ids[9_998..10_003],
        ["tcp-9999", "tcp-10000", "tcp-10001", "udp-0001", "udp-0002"]
    );
}

/// The fuzz finding of 2026-12-02 (event_lines, out of memory): a header claiming 2,222,225
/// UDP flows made assembly list every one of them up front. A header above the plan's cap is a
/// named error, at the cap it assembles.
#[test]
fn a_header_claiming_more_flows_than_a_plan_allows_is_refused() {
    let lines = crate::event::seed_lines(include_str!(
        "../../../../fuzz/corpus/event_lines/flows-above-cap"
    ));
    assert_eq!(lines.len(), 1);
    let e = build_report(&lines).unwrap_err();
    assert_eq!(
        e,
        AssembleError::FlowsAboveCap {
            field: "udp_flows",
            count: 2_222_225
        }
    );
    assert!(e.to_string().contains("above the 100000 flows"), "{e}");

    let over = header(MAX_FLOWS_PER_PROTOCOL + 1, 0);
    assert!(matches!(
        build_report(&[over]),
        Err(AssembleError::FlowsAboveCap {
            field: "tcp_flows",
            ..
        })
    ));
    let at = build_report(&[header(MAX_FLOWS_PER_PROTOCOL, 0)]).unwrap();
    assert_eq!(at.trial.flows.len(), MAX_FLOWS_PER_PROTOCOL as usize);
}
