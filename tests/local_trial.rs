//! `drainwatch run --platform local`, end to end: a real probe process, real sockets, real
//! SIGTERM and SIGKILL. One trial per arm serves several checks: outcomes, mechanisms, exit
//! code, schema validity and byte-identical replay.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use common::*;
use drainwatch::evidence::event::EventName;

fn trial(
    behavior: &str,
    grace: &str,
    extra: &[&str],
) -> (serde_json::Value, std::path::PathBuf, String) {
    let (tcp, udp, ready) = free_ports();
    let dir = temp_dir(&format!("local-{behavior}"));
    let (tcp, udp, ready) = (tcp.to_string(), udp.to_string(), ready.to_string());
    let mut args = vec![
        "run",
        "--platform",
        "local",
        "--drain-behavior",
        behavior,
        "--grace-period",
        grace,
        "--settle-seconds",
        "1",
        "--tcp-flows",
        "10",
        "--udp-flows",
        "3",
        "--tcp-port",
        &tcp,
        "--udp-port",
        &udp,
        "--ready-port",
        &ready,
        "--post-terminal-grace",
        "1",
        "--out",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = run(&args);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success(),
        "run failed ({:?}):\n{stderr}",
        out.status
    );
    let report = json(&dir.join("report.json"));
    assert_valid_report(&report);
    // The run directory's report.html is the page of its one trial.
    let typed: drainwatch::evidence::report::Report =
        serde_json::from_value(report.clone()).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("report.html")).unwrap(),
        drainwatch::evidence::html::trial_page(&typed)
    );
    assert_replay_identical(&dir, Some(&String::from_utf8_lossy(&out.stdout)));
    (report, dir, stderr)
}

fn timeline_index(report: &serde_json::Value, event: EventName) -> Option<usize> {
    report["trial"]["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .position(|e| e["event"] == event.as_str())
}

#[test]
fn drain_arm_drains_every_tcp_flow_with_bye_before_fin() {
    let (r, dir, stderr) = trial("drain", "4", &[]);
    for check in [
        "local-ports-free",
        "probe-events-delivering",
        "probe-ready",
        "flows-dialed",
        "tcp-flows-established",
        "udp-flows-replying",
    ] {
        assert!(
            stderr.contains(&format!("preflight [ ok ] {check}")),
            "{check} not reported:\n{stderr}"
        );
    }
    let tcp = flows_of(&r, "tcp");
    assert_eq!(tcp.len(), 10);
    for f in &tcp {
        assert_eq!(f["outcome"], "drained-clean-close", "{f}");
        assert_eq!(f["mechanism"], "fin-after-announcement");
        assert!(
            f["t_terminal_ms"].as_i64().unwrap() >= 1000,
            "drain window is 1 s: {f}"
        );
    }
    assert_eq!(r["trial"]["summary"]["tcp"]["drained"], 10);
    assert_eq!(r["trial"]["summary"]["container_exit_code"], 0);
    assert_eq!(r["trial"]["status"], "completed");
    // The bye reached the client before its FIN: the events show flow_bye then flow_eof.
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let pos = |ev: &str| {
        events.lines().position(|l| {
            l.contains(&format!("\"event\":\"{ev}\"")) && l.contains("\"flow_id\":\"tcp-0001\"")
        })
    };
    assert!(pos("flow_bye").unwrap() < pos("flow_eof").unwrap());
    // Same host, same clock: probe rows are exact and SIGTERM precedes the drain steps.
    assert_eq!(
        r["trial"]["clock"]["probe"]["mapping"],
        "same-host-monotonic"
    );
    assert!(
        timeline_index(&r, EventName::SigtermReceived)
            < timeline_index(&r, EventName::DrainStarted)
    );
    assert!(
        r["trial"]["summary"]["trigger_to_sigterm_ms"]
            .as_i64()
            .unwrap()
            < 100
    );
}

#[test]
fn exit_now_arm_severs_tcp_by_rst() {
    let (r, _, _) = trial("exit-now", "4", &[]);
    let (tcp, udp) = (flows_of(&r, "tcp"), flows_of(&r, "udp"));
    assert_eq!((tcp.len(), udp.len()), (10, 3));
    for f in tcp {
        assert_eq!(f["outcome"], "severed", "{f}");
        assert_eq!(f["mechanism"], "rst");
        assert_eq!(f["detail"], "econnreset");
    }
    for f in udp {
        assert_eq!(f["outcome"], "severed");
        assert_eq!(f["mechanism"], "icmp-unreachable");
    }
    assert_eq!(r["trial"]["summary"]["container_exit_code"], 0);
    assert!(
        r["trial"]["summary"]["trigger_to_container_terminated_ms"]
            .as_i64()
            .unwrap()
            < 1000
    );
}

#[test]
fn ignore_arm_is_severed_unannounced_by_sigkill_with_137() {
    let (r, _, _) = trial("ignore", "3", &[]);
    let tcp = flows_of(&r, "tcp");
    assert_eq!(tcp.len(), 10);
    for f in tcp {
        assert_eq!(f["outcome"], "severed", "{f}");
        // A killed process's sockets are closed by the kernel: a FIN with no bye, or a RST when
        // a ping was still unread in the probe's receive buffer (seen once under load).
        let m = f["mechanism"].as_str().unwrap();
        assert!(["fin-unannounced", "rst"].contains(&m), "{f}");
        assert!(f["t_terminal_ms"].as_i64().unwrap() >= 3000);
    }
    assert_eq!(r["trial"]["summary"]["container_exit_code"], 137);
    assert!(timeline_index(&r, EventName::SigkillSent).is_some());
    assert!(timeline_index(&r, EventName::SigtermIgnored).is_some());
}

#[test]
fn exit_now_without_forced_rst_is_a_plain_exit() {
    let (r, _, _) = trial("exit-now", "4", &["--exit-now-force-rst", "false"]);
    assert!(timeline_index(&r, EventName::TcpFlowOpenAtExit).is_some());
    let tcp = flows_of(&r, "tcp");
    assert_eq!(tcp.len(), 10);
    for f in tcp {
        assert_eq!(f["outcome"], "severed", "{f}");
        assert!(["fin-unannounced", "rst"].contains(&f["mechanism"].as_str().unwrap()));
    }
}
