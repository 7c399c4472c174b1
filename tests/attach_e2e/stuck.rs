//! A service that stops accepting on SIGTERM but keeps its listener (examples/stuck-shutdown.rs),
//! on the cluster: dials routed to a terminating pod before its endpoint leaves time out, so
//! `no-new-connection-failed` misses and `no-new-connection-refused` holds. The same proof on
//! loopback is tests/dial_timeouts.rs; here the dials go through the Service's ClusterIP.

use crate::common::{self, json};
use crate::support::*;

pub const STUCK: &str = "deployment/stuck-shutdown";

/// How many of the report's failed dials ended as `result`.
fn failed_dials(rep: &serde_json::Value, result: &str) -> u64 {
    rep["trial"]["attach"]["dials"]["failed_by_result"][result]
        .as_u64()
        .unwrap_or(0)
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn rollout_restart_of_stuck_shutdown_times_dials_out_and_misses_no_new_connection_failed() {
    let (kc, _lock) = cluster();
    example(&kc, STUCK);
    let before = workload_state(&kc, STUCK);
    let r = dw_run(
        &kc,
        "attach-stuck-rollout",
        STUCK,
        &[
            "--trigger",
            "rollout-restart",
            "--threshold",
            "no-new-connection-failed",
            "--threshold",
            "no-new-connection-refused",
        ],
    );
    assert_eq!(r.code, 1, "a missed --threshold exits 1: {}", r.stderr);
    assert!(
        r.stderr.contains("fail  run: no-new-connection-failed"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("pass  run: no-new-connection-refused"),
        "a dial that timed out is not a refusal: {}",
        r.stderr
    );
    let rep = json(&r.out.join("report.json"));
    common::assert_valid_report(&rep);
    assert_eq!(rep["trial"]["status"], "completed");
    let own = own_terminations(&rep);
    assert_eq!(own.len(), 2, "both old replicas terminated: {own:?}");
    assert!(
        failed_dials(&rep, "timeout") >= 1,
        "dials to the stuck pods timed out: {:#}",
        rep["trial"]["attach"]["dials"]
    );
    assert_eq!(failed_dials(&rep, "refused"), 0, "nothing refused a dial");
    assert_eq!(workload_state(&kc, STUCK), before);
}
