//! The WebSocket arm's fold: held connections are the observations, a close frame's code and
//! reason reach the connection record, and the ws-* mechanisms are failures.

use super::*;
use crate::attach::section::{ConnOutcome, FailureKind};
use crate::attach::tests::{client, config};
use crate::event::{EventLine, EventName};
use crate::shard::Losses;

fn ended(
    event: EventName,
    at_ms: i64,
    generation: u64,
    result: &str,
    close: Option<(u16, &str)>,
) -> EventLine {
    let mut l = client(event, at_ms, "ws-0001", generation);
    l.result = Some(result.into());
    l.close_code = close.map(|(c, _)| c);
    l.detail = close.map(|(_, r)| r.to_string());
    l
}

#[test]
fn a_websocket_arm_records_close_frames_and_counts_connections() {
    let lines = vec![
        client(EventName::AttachWindowStarted, 0, "ws-0001", 1),
        client(EventName::AttachConnOpened, 10, "ws-0001", 1),
        ended(
            EventName::AttachConnClosedGraceful,
            500,
            1,
            names::CLOSE_WS,
            Some((1001, "going away")),
        ),
        client(EventName::AttachConnReopened, 600, "ws-0001", 2),
        ended(
            EventName::AttachConnSevered,
            900,
            2,
            "ws-close-abnormal",
            Some((1011, "oops")),
        ),
        client(EventName::AttachConnReopened, 1000, "ws-0001", 3),
        ended(
            EventName::AttachConnSevered,
            1500,
            3,
            "ws-no-close-frame",
            None,
        ),
        client(EventName::AttachConnReopened, 1600, "ws-0001", 4),
        ended(
            EventName::AttachConnSevered,
            2600,
            4,
            "ws-pong-missing",
            None,
        ),
        ended(EventName::AttachConnOpenFailed, 2700, 5, "refused", None),
        client(EventName::AttachWindowEnded, 3000, "ws-0001", 1),
    ];
    let a = attach_section(
        &lines,
        &Losses::unsharded(&lines),
        &config(AttachProtocol::Websocket, 0),
        0,
    );
    assert_eq!(a.requests, None, "a WebSocket arm sends no requests");
    let c = &a.connections;
    assert_eq!(
        (
            c.total,
            c.graceful_close,
            c.severed,
            c.not_measured,
            c.reopened
        ),
        (5, 1, 3, 1, 3)
    );
    for m in [
        FailureMechanism::WsCloseAbnormal,
        FailureMechanism::WsNoCloseFrame,
        FailureMechanism::WsPongMissing,
    ] {
        assert_eq!(c.severed_by_mechanism.get(&m), Some(&1), "{m}");
    }
    let r = &a.connection_records;
    assert_eq!(r.len(), 5);
    assert_eq!(r[0].outcome, ConnOutcome::GracefulClose);
    assert_eq!(
        (r[0].close_code, r[0].close_reason.as_deref()),
        (Some(1001), Some("going away"))
    );
    assert_eq!(
        (r[1].close_code, r[1].close_reason.as_deref()),
        (Some(1011), Some("oops"))
    );
    // No close frame: no code, and no reason made up.
    assert_eq!(
        (r[2].close_code, r[2].close_reason.as_deref()),
        (None, None)
    );
    // Severed, abnormal close, pong missing, and the failed open: four failures, all of
    // connections; the graceful close is none.
    assert_eq!(a.failures.len(), 4);
    assert!(a.failures.iter().all(|f| f.kind == FailureKind::Connection));
    assert!(a.notes.iter().any(|n| n.contains("WebSocket arm")));
}

#[test]
fn the_ws_mechanisms_parse_back_and_older_records_lack_close_fields() {
    for m in FailureMechanism::ALL {
        assert_eq!(FailureMechanism::parse(m.as_str()), Some(m));
    }
    assert_eq!(
        FailureMechanism::parse("ws-no-close-frame"),
        Some(FailureMechanism::WsNoCloseFrame)
    );
    // A 1.3 connection record (no close fields) still reads, and writes back without them.
    let old = r#"{"flow_id":"tcp-0001","generation":1,"outcome":"graceful-close","result":"fin","opened_t_ms":1,"ended_t_ms":2}"#;
    let rec: section::ConnectionRecord = serde_json::from_str(old).unwrap();
    assert_eq!((rec.close_code, rec.close_reason.as_deref()), (None, None));
    assert_eq!(serde_json::to_string(&rec).unwrap(), old);
}
