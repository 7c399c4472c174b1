//! The orchestrator killed with SIGKILL in the middle of a Kubernetes trial: `drainwatch
//! cleanup --run ID` replays the run's restore journal and the trial's namespace goes.
//!
//! `#[ignore]`d: `make e2e-k8s` runs it (`-- --ignored`) with `DRAINWATCH_E2E_KUBECONFIG` set
//! to the local cluster's admin kubeconfig; without it, it fails (nothing here skips).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Reaper, json, kubectl, temp_dir};
use drainwatch::evidence::journal::{self as record, Change, Closer};
use drainwatch::recorder::journal;

fn wait_for(file: &Path, needle: &str, child: &mut std::process::Child, limit: Duration) {
    let t = Instant::now();
    while !std::fs::read_to_string(file).is_ok_and(|s| s.contains(needle)) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before {needle} was in {}",
            file.display()
        );
        assert!(t.elapsed() < limit, "no {needle} within {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
#[ignore = "needs the local cluster; make e2e-k8s"]
fn sigkill_mid_trial_then_cleanup_removes_the_namespace_and_closes_the_journal() {
    let (kc, _lock) = common::cluster("e2e-k8s");
    let (out, state) = (temp_dir("k8s-sigkill"), temp_dir("k8s-sigkill-state"));
    let run = format!("20261201-231500-{:08x}", std::process::id());
    let mut cmd = Command::new(common::bin());
    cmd.args(["run", "--kubeconfig", kc.to_str().unwrap()])
        .args(["--drain-behavior", "ignore", "--grace-period", "30"])
        .args([
            "--tcp-flows",
            "2",
            "--udp-flows",
            "1",
            "--settle-seconds",
            "2",
        ])
        .args(["--ready-timeout", "90", "--run-id", &run])
        .arg("--out")
        .arg(&out)
        .env("DRAINWATCH_STATE_DIR", &state)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(image) = common::e2e_image() {
        cmd.args(["--image", &image]);
    }
    let mut child = Reaper(cmd.spawn().unwrap());
    wait_for(
        &out.join("events.jsonl"),
        "\"trigger_issued\"",
        &mut child.0,
        Duration::from_secs(180),
    );
    let jpath = journal::path_of(&state, &run);
    let entries = journal::read(&jpath).unwrap();
    let ns: Vec<String> = record::pending(&entries)
        .iter()
        .filter_map(|(_, c)| match c {
            Change::NamespaceCreated { namespace } => Some(namespace.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        ns.len(),
        1,
        "the trial's namespace is journalled: {entries:?}"
    );
    child.0.kill().unwrap(); // SIGKILL
    child.0.wait().unwrap();
    let got = kubectl(&kc, &["get", "ns", &ns[0], "-o", "name"]);
    assert!(got.status.success(), "the killed run left its namespace");

    let o = Command::new(common::bin())
        .args([
            "cleanup",
            "--run",
            &run,
            "--kubeconfig",
            kc.to_str().unwrap(),
        ])
        .env("DRAINWATCH_STATE_DIR", &state)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    eprintln!("{said}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success());
    assert!(
        said.contains(&format!("restored: namespace {} created", ns[0])),
        "{said}"
    );
    let entries = journal::read(&jpath).unwrap();
    assert!(record::pending(&entries).is_empty(), "{entries:?}");
    assert_eq!(record::closed(&entries), Some(Closer::Cleanup));
    // Deleting a namespace takes its pods' grace: a generous hang guard, no timing claim.
    let t = Instant::now();
    loop {
        let got = kubectl(&kc, &["get", "ns", &ns[0], "-o", "name"]);
        if !got.status.success() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(240),
            "namespace {} still there",
            ns[0]
        );
        std::thread::sleep(Duration::from_secs(2));
    }
    // The events written so far replay as aborted, saying why.
    let replay = temp_dir("k8s-sigkill-replay");
    let o = Command::new(common::bin())
        .args(["report", "--events"])
        .arg(out.join("events.jsonl"))
        .arg("--out")
        .arg(&replay)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&replay.join("report.json"));
    assert_eq!(r["trial"]["status"], "aborted");
    assert!(
        r["trial"]["status_detail"]
            .as_str()
            .unwrap()
            .contains("ended without its end events")
    );
}
