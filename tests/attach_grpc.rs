//! `drainwatch client --attach --protocol grpc` on loopback against a gRPC health server that
//! fails on purpose (`attach_grpc/server.rs`): SERVING loses nothing; UNAVAILABLE is
//! `grpc-unavailable` with the code on the record; NOT_SERVING is served (a draining server's answer), SERVICE_UNKNOWN `grpc-not-serving`; a server
//! gone under the call is the transport's `no-goaway`. With `--grpc-watch` each connection
//! holds a Health/Watch: a server that says NOT_SERVING on it, sends GOAWAY and ends it with a
//! status drains it; RST_STREAM, a reset without GOAWAY, and GOAWAY then a reset cut it, each
//! with its mechanism.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;
#[allow(dead_code)]
#[path = "attach_grpc/server.rs"]
mod grpc_server;
#[allow(dead_code)]
#[path = "attach_client/support.rs"]
mod support;
#[allow(dead_code)]
#[path = "attach_ws/server.rs"]
mod ws_server;

use grpc_server::{Fault, GrpcServer, WatchFault};
use serde_json::Value;
use support::*;

fn run(fault: Fault, after: u32, name: &str) -> Value {
    let dir = common::temp_dir(name);
    let s = GrpcServer::start(fault, after);
    let c = client_with(s.port, "grpc", 2, "2s", &dir, &["--dial-rate", "5"]);
    let r = finish(c, &dir);
    assert_eq!(r["trial"]["config"]["attach"]["protocol"], "grpc");
    assert_eq!(r["trial"]["config"]["attach"]["grpc"]["service"], "");
    r["trial"]["attach"].clone()
}

fn failed_by(at: &Value, m: &str) -> u64 {
    count(&at["requests"]["failed_by_mechanism"], m)
}

#[test]
fn serving_health_checks_lose_nothing() {
    let at = run(Fault::Unavailable, u32::MAX, "grpc-good");
    assert!(count(&at["requests"], "ok") > 4, "{at:#}");
    assert_eq!(count(&at["requests"], "failed"), 0, "{at:#}");
    assert!(count(&at["dials"], "served") > 0, "{at:#}");
    assert_eq!(count(&at["dials"], "failed"), 0, "{at:#}");
}

#[test]
fn unavailable_is_grpc_unavailable_with_its_code() {
    let at = run(Fault::Unavailable, 3, "grpc-unavailable");
    assert!(failed_by(&at, "grpc-unavailable") > 0, "{at:#}");
    let f = at["failures"].as_array().unwrap();
    let req: Vec<&Value> = f.iter().filter(|f| f["kind"] == "request").collect();
    assert!(!req.is_empty(), "{at:#}");
    assert!(
        req.iter()
            .all(|f| f["mechanism"] == "grpc-unavailable" && f["grpc_code"] == "UNAVAILABLE"),
        "{at:#}"
    );
    // The server answers SERVING to the first 2 calls of each connection (`after` 3: from the
    // third on, UNAVAILABLE), so a connection that reached UNAVAILABLE was served twice before.
    // That the second connection also got its calls in is the machine's load (`>= 4` failed
    // once under a load of 6).
    assert!(count(&at["requests"], "ok") >= 2, "{at:#}");
}

#[test]
fn not_serving_is_an_answer_not_a_failure() {
    // A draining server answers NOT_SERVING on purpose while it keeps serving.
    let at = run(Fault::NotServing, 3, "grpc-not-serving");
    assert!(count(&at["requests"], "ok") > 4, "{at:#}");
    assert_eq!(count(&at["requests"], "failed"), 0, "{at:#}");
}

#[test]
fn service_unknown_is_grpc_not_serving() {
    let at = run(Fault::ServiceUnknown, 3, "grpc-service-unknown");
    assert!(failed_by(&at, "grpc-not-serving") > 0, "{at:#}");
    assert_eq!(
        count(&at["requests"], "failed"),
        failed_by(&at, "grpc-not-serving"),
        "{at:#}"
    );
}

#[test]
fn a_server_gone_under_the_call_is_the_transport_mechanism() {
    let at = run(Fault::Gone, 3, "grpc-gone");
    assert!(failed_by(&at, "no-goaway") > 0, "{at:#}");
    let sev = &at["connections"]["severed_by_mechanism"];
    assert!(count(sev, "no-goaway") > 0, "{at:#}");
    assert!(count(&at["connections"], "reopened") > 0, "{at:#}");
}

