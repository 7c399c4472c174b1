//! The WebSocket example services (examples/ws-good.rs, ws-bad.rs) on loopback, measured by
//! `drainwatch client --attach --protocol websocket`: on SIGTERM ws-good ends every held
//! connection with a close frame 1001 (graceful, nothing lost; the replacements open on the
//! second replica), ws-bad exits at once and every connection ends without a close frame.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;
// Shared with attach_client.rs: the example services as child processes, the client.
#[allow(dead_code)]
#[path = "attach_client/support.rs"]
mod support;

use std::time::Duration;

use serde_json::Value;
use support::*;

fn records(at: &Value) -> Vec<Value> {
    at["connection_records"].as_array().unwrap().clone()
}

#[test]
fn ws_good_closes_every_connection_with_1001_and_loses_nothing() {
    let dir = common::temp_dir("ws-good");
    let (mut a, port) = Service::start("ws-good", "ws-good-a", 0, 1);
    let c = client_with(
        port,
        "websocket",
        3,
        // Long enough for every step below on a loaded 2-core machine (three opens, a second
        // replica started, a's drain and the three reopens): at 6 s it once ended first.
        "15s",
        &dir,
        &["--dial-rate", "0", "--path", "/ws"],
    );
    // Every held connection is on replica a before replica b shares the port.
    wait_for_events(&dir, &["attach_conn_opened", "ws-good-a"], 3);
    let (_b, port_b) = Service::start("ws-good", "ws-good-b", port, 1);
    assert_eq!(port_b, port);
    a.sigterm();
    assert_eq!(a.wait(Duration::from_secs(15)), Some(0), "ws-good exits 0");
    let r = finish(c, &dir);
    let at = &r["trial"]["attach"];
    assert_eq!(at["failures"].as_array().unwrap().len(), 0, "{at:#}");
    let conns = &at["connections"];
    assert_eq!(count(conns, "severed"), 0, "{at:#}");
    assert!(count(conns, "reopened") >= 3, "{at:#}");
    let closed: Vec<Value> = records(at)
        .into_iter()
        .filter(|r| r["outcome"] == "graceful-close")
        .collect();
    assert_eq!(closed.len(), 3, "the three connections on a: {at:#}");
    for r in &closed {
        assert_eq!(
            (&r["result"], &r["close_code"], &r["close_reason"]),
            (&"ws-close".into(), &1001.into(), &"going away".into()),
            "{r:#}"
        );
    }
}

#[test]
fn ws_bad_ends_every_connection_without_a_close_frame() {
    let dir = common::temp_dir("ws-bad");
    let (mut a, port) = Service::start("ws-bad", "ws-bad-a", 0, 0);
    let c = client_with(
        port,
        "websocket",
        3,
        "3s",
        &dir,
        &["--dial-rate", "0", "--path", "/ws"],
    );
    wait_for_events(&dir, &["attach_conn_opened", "ws-bad-a"], 3);
    a.sigterm();
    assert_eq!(a.wait(Duration::from_secs(5)), Some(0));
    let r = finish(c, &dir);
    let at = &r["trial"]["attach"];
    let f = at["failures"].as_array().unwrap();
    let severed: Vec<&Value> = f
        .iter()
        .filter(|f| f["kind"] == "connection" && f["instance"] == "ws-bad-a")
        .collect();
    assert_eq!(severed.len(), 3, "each held connection: {at:#}");
    for f in severed {
        let m = f["mechanism"].as_str().unwrap();
        assert!(m == "ws-no-close-frame" || m == "reset", "{f:#}");
    }
    assert!(
        records(at).iter().all(|r| r.get("close_code").is_none()),
        "no close frame: {at:#}"
    );
}

#[test]
fn a_reopen_that_fails_after_a_graceful_close_is_a_lost_connection() {
    use drainwatch::evidence::policy::Policy;
    use drainwatch::evidence::report::Report;
    use drainwatch::evidence::verdict::{self, CheckState, Decision, TrialEvidence};
    // One replica only: it closes every held connection with 1001 on SIGTERM and exits, and
    // each reopen is refused, as when a rollout leaves no endpoint. The closes were graceful;
    // the connections were lost all the same, and no-ws-abnormal-close must see it.
    let dir = common::temp_dir("ws-good-alone");
    let (mut a, port) = Service::start("ws-good", "ws-good-alone", 0, 1);
    let c = client_with(
        port,
        "websocket",
        2,
        "6s",
        &dir,
        &["--dial-rate", "0", "--path", "/ws"],
    );
    wait_for_events(&dir, &["attach_conn_opened", "ws-good-alone"], 2);
    a.sigterm();
    assert_eq!(a.wait(Duration::from_secs(15)), Some(0), "ws-good exits 0");
    let r = finish(c, &dir);
    let at = &r["trial"]["attach"];
    let opens: Vec<&Value> = at["failures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "connection" && f["mechanism"] == "refused")
        .collect();
    assert!(!opens.is_empty(), "a refused reopen: {at:#}");
    assert_eq!(count(&at["connections"], "severed"), 0, "{at:#}");
    let report: Report = serde_json::from_value(r).unwrap();
    let policy = Policy::parse(
        "version = 1\n[[arm]]\nname = \"ws\"\nthresholds = [\"no-ws-abnormal-close\"]\n",
    )
    .unwrap();
    let trials = [TrialEvidence {
        id: "trial-001".into(),
        report_path: "report.json".into(),
        report: Some(report),
    }];
    let v = verdict::evaluate(&policy, "ws.toml", |_| &trials);
    assert_eq!(v.verdict, Decision::Fail, "{:?}", v.missed());
    let checks = &v.arms[0].thresholds[0].checks;
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].state, CheckState::Missed);
    assert!(
        checks[0].message.contains("failed to (re)open"),
        "{}",
        checks[0].message
    );
}
