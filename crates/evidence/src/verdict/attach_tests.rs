//! The attach thresholds measured from a report's `trial.attach`.

use super::CheckState;
use super::measure::check;
use crate::attach::{AttachProtocol, attach_section};
use crate::event::{EventLine, EventName, Source};
use crate::policy::threshold::parse;
use crate::report::Report;
use crate::shard::Losses;
use crate::test_fixtures::report as fixture;

pub(super) fn line(event: EventName, at_ms: i64, flow: &str, result: &str) -> EventLine {
    let mut l = EventLine::new(Source::Client, event, at_ms * 1_000_000).flow(flow);
    l.result = Some(result.into());
    l
}

pub(super) fn attach_report(protocol: AttachProtocol, lines: &[EventLine]) -> Report {
    let mut r = fixture("drain");
    let cfg = crate::attach::tests::config(protocol, 20);
    r.trial.attach = Some(attach_section(lines, &Losses::unsharded(lines), &cfg, 0));
    r
}

#[test]
fn no_request_failed_counts_failed_requests_and_names_them() {
    let good = attach_report(
        AttachProtocol::Http,
        &[
            line(EventName::AttachRequest, 1, "http-0001", "ok"),
            line(EventName::AttachRequest, 2, "http-0001", "ok"),
        ],
    );
    let t = parse("no-request-failed").unwrap();
    let c = check(&t, "trial-001", Some(&good));
    assert_eq!(c.state, CheckState::Held, "{c:?}");
    assert_eq!(c.message, "trial-001: 0 of 2 requests failed");
    assert_eq!((c.value, c.of), (Some(0), Some(2)));

    let bad = attach_report(
        AttachProtocol::Http,
        &[
            line(EventName::AttachRequest, 1, "http-0001", "ok"),
            line(EventName::AttachRequest, 2, "http-0001", "reset"),
            line(EventName::AttachRequest, 3, "http-0002", "refused"),
            line(EventName::AttachRequest, 4, "http-0002", "refused"),
        ],
    );
    let c = check(&t, "trial-002", Some(&bad));
    assert_eq!(c.state, CheckState::Missed);
    assert_eq!(
        c.message,
        "trial-002: 3 of 4 requests failed (reset 1, refused 2); the threshold is no failed request"
    );
    assert_eq!((c.value, c.of), (Some(3), Some(4)));
}

#[test]
fn no_new_connection_refused_reads_the_prober() {
    let t = parse("no-new-connection-refused").unwrap();
    let r = attach_report(
        AttachProtocol::Tcp,
        &[
            line(EventName::AttachDial, 1, "dial-000001", "served"),
            line(EventName::AttachDial, 2, "dial-000002", "refused"),
            line(EventName::AttachDial, 3, "dial-000003", "timeout"),
        ],
    );
    let c = check(&t, "trial-001", Some(&r));
    assert_eq!(c.state, CheckState::Missed);
    assert_eq!(
        c.message,
        "trial-001: 1 of 3 new connections refused (1 served, 2 failed in all); the threshold is no refused new connection"
    );
    let served = attach_report(
        AttachProtocol::Http,
        &[line(EventName::AttachDial, 1, "dial-000001", "served")],
    );
    assert_eq!(check(&t, "t", Some(&served)).state, CheckState::Held);
}

