//! `drainwatch client --attach --protocol websocket` on loopback against a WebSocket server of
//! the test's own (tokio-tungstenite) that, after some pings on each connection, closes
//! gracefully with 1001, drops the TCP connection without a close frame, resets it, or stops
//! answering pings: each is recorded with its mechanism, and after a graceful close the
//! connection's replacement is measured too.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;
#[path = "attach_ws/server.rs"]
mod server;
// Shared with attach_client.rs, whose example-service helpers this file does not use.
#[allow(dead_code)]
#[path = "attach_client/support.rs"]
mod support;

use serde_json::Value;
use server::{Fault, WsServer};
use support::*;

/// Runs the client for `duration` with two flows and the prober against a server doing `fault`
/// after `after` pings; the finished report's `trial.attach`.
fn run(name: &str, fault: Fault, after: u32, duration: &str) -> Value {
    let dir = common::temp_dir(name);
    let s = WsServer::start(fault, after);
    let c = client_with(
        s.port,
        "websocket",
        2,
        duration,
        &dir,
        &["--dial-rate", "5", "--path", "/ws"],
    );
    let r = finish(c, &dir);
    r["trial"]["attach"].clone()
}

fn records(at: &Value) -> &Vec<Value> {
    at["connection_records"].as_array().unwrap()
}

fn failures(at: &Value) -> &Vec<Value> {
    at["failures"].as_array().unwrap()
}

#[test]
fn a_close_frame_1001_is_graceful_and_the_replacement_is_measured() {
    let at = run("ws-close", Fault::Close(1001), 3, "2s");
    assert_eq!(at["protocol"], "websocket");
    assert_eq!(
        at["requests"],
        Value::Null,
        "a WebSocket arm sends no requests"
    );
    let conns = &at["connections"];
    assert!(count(conns, "graceful_close") >= 2, "{at:#}");
    assert!(count(conns, "reopened") >= 1, "{at:#}");
    assert_eq!(count(conns, "severed"), 0, "{at:#}");
    assert_eq!(failures(&at).len(), 0, "{at:#}");
    let closed: Vec<&Value> = records(&at)
        .iter()
        .filter(|r| r["outcome"] == "graceful-close")
        .collect();
    assert!(!closed.is_empty(), "{at:#}");
    for r in closed {
        assert_eq!(r["result"], "ws-close", "{r:#}");
        assert_eq!(r["close_code"], 1001, "{r:#}");
        assert_eq!(r["close_reason"], "restarting", "{r:#}");
    }
    // The prober counts a dial served only when the handshake completed.
    let dials = &at["dials"];
    assert!(count(dials, "served") > 0, "{at:#}");
    assert_eq!(count(dials, "failed"), 0, "{at:#}");
    assert!(count(&dials["served_by_instance"], "ws-test") > 0, "{at:#}");
}

#[test]
fn an_abnormal_close_code_is_a_failure_with_its_code() {
    let at = run("ws-close-1011", Fault::Close(1011), 2, "2s");
    let by = &at["connections"]["severed_by_mechanism"];
    assert!(count(by, "ws-close-abnormal") >= 1, "{at:#}");
    let severed: Vec<&Value> = records(&at)
        .iter()
        .filter(|r| r["outcome"] == "severed")
        .collect();
    assert!(!severed.is_empty(), "{at:#}");
    for r in severed {
        assert_eq!(
            (&r["result"], &r["close_code"]),
            (&"ws-close-abnormal".into(), &1011.into()),
            "{r:#}"
        );
    }
}

#[test]
fn a_fin_without_a_close_frame_is_recorded() {
    let at = run("ws-fin", Fault::Fin, 2, "2s");
    let by = &at["connections"]["severed_by_mechanism"];
    assert!(count(by, "ws-no-close-frame") >= 1, "{at:#}");
    let f = failures(&at);
    assert!(!f.is_empty(), "{at:#}");
    assert!(
        f.iter().any(|f| f["kind"] == "connection"
            && f["mechanism"] == "ws-no-close-frame"
            && f["instance"] == "ws-test"),
        "{at:#}"
    );
    assert!(
        records(&at).iter().all(|r| r.get("close_code").is_none()),
        "{at:#}"
    );
}

#[test]
fn a_reset_is_recorded_with_its_errno() {
    let at = run("ws-reset", Fault::Reset, 2, "2s");
    let by = &at["connections"]["severed_by_mechanism"];
    assert!(count(by, "reset") >= 1, "{at:#}");
    assert!(
        failures(&at)
            .iter()
            .any(|f| f["mechanism"] == "reset" && f["errno"] == "ECONNRESET"),
        "{at:#}"
    );
}

#[test]
fn a_missing_pong_is_recorded() {
    let at = run("ws-silent", Fault::Silent, 2, "3s");
    let by = &at["connections"]["severed_by_mechanism"];
    assert!(count(by, "ws-pong-missing") >= 1, "{at:#}");
    assert!(
        failures(&at)
            .iter()
            .any(|f| f["kind"] == "connection" && f["mechanism"] == "ws-pong-missing"),
        "{at:#}"
    );
}
