//! Ctrl-C mid-trial: the probe is cleaned up, the evidence so far is written with status
//! aborted, and the exit code is 130.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

#[test]
fn sigint_during_observation_keeps_partial_evidence_and_cleans_up() {
    let (tcp, udp, ready) = free_ports();
    let dir = temp_dir("interrupt");
    let mut cmd = Command::new(bin());
    cmd.args([
        "run",
        "--platform",
        "local",
        "--drain-behavior",
        "ignore",
        "--grace-period",
        "30",
        "--settle-seconds",
        "1",
        "--tcp-flows",
        "3",
        "--udp-flows",
        "2",
        "--tcp-port",
        &tcp.to_string(),
        "--udp-port",
        &udp.to_string(),
        "--ready-port",
        &ready.to_string(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let (child, triggered, log) = spawn_cmd_until_trigger(cmd);
    let mut child = Reaper(child);
    // The probe ignores the trigger for 30 s: the interrupt lands mid-observation.
    wait::until(
        wait::with_output("the trigger", &log),
        Duration::from_secs(60),
        || triggered.load(Ordering::SeqCst).then_some(()),
    );
    kill(Pid::from_raw(child.0.id() as i32), Signal::SIGINT).unwrap();
    let status = wait::until(
        wait::with_output("the run exits", &log),
        Duration::from_secs(60),
        || child.0.try_wait().unwrap(),
    );
    assert_eq!(status.code(), Some(130), "{}", log.lock().unwrap());
    let r = json(&dir.join("report.json"));
    assert_valid_report(&r);
    assert_eq!(r["trial"]["status"], "aborted");
    assert!(
        r["trial"]["status_detail"]
            .as_str()
            .unwrap()
            .contains("interrupted")
    );
    // The flows were alive when the window was cut: survived, not invented outcomes.
    let all = flows(&r);
    assert_eq!(all.len(), 3 + 2, "3 TCP and 2 UDP flows");
    for f in all {
        assert_eq!(f["outcome"], "survived-observation-window", "{f}");
    }
    // The probe was removed: its ports are free again.
    assert!(
        std::net::TcpListener::bind(("0.0.0.0", tcp)).is_ok(),
        "probe still holds its port"
    );
    assert_replay_identical(&dir, None);
}