/// A run with `--grpc-watch` against a server ending each Watch as `fault` says; the report's
/// `trial.attach.watches`, and the Watch records that ended.
fn watched(fault: WatchFault, name: &str) -> (Value, Vec<Value>) {
    let dir = common::temp_dir(name);
    let s = GrpcServer::watching(fault);
    let c = client_with(
        s.port,
        "grpc",
        2,
        "2s",
        &dir,
        &["--dial-rate", "0", "--grpc-watch"],
    );
    let r = finish(c, &dir);
    assert_eq!(r["trial"]["config"]["attach"]["grpc"]["watch"], true);
    let w = r["trial"]["attach"]["watches"].clone();
    assert!(w.is_object(), "{:#}", r["trial"]["attach"]);
    assert!(!recorded(&dir, "attach_grpc_watch_opened").is_empty());
    let ended: Vec<Value> = w["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["ended_t_ms"].is_null())
        .cloned()
        .collect();
    (w, ended)
}

#[test]
fn a_watch_told_not_serving_then_ended_with_a_status_is_drained() {
    let (w, ended) = watched(WatchFault::Drain, "grpc-watch-drain");
    assert_eq!(count(&w, "cut"), 0, "{w:#}");
    assert!(count(&w, "drained") >= 1, "{w:#}");
    let drained: Vec<&Value> = ended.iter().filter(|r| r["outcome"] == "drained").collect();
    assert!(!drained.is_empty(), "{w:#}");
    for r in drained {
        assert_eq!(r["grpc_code"], "OK", "{r:#}");
        assert!(r["not_serving_t_ms"].is_i64(), "{r:#}");
        assert!(r["mechanism"].is_null(), "{r:#}");
        let statuses = r["statuses"].as_array().unwrap();
        assert_eq!(statuses.len(), 2, "{r:#}");
        assert_eq!(statuses[0]["status"], "serving");
        assert_eq!(statuses[1]["status"], "not-serving");
    }
    // The Watch is held again on the connection the flow reopens after the GOAWAY.
    let records = w["records"].as_array().unwrap();
    assert!(
        records.iter().any(|r| r["generation"].as_u64() > Some(1)),
        "{w:#}"
    );
}

/// The cut Watches, each asserted to carry `mechanism`.
fn cut_with(fault: WatchFault, name: &str, mechanism: &str) -> Vec<Value> {
    let (w, ended) = watched(fault, name);
    let cut: Vec<Value> = ended
        .into_iter()
        .filter(|r| r["outcome"] == "cut")
        .collect();
    assert!(!cut.is_empty(), "{w:#}");
    assert_eq!(count(&w, "cut"), cut.len() as u64, "{w:#}");
    for r in &cut {
        assert_eq!(r["mechanism"], mechanism, "{r:#}");
        assert!(r["grpc_code"].is_null(), "{r:#}");
    }
    assert_eq!(
        count(&w["cut_by_mechanism"], mechanism),
        cut.len() as u64,
        "{w:#}"
    );
    cut
}

#[test]
fn a_watch_reset_by_rst_stream_is_cut_as_rst_stream() {
    let cut = cut_with(WatchFault::RstStream, "grpc-watch-rst-stream", "rst-stream");
    for r in &cut {
        assert_eq!(r["h2_code"], "CANCEL", "{r:#}");
        assert!(r["within_goaway"].is_null(), "{r:#}");
    }
}

#[test]
fn a_connection_reset_without_goaway_cuts_the_watch_as_no_goaway() {
    let cut = cut_with(WatchFault::ExitRst, "grpc-watch-exit-rst", "no-goaway");
    for r in &cut {
        assert_eq!(r["errno"], "ECONNRESET", "{r:#}");
        assert!(r["within_goaway"].is_null(), "{r:#}");
    }
}

#[test]
fn a_reset_after_goaway_with_the_watch_open_is_goaway_then_reset() {
    let cut = cut_with(
        WatchFault::GoawayThenRst,
        "grpc-watch-goaway-rst",
        "goaway-then-reset",
    );
    for r in &cut {
        // The server took the Watch's stream (at or below the GOAWAY's last stream id) and
        // owed it an end.
        assert_eq!(r["within_goaway"], true, "{r:#}");
    }
}
