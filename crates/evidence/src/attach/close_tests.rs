//! Whether a server's close was announced (schema 3.3): read from the close result the client
//! recorded, never invented for a line that has none, and rendered without calling a bare FIN
//! graceful.

use super::section::{CloseKind, ConnOutcome};
use super::tests::{client, config};
use super::*;
use crate::event::{EventLine, EventName, Source};
use crate::shard::Losses;

const MS: i64 = 1_000_000;

/// Two generations of one flow, the first closed with `result` (none: a line written before
/// the result was recorded), the second open at the window's end.
fn closed_with(protocol: AttachProtocol, flow: &str, result: Option<&str>) -> AttachReport {
    let mut lines = vec![
        EventLine::new(Source::Client, EventName::AttachWindowStarted, 0),
        client(EventName::AttachConnOpened, 10, flow, 1),
    ];
    let mut closed = client(EventName::AttachConnClosedGraceful, 3000, flow, 1);
    closed.result = result.map(String::from);
    lines.push(closed);
    lines.push(client(EventName::AttachConnReopened, 3001, flow, 2));
    lines.push(client(EventName::AttachConnObservationEnd, 5000, flow, 2));
    lines.push(EventLine::new(
        Source::Client,
        EventName::AttachWindowEnded,
        5000 * MS,
    ));
    attach_section(
        &lines,
        &Losses::unsharded(&lines),
        &config(protocol, 0),
        1000 * MS,
    )
}

#[test]
fn every_close_result_the_clients_write_is_announced_or_a_bare_fin() {
    let cases = [
        (
            AttachProtocol::Http,
            "http-0001",
            names::CLOSE_CONNECTION_HEADER,
            CloseKind::Announced,
        ),
        (
            AttachProtocol::Http,
            "http-0001",
            names::CLOSE_FIN_IDLE,
            CloseKind::UnannouncedFin,
        ),
        (
            AttachProtocol::Tcp,
            "tcp-0001",
            names::CLOSE_FIN,
            CloseKind::UnannouncedFin,
        ),
        (
            AttachProtocol::Websocket,
            "ws-0001",
            names::CLOSE_WS,
            CloseKind::Announced,
        ),
        (
            AttachProtocol::Http2,
            "h2-0001",
            names::CLOSE_GOAWAY,
            CloseKind::Announced,
        ),
        (
            AttachProtocol::Grpc,
            "grpc-0001",
            names::CLOSE_GOAWAY,
            CloseKind::Announced,
        ),
        (
            AttachProtocol::Http2,
            "h2-0001",
            names::CLOSE_FIN_IDLE,
            CloseKind::UnannouncedFin,
        ),
    ];
    assert_eq!(cases.len(), 7);
    for (protocol, flow, result, kind) in cases {
        let a = closed_with(protocol, flow, Some(result));
        let c = &a.connections;
        let announced = u32::from(kind == CloseKind::Announced);
        assert_eq!(
            (
                c.graceful_close,
                c.closed_announced,
                c.closed_unannounced_fin
            ),
            (1, Some(announced), Some(1 - announced)),
            "{result}"
        );
        assert_eq!(a.connection_records.len(), 2);
        assert_eq!(a.connection_records[0].close, Some(kind), "{result}");
        // Only a close says how it closed: the generation still open says nothing.
        assert_eq!(a.connection_records[1].close, None);
        assert_eq!(
            a.connection_records[1].outcome,
            ConnOutcome::SurvivedObservationWindow
        );
    }
}

#[test]
fn an_old_close_line_without_a_result_is_counted_closed_but_not_split() {
    let a = closed_with(AttachProtocol::Http, "http-0001", None);
    let c = &a.connections;
    assert_eq!(
        (
            c.graceful_close,
            c.closed_announced,
            c.closed_unannounced_fin
        ),
        (1, Some(0), Some(0))
    );
    assert_eq!(a.connection_records[0].close, None);
    let line = render::closed_phrase(c);
    assert_eq!(
        line,
        "1 closed by the server (0 announced, 0 by an unannounced FIN, 1 not-measured)"
    );
}

#[test]
fn a_severed_connection_has_no_close_kind() {
    let mut lines = vec![client(EventName::AttachConnOpened, 10, "tcp-0001", 1)];
    let mut cut = client(EventName::AttachConnSevered, 3000, "tcp-0001", 1);
    cut.result = Some("reset".into());
    lines.push(cut);
    let a = attach_section(
        &lines,
        &Losses::unsharded(&lines),
        &config(AttachProtocol::Tcp, 0),
        0,
    );
    assert_eq!(a.connection_records.len(), 1);
    assert_eq!(a.connection_records[0].close, None);
    assert_eq!(a.connections.closed_announced, Some(0));
    assert_eq!(a.connections.closed_unannounced_fin, Some(0));
}

#[test]
fn the_text_never_calls_a_bare_fin_graceful() {
    let a = closed_with(
        AttachProtocol::Http,
        "http-0001",
        Some(names::CLOSE_FIN_IDLE),
    );
    let text = render::text(&a);
    assert!(
        text.contains(
            "2 total: 1 closed by the server (0 announced, 1 by an unannounced FIN), 0 severed"
        ),
        "{text}"
    );
    assert!(!text.contains("graceful"), "{text}");
}

#[test]
fn a_report_older_than_the_split_renders_it_not_measured() {
    let json = serde_json::json!({
        "total": 3, "graceful_close": 2, "severed": 0, "survived_observation_window": 1,
        "not_measured": 0, "severed_by_mechanism": {}, "reopened": 1
    });
    let c: section::ConnectionCounts =
        serde_json::from_value(json).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((c.closed_announced, c.closed_unannounced_fin), (None, None));
    assert_eq!(
        render::closed_phrase(&c),
        "2 closed by the server (announced or by a bare FIN: not-measured)"
    );
    // Written back, the old report stays as it was: no invented split.
    let back = serde_json::to_value(&c).unwrap_or_default();
    assert!(back.get("closed_announced").is_none(), "{back}");
}
