//! `run --platform local --clients N`: the flows run in N real `drainwatch client` child
//! processes against a real probe on loopback; their events are merged into one trial.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

fn base_args(ports: (u16, u16, u16), dir: &std::path::Path) -> Vec<String> {
    let (tcp, udp, ready) = ports;
    [
        "run",
        "--platform",
        "local",
        "--settle-seconds",
        "1",
        "--tcp-port",
        &tcp.to_string(),
        "--udp-port",
        &udp.to_string(),
        "--ready-port",
        &ready.to_string(),
        "--post-terminal-grace",
        "1",
        "--out",
        dir.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn three_clients_hold_exactly_the_ids_of_one_and_every_tcp_flow_drains() {
    let dir = temp_dir("sharded-drain");
    let mut args = base_args(free_ports(), &dir);
    args.extend(
        [
            "--drain-behavior",
            "drain",
            "--grace-period",
            "4",
            "--tcp-flows",
            "30",
            "--udp-flows",
            "30",
            "--clients",
            "3",
        ]
        .map(String::from),
    );
    let out = Command::new(bin()).args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "run failed ({:?}):\n{stderr}",
        out.status
    );
    for check in [
        "flows-dialed",
        "tcp-flows-established",
        "udp-flows-replying",
    ] {
        assert!(
            stderr.contains(&format!("preflight [ ok ] {check}")),
            "{check} not reported:\n{stderr}"
        );
    }
    let r = json(&dir.join("report.json"));
    assert_valid_report(&r);
    assert_eq!(r["trial"]["config"]["clients"], 3);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for f in flows(&r) {
        *seen
            .entry(f["id"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    let expected: BTreeMap<String, usize> = (1..=30)
        .flat_map(|i| [format!("tcp-{i:04}"), format!("udp-{i:04}")])
        .map(|id| (id, 1))
        .collect();
    assert_eq!(seen, expected, "every id exactly once, none other");
    let tcp = flows_of(&r, "tcp");
    assert_eq!(tcp.len(), 30);
    for f in tcp {
        assert_eq!(f["outcome"], "drained-clean-close", "{f}");
    }
    // Each child was started for its own slice and named in the evidence.
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    for slice in [
        "client 1 of 3",
        "tcp-0001..tcp-0010",
        "tcp-0011..tcp-0020",
        "tcp-0021..tcp-0030",
    ] {
        assert!(events.contains(slice), "{slice} not in events.jsonl");
    }
    assert_replay_identical(&dir, Some(&String::from_utf8_lossy(&out.stdout)));
}

/// Runs `drainwatch args` under a lowered open-file hard limit (lowering needs no privilege).
fn run_with_nofile(hard: u32, args: &[String]) -> std::process::Output {
    let limit = format!("--nofile={hard}:{hard}");
    Command::new("prlimit")
        .arg(limit)
        .arg(bin())
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn the_open_file_limit_is_checked_per_client_process_and_names_the_clients_needed() {
    let dir = temp_dir("sharded-limits");
    let mut args = base_args(free_ports(), &dir);
    args.extend(
        [
            "--drain-behavior",
            "exit-now",
            "--grace-period",
            "2",
            "--tcp-flows",
            "100",
            "--udp-flows",
            "100",
        ]
        .map(String::from),
    );
    // 200 flows in one process need 264 descriptors: refused before anything starts, naming N.
    let out = run_with_nofile(200, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("hard RLIMIT_NOFILE is 200"), "{err}");
    assert!(err.contains("use --clients 2 or more"), "{err}");
    assert!(!dir.join("report.json").exists());
    // Two processes of 50+50 each fit under the same limit: the trial runs and reports.
    args.extend(["--clients", "2"].map(String::from));
    let out = run_with_nofile(200, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{err}", out.status);
    let r = json(&dir.join("report.json"));
    assert_valid_report(&r);
    assert_eq!(r["trial"]["config"]["clients"], 2);
    assert_eq!(flows(&r).len(), 200);
    // Not enough even sharded: the message names how many would fit.
    let n = args.len();
    args[n - 1] = "2".into();
    // The same --out holds the run above: emptied first, as a rerun into it must ask.
    args.push("--clean-out".into());
    let out = run_with_nofile(120, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("over 2 client process(es) put 100 flows in one process"),
        "{err}"
    );
    assert!(err.contains("use --clients 4 or more"), "{err}");
}

/// Pids of `parent`'s children whose command line is a `drainwatch client`.
fn client_children(parent: u32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the parenthesised command: state, ppid, ...
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else {
            continue;
        };
        let ppid: Option<u32> = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let is_client = cmd.split(|b| *b == 0).any(|a| a == b"client");
        if ppid == Some(parent) && is_client {
            out.push(pid);
        }
    }
    out
}

fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')),
        Err(_) => false,
    }
}

#[test]
fn sigint_with_two_clients_leaves_no_child_and_keeps_the_partial_report() {
    let dir = temp_dir("sharded-interrupt");
    let ports = free_ports();
    let mut args = base_args(ports, &dir);
    args.extend(
        [
            "--drain-behavior",
            "ignore",
            "--grace-period",
            "30",
            "--tcp-flows",
            "4",
            "--udp-flows",
            "4",
            "--clients",
            "2",
        ]
        .map(String::from),
    );
    let mut cmd = Command::new(bin());
    cmd.args(&args);
    let mut run = Logged::spawn(cmd);
    let parent = run.child.id();
    // Both client processes run and the trigger was issued (the probe ignores it for 30 s).
    let clients = wait::until(
        wait::with_output("two client processes and the trigger", &run.log),
        Duration::from_secs(60),
        || {
            let c = client_children(parent);
            (c.len() == 2 && run.triggered.load(Ordering::SeqCst)).then_some(c)
        },
    );
    kill(Pid::from_raw(parent as i32), Signal::SIGINT).unwrap();
    let (status, err) = run.exit(Duration::from_secs(60));
    assert_eq!(status.code(), Some(130), "{err}");
    wait::until(
        "no client process outlives the run",
        Duration::from_secs(5),
        || (!clients.iter().any(|p| alive(*p))).then_some(()),
    );
    let r = json(&dir.join("report.json"));
    assert_valid_report(&r);
    assert_eq!(r["trial"]["status"], "aborted");
    assert_eq!(flows(&r).len(), 8);
    // The children closed their windows on SIGTERM: every flow has its end, none invented.
    for f in flows(&r) {
        assert_eq!(f["outcome"], "survived-observation-window", "{f}");
    }
    assert!(std::net::TcpListener::bind(("0.0.0.0", ports.0)).is_ok());
    assert_replay_identical(&dir, None);
}

#[test]
fn bad_clients_values_are_refused_by_name() {
    for (args, needle) in [
        (
            vec!["run", "--platform", "local", "--clients", "0"],
            "--clients must be at least 1",
        ),
        (
            vec![
                "run",
                "--platform",
                "local",
                "--tcp-flows",
                "2",
                "--udp-flows",
                "1",
                "--clients",
                "3",
            ],
            "--clients 3 is more than the 2 flows",
        ),
        (
            vec![
                "run",
                "--platform",
                "kubernetes",
                "--client-placement",
                "spread",
            ],
            "--client-placement places the client pods of --clients 2 or more",
        ),
        (
            vec![
                "run",
                "--platform",
                "kubernetes",
                "--clients",
                "2",
                "--client",
                "host",
                "--client-placement",
                "per-node",
            ],
            "this run has --client host",
        ),
        (vec!["client", "--first-tcp-flow", "0"], "--first-tcp-flow"),
    ] {
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: expected {needle:?} in {err}"
        );
    }
}

#[test]
fn a_client_process_killed_mid_trial_is_named_and_fails_the_run() {
    let dir = temp_dir("sharded-crash");
    let mut args = base_args(free_ports(), &dir);
    // A longer settle, so that the kill lands in the steady state, after preflight.
    assert_eq!(args[3], "--settle-seconds");
    args[4] = "5".into();
    args.extend(
        [
            "--drain-behavior",
            "exit-now",
            "--grace-period",
            "2",
            "--observe-timeout",
            "3",
            "--tcp-flows",
            "4",
            "--udp-flows",
            "2",
            "--clients",
            "2",
        ]
        .map(String::from),
    );
    let mut cmd = Command::new(bin());
    cmd.args(&args);
    let mut run = Logged::spawn(cmd);
    // Past preflight (every UDP flow answered, the last check) and into the settle.
    let clients = wait::until(
        wait::with_output("two client processes past preflight", &run.log),
        Duration::from_secs(60),
        || {
            assert!(
                run.child.try_wait().unwrap().is_none(),
                "the run ended early:\n{}",
                run.log.lock().unwrap()
            );
            let c = client_children(run.child.id());
            let past = run
                .log
                .lock()
                .unwrap()
                .contains("preflight [ ok ] udp-flows-replying");
            (c.len() == 2 && past).then_some(c)
        },
    );
    // The second child (tcp-0003..tcp-0004 + udp-0002..udp-0002) dies without a word.
    let mut victim = clients.clone();
    victim.sort_unstable();
    kill(Pid::from_raw(victim[1]), Signal::SIGKILL).unwrap();
    let (status, err) = run.exit(Duration::from_secs(60));
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("failed to run the client processes"), "{err}");
    assert!(err.contains("was killed by signal 9"), "{err}");
    assert!(
        err.contains("before the observation window closed"),
        "the death is reported when it happens: {err}"
    );
    assert!(
        err.contains("tcp-0003..tcp-0004 + udp-0002..udp-0002"),
        "the dead child's slice is named: {err}"
    );
    for p in &clients {
        assert!(!alive(*p), "client process {p} outlived the run");
    }
}