/// A prober whose dials only time out (a dead pod's address black-holes SYNs) misses
/// `no-new-connection-failed` and holds `no-new-connection-refused`: each name counts what it
/// says.
#[test]
fn dials_that_only_time_out_fail_no_new_connection_failed_and_not_refused() {
    let failed = parse("no-new-connection-failed").unwrap();
    let refused = parse("no-new-connection-refused").unwrap();
    let r = attach_report(
        AttachProtocol::Http,
        &[
            line(EventName::AttachDial, 1, "dial-000001", "served"),
            line(EventName::AttachDial, 2, "dial-000002", "timeout"),
            line(EventName::AttachDial, 3, "dial-000003", "timeout"),
        ],
    );
    let c = check(&failed, "trial-001", Some(&r));
    assert_eq!(c.state, CheckState::Missed, "{c:?}");
    assert_eq!(
        c.message,
        "trial-001: 2 of 3 new connections failed (timeout 2); the threshold is no failed new connection"
    );
    assert_eq!((c.value, c.of), (Some(2), Some(3)));
    let c = check(&refused, "trial-001", Some(&r));
    assert_eq!(c.state, CheckState::Held, "{c:?}");
    assert_eq!(
        c.message,
        "trial-001: 0 of 3 new connections refused (1 served, 2 failed in all)"
    );
    // Every kind of failure counts, each named.
    let mixed = attach_report(
        AttachProtocol::Tcp,
        &[
            line(EventName::AttachDial, 1, "dial-000001", "refused"),
            line(EventName::AttachDial, 2, "dial-000002", "reset"),
            line(EventName::AttachDial, 3, "dial-000003", "error"),
        ],
    );
    let c = check(&failed, "t", Some(&mixed));
    assert_eq!(c.state, CheckState::Missed);
    assert_eq!(
        c.measured.as_deref(),
        Some("3 of 3 new connections failed (reset 1, refused 1, error 1)")
    );
    let served = attach_report(
        AttachProtocol::Http,
        &[line(EventName::AttachDial, 1, "dial-000001", "served")],
    );
    let c = check(&failed, "t", Some(&served));
    assert_eq!(c.state, CheckState::Held);
    assert_eq!(c.message, "t: 0 of 1 new connections failed");
    // Not measured without a prober, as its sibling.
    let tcp = attach_report(AttachProtocol::Tcp, &[]);
    assert_eq!(
        check(&failed, "t", Some(&tcp)).state,
        CheckState::NotMeasured
    );
    let probe = fixture("drain");
    let c = check(&failed, "t", Some(&probe));
    assert_eq!(c.state, CheckState::NotMeasured);
    assert!(c.message.contains("probe"), "{}", c.message);
}

#[test]
fn what_was_not_measured_never_holds() {
    let req = parse("no-request-failed").unwrap();
    let dial = parse("no-new-connection-refused").unwrap();
    // A probe trial has no attach section.
    let probe = fixture("drain");
    for t in [&req, &dial] {
        let c = check(t, "trial-001", Some(&probe));
        assert_eq!(c.state, CheckState::NotMeasured, "{c:?}");
        assert!(c.message.contains("probe"), "{}", c.message);
    }
    // A TCP arm sends no requests; a prober that recorded nothing has no dials.
    let tcp = attach_report(AttachProtocol::Tcp, &[]);
    let c = check(&req, "t", Some(&tcp));
    assert_eq!(c.state, CheckState::NotMeasured);
    assert!(
        c.message.contains("tcp arm sends no requests"),
        "{}",
        c.message
    );
    let c = check(&dial, "t", Some(&tcp));
    assert_eq!(c.state, CheckState::NotMeasured);
    assert!(c.message.contains("recorded no attempt"), "{}", c.message);
    // An HTTP arm that recorded no request.
    let http = attach_report(AttachProtocol::Http, &[]);
    assert_eq!(check(&req, "t", Some(&http)).state, CheckState::NotMeasured);
    // An aborted trial is partial evidence.
    let mut aborted = attach_report(
        AttachProtocol::Http,
        &[line(EventName::AttachRequest, 1, "http-0001", "ok")],
    );
    aborted.trial.status = crate::report::TrialStatus::Aborted;
    assert_eq!(
        check(&req, "t", Some(&aborted)).state,
        CheckState::NotMeasured
    );
}

