//! `drainwatch client --attach --protocol grpc` on loopback against a gRPC health server that
//! fails on purpose (`attach_grpc/server.rs`): SERVING loses nothing; UNAVAILABLE is
//! `grpc-unavailable` with the code on the record; NOT_SERVING is served (a draining server's answer), SERVICE_UNKNOWN `grpc-not-serving`; a server
//! gone under the call is the transport's `no-goaway`.

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

use grpc_server::{Fault, GrpcServer};
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
    assert!(count(&at["requests"], "ok") >= 4, "{at:#}");
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
