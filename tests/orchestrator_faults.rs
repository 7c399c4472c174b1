//! The orchestrator's own durability, on the local platform: killed with SIGKILL mid-trial
//! (the events written so far replay to an aborted report, and `drainwatch cleanup` replays
//! the restore journal: the probe it spawned is gone, the journal closed), and `--out` filling
//! up (a named error that says what was kept and what was lost, no partial report).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use common::*;
use drainwatch::evidence::journal::{self as record, Change, Closer, Entry};
use drainwatch::recorder::journal;

/// A run id unique to this test process and `n`.
fn run_id(n: u8) -> String {
    format!(
        "20261201-230000-{:06x}{n:02x}",
        std::process::id() & 0xff_ffff
    )
}

fn local_run(out: &Path, state: &Path, run: &str, behavior: &str) -> Child {
    let (tcp, udp, ready) = free_ports();
    Command::new(bin())
        .args(["run", "--platform", "local", "--drain-behavior", behavior])
        .args(["--grace-period", "60", "--settle-seconds", "1"])
        .args(["--tcp-flows", "2", "--udp-flows", "1"])
        .args([
            "--tcp-port",
            &tcp.to_string(),
            "--udp-port",
            &udp.to_string(),
        ])
        .args(["--ready-port", &ready.to_string(), "--run-id", run])
        .arg("--out")
        .arg(out)
        .env("DRAINWATCH_STATE_DIR", state)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn cleanup(state: &Path, run: &str) -> Output {
    let o = Command::new(bin())
        .args(["cleanup", "--run", run])
        .env("DRAINWATCH_STATE_DIR", state)
        .output()
        .unwrap();
    eprintln!(
        "cleanup: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Waits (hang guard only) until `file` holds `needle`, the run still going.
fn wait_for(file: &Path, needle: &str, child: &mut Child) {
    wait::until(
        format_args!("{needle} in {}", file.display()),
        Duration::from_secs(120),
        || {
            assert!(
                child.try_wait().unwrap().is_none(),
                "the run ended before {needle} was in {}",
                file.display()
            );
            std::fs::read_to_string(file)
                .is_ok_and(|s| s.contains(needle))
                .then_some(())
        },
    );
}

/// Whether `pid` runs (a zombie has exited).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

fn replay(events: &Path, dir: &Path) -> serde_json::Value {
    let o = Command::new(bin())
        .args(["report", "--events"])
        .arg(events)
        .arg("--out")
        .arg(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    json(&dir.join("report.json"))
}

#[test]
fn sigkill_mid_trial_leaves_a_journal_cleanup_replays_and_events_that_replay_aborted() {
    let (out, state) = (temp_dir("sigkill-out"), temp_dir("sigkill-state"));
    let run = run_id(1);
    // The probe ignores SIGTERM for its 60 s grace: it is mid-trial when the orchestrator dies.
    let mut child = local_run(&out, &state, &run, "ignore");
    let events = out.join("events.jsonl");
    wait_for(&events, "\"trigger_issued\"", &mut child);
    let jpath = journal::path_of(&state, &run);
    let entries = journal::read(&jpath).unwrap();
    let probes: Vec<i32> = record::pending(&entries)
        .iter()
        .filter_map(|(_, c)| match c {
            Change::ProcessSpawned { pid, .. } => Some(*pid),
            _ => None,
        })
        .collect();
    assert_eq!(probes.len(), 1, "the probe is journalled: {entries:?}");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let o = cleanup(&state, &run);
    assert!(o.status.success());
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("restored: probe process pid"), "{said}");
    assert!(!running(probes[0]), "probe pid {} still runs", probes[0]);
    let entries = journal::read(&jpath).unwrap();
    assert!(record::pending(&entries).is_empty(), "{entries:?}");
    assert_eq!(record::closed(&entries), Some(Closer::Cleanup));
    assert!(matches!(entries.last(), Some(Entry::Closed { .. })));
    // Idempotent: a second cleanup finds nothing left to do, and touches no cluster.
    let again = cleanup(&state, &run);
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).contains("restored already"));

    let r = replay(&events, &temp_dir("sigkill-replay"));
    assert_valid_report(&r);
    assert_eq!(r["trial"]["status"], "aborted");
    let detail = r["trial"]["status_detail"].as_str().unwrap();
    assert!(detail.contains("ended without its end events"), "{detail}");
    assert!(
        !out.join("report.json").exists(),
        "no report pretends to be complete"
    );
}

/// A small tmpfs, unmounted (and its directory removed) when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: PathBuf, size: &str) -> Self {
        assert!(
            Command::new("id")
                .arg("-u")
                .output()
                .is_ok_and(|o| o.stdout.starts_with(b"0\n")),
            "mounting a tmpfs needs root (make test runs as root here)"
        );
        std::fs::create_dir_all(&dir).unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(st.success(), "mount tmpfs on {}", dir.display());
        Self(dir)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn out_filling_up_ends_the_run_with_a_named_error_saying_what_was_kept_and_lost() {
    let fs = Tmpfs::mount(temp_dir("full-out").join("mnt"), "256k");
    // All but two pages taken: the trial's events (about 11 KiB) cannot all fit.
    let filler = fs.0.join("filler");
    std::fs::write(&filler, vec![0u8; 256 * 1024 - 8 * 1024]).unwrap();
    let out = fs.0.join("run");
    let state = temp_dir("full-state");
    let run = run_id(2);
    let child = local_run(&out, &state, &run, "drain");
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("events.jsonl after"), "{err}");
    assert!(err.contains("kept:") && err.contains("lost:"), "{err}");
    assert!(!out.join("report.json").exists(), "no partial report");
    assert!(
        !out.join("summary.json").exists(),
        "no summary of a run that failed"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        leftovers,
        vec!["events.jsonl".to_string()],
        "only the events"
    );
    // What was kept is whole lines, and replays to an aborted report.
    std::fs::remove_file(&filler).unwrap();
    let r = replay(&out.join("events.jsonl"), &temp_dir("full-replay"));
    assert_eq!(r["trial"]["status"], "aborted");
    // The probe was ended by teardown: the journal had nothing left and was removed.
    assert!(!journal::path_of(&state, &run).exists());
}