#[test]
fn no_ws_abnormal_close_holds_on_close_frames_and_names_the_abnormal_ends() {
    let t = parse("no-ws-abnormal-close").unwrap();
    assert_eq!(t.to_string(), "no-ws-abnormal-close");
    let mut closed = line(
        EventName::AttachConnClosedGraceful,
        5,
        "ws-0001",
        "ws-close",
    );
    closed.close_code = Some(1001);
    let good = attach_report(
        AttachProtocol::Websocket,
        &[
            line(EventName::AttachConnOpened, 1, "ws-0001", "ok"),
            line(EventName::AttachConnOpened, 1, "ws-0002", "ok"),
            closed.clone(),
            line(EventName::AttachConnObservationEnd, 9, "ws-0002", "ok"),
        ],
    );
    let c = check(&t, "trial-001", Some(&good));
    assert_eq!(c.state, CheckState::Held, "{c:?}");
    assert_eq!(
        c.message,
        "trial-001: 0 of 2 WebSocket connections ended abnormally; 1 closed with 1000/1001, 1 open at the window's end"
    );
    assert_eq!((c.value, c.of), (Some(0), Some(2)));

    let bad = attach_report(
        AttachProtocol::Websocket,
        &[
            line(EventName::AttachConnOpened, 1, "ws-0001", "ok"),
            line(EventName::AttachConnOpened, 1, "ws-0002", "ok"),
            line(EventName::AttachConnOpened, 1, "ws-0003", "ok"),
            line(
                EventName::AttachConnSevered,
                5,
                "ws-0001",
                "ws-no-close-frame",
            ),
            line(EventName::AttachConnSevered, 5, "ws-0002", "reset"),
            closed.clone().flow("ws-0003"),
        ],
    );
    let c = check(&t, "trial-002", Some(&bad));
    assert_eq!(c.state, CheckState::Missed, "{c:?}");
    assert_eq!((c.value, c.of), (Some(2), Some(3)));
    assert!(
        c.message
            .contains("2 of 3 WebSocket connections ended abnormally")
            && c.message.contains("ws-no-close-frame 1")
            && c.message.contains("reset 1")
            && c.message.ends_with(
                "the threshold is no WebSocket connection ended without a close frame 1000/1001 or failed to reopen"
            ),
        "{}",
        c.message
    );

    // Closed with 1001, then the reopen refused (the only replica gone): a connection lost.
    let mut refused = line(EventName::AttachConnOpenFailed, 7, "ws-0001", "refused");
    refused.seq = Some(2);
    let lost = attach_report(
        AttachProtocol::Websocket,
        &[
            line(EventName::AttachConnOpened, 1, "ws-0001", "ok"),
            closed.clone(),
            refused,
        ],
    );
    let c = check(&t, "trial-003", Some(&lost));
    assert_eq!(c.state, CheckState::Missed, "{c:?}");
    assert_eq!((c.value, c.of), (Some(1), Some(2)));
    assert!(c.message.contains("1 failed to (re)open"), "{}", c.message);

    // Not a WebSocket arm, or not an attached workload: not measured, never held.
    let http = attach_report(
        AttachProtocol::Http,
        &[line(EventName::AttachRequest, 1, "http-0001", "ok")],
    );
    assert_eq!(
        check(&t, "trial-003", Some(&http)).state,
        CheckState::NotMeasured
    );
    let probe = fixture("drain");
    assert_eq!(
        check(&t, "trial-004", Some(&probe)).state,
        CheckState::NotMeasured
    );
}

