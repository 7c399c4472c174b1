//! A threshold means what its name says, proven on loopback with real sockets: the
//! `stuck-shutdown` example stops accepting on SIGTERM but keeps its listener open, so the
//! kernel drops new SYNs and the attach client's dials time out instead of being refused. That
//! run misses `no-new-connection-failed` and holds `no-new-connection-refused`. And a TCP dial
//! the kernel completed into an accept queue that the application never took is a failure,
//! not a served dial.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;
#[path = "attach_client/support.rs"]
#[allow(dead_code)] // the attach client tests' harness; this file uses part of it
mod support;

use common::*;
use drainwatch::evidence::policy::Policy;
use drainwatch::evidence::report::Report;
use drainwatch::evidence::verdict::{self, CheckState, Decision, ThresholdDecision, TrialEvidence};
use support::*;

#[test]
fn dials_to_a_stuck_listener_time_out_failing_no_new_connection_failed_only() {
    let dir = temp_dir("attach-stuck");
    let (stuck, port) = Service::start("stuck-shutdown", "stuck-a", 0, 0);
    // Long enough that dials after SIGTERM are recorded on a loaded machine; the test waits
    // for events, never for a time.
    let c = client(port, "http", 2, "8s", &dir);
    wait_for_events(&dir, &["attach_dial", "\"result\":\"served\""], 3);
    wait_for_events(&dir, &["attach_request", "\"result\":\"ok\""], 4);
    stuck.sigterm();
    wait_for_events(&dir, &["attach_dial", "\"result\":\"timeout\""], 2);
    let r = finish(c, &dir);
    let at = &r["trial"]["attach"];
    let dials = &at["dials"];
    assert!(count(&dials["failed_by_result"], "timeout") >= 2, "{at:#}");
    assert_eq!(
        count(dials, "failed"),
        count(&dials["failed_by_result"], "timeout"),
        "every failed dial timed out: {at:#}"
    );
    assert!(
        dials["failed_by_result"].get("refused").is_none(),
        "nothing refused a dial: {at:#}"
    );
    assert!(count(dials, "served") >= 3, "{at:#}");
    // The held connections were accepted before SIGTERM and go on being served.
    assert_eq!(count(&at["requests"], "failed"), 0, "{at:#}");
    let failures = at["failures"].as_array().unwrap();
    assert!(!failures.is_empty(), "{at:#}");
    assert!(
        failures
            .iter()
            .all(|f| f["kind"] == "dial" && f["mechanism"] == "timeout"),
        "{at:#}"
    );

    // The verdict, as a policy arm with these thresholds judges this report.
    let report: Report = serde_json::from_value(r).unwrap();
    let policy = Policy::parse(
        "version = 1\n[[arm]]\nname = \"stuck\"\nthresholds = [\"no-new-connection-failed\", \"no-new-connection-refused\", \"no-request-failed\"]\n",
    )
    .unwrap();
    let trials = [TrialEvidence {
        id: "trial-001".into(),
        report_path: "report.json".into(),
        report: Some(report),
    }];
    let v = verdict::evaluate(&policy, "stuck.toml", |_| &trials);
    assert_eq!(v.verdict, Decision::Fail);
    let ts = &v.arms[0].thresholds;
    assert_eq!(ts.len(), 3);
    let by: Vec<(&str, ThresholdDecision)> =
        ts.iter().map(|t| (t.name.as_str(), t.verdict)).collect();
    assert_eq!(
        by,
        [
            ("no-new-connection-failed", ThresholdDecision::Fail),
            ("no-new-connection-refused", ThresholdDecision::Pass),
            ("no-request-failed", ThresholdDecision::Pass),
        ]
    );
    let failed = &ts[0].checks;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].state, CheckState::Missed);
    assert!(
        failed[0]
            .message
            .contains("new connections failed (timeout "),
        "{}",
        failed[0].message
    );
    let refused = &ts[1].checks;
    assert_eq!(refused.len(), 1);
    assert!(
        refused[0].message.contains(": 0 of "),
        "{}",
        refused[0].message
    );
}

#[test]
fn a_tcp_dial_the_application_never_took_is_reset_not_served() {
    let dir = temp_dir("attach-untaken");
    // A listener that never accepts: the kernel completes every handshake into its queue.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let c = client_with(port, "tcp", 0, "6s", &dir, &["--dial-rate", "20"]);
    // Dials queued now are still held (a hold lasts 1 s) when the listener closes.
    wait_for_events(&dir, &["attach_dial", "\"result\":\"served\""], 1);
    drop(listener);
    wait_for_events(&dir, &["attach_dial", "\"result\":\"refused\""], 1);
    let r = finish(c, &dir);
    let dials = &r["trial"]["attach"]["dials"];
    let reset = count(&dials["failed_by_result"], "reset");
    assert!(reset >= 1, "the queued dials were reset: {dials:#}");
    let records = recorded(&dir, "attach_dial");
    let resets: Vec<&serde_json::Value> =
        records.iter().filter(|l| l["result"] == "reset").collect();
    assert_eq!(resets.len() as u64, reset, "{dials:#}");
    assert!(
        resets.iter().all(|l| l["errno"] == "ECONNRESET"),
        "{resets:#?}"
    );
}