#[test]
fn the_http2_thresholds_read_resets_and_goaways() {
    let conn = |event: EventName, at: i64, flow: &str, result: Option<&str>| {
        let mut l = EventLine::new(Source::Client, event, at * 1_000_000)
            .flow(flow)
            .seq(1);
        l.result = result.map(str::to_string);
        l
    };
    let mut goaway = conn(EventName::AttachGoaway, 5, "h2-0001", None);
    goaway.last_stream_id = Some(3);
    goaway.h2_code = Some("NO_ERROR".into());
    let r = attach_report(
        AttachProtocol::Http2,
        &[
            conn(EventName::AttachConnOpened, 1, "h2-0001", None),
            conn(EventName::AttachConnOpened, 1, "h2-0002", None),
            line(EventName::AttachRequest, 2, "h2-0001", "ok"),
            line(EventName::AttachRequest, 3, "h2-0001", "rst-stream"),
            line(EventName::AttachRequest, 4, "h2-0002", "goaway-then-reset"),
            line(EventName::AttachRequest, 4, "h2-0002", "grpc-unavailable"),
            goaway,
            conn(
                EventName::AttachConnClosedGraceful,
                6,
                "h2-0001",
                Some("goaway"),
            ),
            conn(
                EventName::AttachConnSevered,
                6,
                "h2-0002",
                Some("no-goaway"),
            ),
        ],
    );
    let c = check(&parse("no-stream-reset").unwrap(), "trial-001", Some(&r));
    assert_eq!(c.state, CheckState::Missed, "{c:?}");
    assert_eq!((c.value, c.of), (Some(2), Some(4)));
    assert!(
        c.message.contains("rst-stream 1, goaway-then-reset 1"),
        "{c:?}"
    );
    let c = check(
        &parse("goaway-before-close").unwrap(),
        "trial-001",
        Some(&r),
    );
    assert_eq!(c.state, CheckState::Missed, "{c:?}");
    assert_eq!((c.value, c.of), (Some(1), Some(2)));

    let http = attach_report(
        AttachProtocol::Http,
        &[line(EventName::AttachRequest, 1, "http-0001", "ok")],
    );
    for t in ["no-stream-reset", "goaway-before-close"] {
        let c = check(&parse(t).unwrap(), "trial-002", Some(&http));
        assert_eq!(c.state, CheckState::NotMeasured, "{c:?}");
    }
}

#[test]
fn no_watch_cut_counts_the_watches_ended_without_a_status() {
    let watch = |event: EventName, at: i64, flow: &str, result: Option<&str>| {
        let mut l = EventLine::new(Source::Client, event, at * 1_000_000)
            .flow(flow)
            .seq(1);
        l.result = result.map(str::to_string);
        l
    };
    let with_watch = |lines: &[EventLine], held: bool| {
        let mut r = fixture("drain");
        let mut cfg = crate::attach::tests::config(AttachProtocol::Grpc, 0);
        cfg.grpc = Some(crate::attach::AttachGrpc {
            method: None,
            service: Some(String::new()),
            watch: held,
        });
        r.trial.attach = Some(attach_section(lines, &Losses::unsharded(lines), &cfg, 0));
        r
    };
    let mut status = watch(
        EventName::AttachGrpcWatchEnded,
        9,
        "grpc-0001",
        Some("status"),
    );
    status.grpc_code = Some("OK".into());
    let lines = [
        watch(EventName::AttachGrpcWatchOpened, 1, "grpc-0001", None),
        watch(
            EventName::AttachGrpcWatchStatus,
            5,
            "grpc-0001",
            Some("not-serving"),
        ),
        status,
        watch(EventName::AttachGrpcWatchOpened, 1, "grpc-0002", None),
        watch(
            EventName::AttachGrpcWatchEnded,
            8,
            "grpc-0002",
            Some("no-goaway"),
        ),
    ];
    let t = parse("no-watch-cut").unwrap();
    let c = check(&t, "trial-001", Some(&with_watch(&lines, true)));
    assert_eq!(c.state, CheckState::Missed, "{c:?}");
    assert_eq!((c.value, c.of), (Some(1), Some(2)));
    assert!(c.message.contains("no-goaway 1"), "{c:?}");
    let c = check(&t, "trial-001", Some(&with_watch(&lines[..3], true)));
    assert_eq!(c.state, CheckState::Held, "{c:?}");
    let c = check(&t, "trial-001", Some(&with_watch(&lines, false)));
    assert_eq!(c.state, CheckState::NotMeasured, "{c:?}");
    let c = check(&t, "trial-001", Some(&with_watch(&[], true)));
    assert_eq!(c.state, CheckState::NotMeasured, "{c:?}");
}
