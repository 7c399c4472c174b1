//! Bad input exits 2 with a message naming what is wrong, and writes nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use common::*;

fn refused(args: &[&str], needle: &str) {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?} → {:?}\n{err}",
        out.status
    );
    assert!(
        err.contains(needle),
        "{args:?}: expected {needle:?} in:\n{err}"
    );
}

#[test]
fn run_refuses_bad_flags_by_name() {
    refused(
        &["run", "--platform", "local", "--drain-behavior", "graceful"],
        "graceful",
    );
    refused(
        &["run", "--platform", "local", "--tcp-port", "0"],
        "--tcp-port",
    );
    refused(
        &[
            "run",
            "--platform",
            "local",
            "--tcp-flows",
            "0",
            "--udp-flows",
            "0",
        ],
        "--tcp-flows and --udp-flows are both 0",
    );
    refused(
        &[
            "run",
            "--platform",
            "local",
            "--grace-period",
            "10",
            "--drain-max-seconds",
            "10",
        ],
        "--drain-max-seconds",
    );
    refused(
        &["run", "--platform", "local", "--interval", "soon"],
        "not a duration",
    );
    refused(&["run", "--platform", "local", "--repeat", "0"], "--repeat");
}

/// `run --platform local --out OUT EXTRA…` on the given probe ports.
fn run_local_out(
    out: &std::path::Path,
    extra: &[&str],
    (tcp, udp, ready): (u16, u16, u16),
) -> std::process::Output {
    let (tcp, udp, ready) = (tcp.to_string(), udp.to_string(), ready.to_string());
    let mut args = vec!["run", "--platform", "local", "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend([
        "--tcp-port",
        &tcp,
        "--udp-port",
        &udp,
        "--ready-port",
        &ready,
    ]);
    run(&args)
}

#[test]
fn unwritable_out_is_refused_before_anything_starts() {
    let dir = temp_dir("unwritable");
    let file = dir.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let out_arg = file.join("sub");
    let (tcp, udp, ready) = free_ports();
    let out = run_local_out(&out_arg, &[], (tcp, udp, ready));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a writable directory"), "{err}");
    // Nothing was started: the ports are still free.
    assert!(std::net::TcpListener::bind(("0.0.0.0", tcp)).is_ok());
}

#[test]
fn a_taken_port_fails_preflight_by_name_and_writes_no_report() {
    let (tcp, udp, ready) = free_ports();
    let _holder = std::net::TcpListener::bind(("0.0.0.0", tcp)).unwrap();
    let dir = temp_dir("taken");
    let out = run_local_out(&dir, &[], (tcp, udp, ready));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("preflight check \"local-ports-free\" failed"),
        "{err}"
    );
    assert!(
        err.contains("invariant:") && err.contains("check:"),
        "{err}"
    );
    assert!(
        !dir.join("report.json").exists(),
        "a broken harness must not emit a report"
    );
}

#[test]
fn replay_of_garbage_is_a_named_error() {
    let dir = temp_dir("garbage");
    let f = dir.join("events.jsonl");
    std::fs::write(&f, "{\"event\":\"x\"}\nnot json\n").unwrap();
    let out = run(&["report", "--events", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("events.jsonl:2 is not an event line"));
    std::fs::write(&f, "{\"event\":\"x\"}\n").unwrap();
    let out = run(&["report", "--events", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no trial_started line"));
    // A header claiming 2,222,225 UDP flows (a fuzz finding that ran the replay out of memory).
    let seed = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fuzz/corpus/event_lines/flows-above-cap"
    );
    let out = run(&["report", "--events", seed]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("udp_flows is 2222225, above the 100000 flows"),
        "{err}"
    );
    // A .zst that is not zstd: named, not read as text.
    let z = dir.join("events.jsonl.zst");
    std::fs::write(&z, "{\"event\":\"x\"}\n").unwrap();
    let out = run(&["report", "--events", z.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("events.jsonl.zst is not a zstd stream"),
        "{err}"
    );
}

/// An --out directory with files of an earlier run in it, as issue 14 found one: a stale arm
/// directory beside the new verdict.
fn stale_out(name: &str) -> std::path::PathBuf {
    let dir = temp_dir(name);
    std::fs::create_dir_all(dir.join("old-arm")).unwrap();
    std::fs::write(dir.join("old-arm/report.json"), b"{}").unwrap();
    std::fs::write(dir.join("verdict.json"), b"{}").unwrap();
    dir
}

#[test]
fn a_non_empty_out_is_refused_and_left_as_it_was() {
    let dir = stale_out("stale-out");
    let (tcp, udp, ready) = free_ports();
    let out = run_local_out(&dir, &[], (tcp, udp, ready));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is not empty (2 entries: old-arm, verdict.json)")
            && err.contains("nothing was changed")
            && err.contains("--clean-out"),
        "{err}"
    );
    assert!(dir.join("old-arm/report.json").is_file() && dir.join("verdict.json").is_file());
    // Nothing was started: the ports are still free.
    assert!(std::net::TcpListener::bind(("0.0.0.0", tcp)).is_ok());
    // A policy run is refused the same way.
    refused(
        &[
            "run",
            "--platform",
            "local",
            "--policy",
            "builtin:smoke",
            "--out",
            dir.to_str().unwrap(),
        ],
        "is not empty",
    );
    assert!(dir.join("verdict.json").is_file());
}

#[test]
fn clean_out_empties_the_directory_before_the_run() {
    let dir = stale_out("clean-out");
    // A taken port stops the run at its first preflight check, after --out was prepared.
    let (tcp, udp, ready) = free_ports();
    let _holder = std::net::TcpListener::bind(("0.0.0.0", tcp)).unwrap();
    let out = run_local_out(&dir, &["--clean-out"], (tcp, udp, ready));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("\"local-ports-free\""), "{err}");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(left.len(), 0, "the stale files are gone: {left:?}");
}

#[test]
fn cleanup_needs_exactly_one_scope() {
    // Before any cluster is contacted: a usage error names the three choices.
    refused(&["cleanup"], "--run <RUN_ID>|--older-than <DURATION>|--all");
    refused(
        &["cleanup", "--all", "--older-than", "2h"],
        "cannot be used with",
    );
    refused(&["cleanup", "--run", "yesterday"], "is not a run id");
    refused(&["cleanup", "--older-than", "soon"], "not a duration");
}

#[test]
fn run_target_tls_refuses_a_bad_ca_file_before_any_trial() {
    // No cluster is reached: the CA file is checked before the kubeconfig is read.
    let dir = temp_dir("bad-ca");
    let not_pem = dir.join("not-pem.crt");
    std::fs::write(&not_pem, "this is not a certificate\n").unwrap();
    let missing = dir.join("missing.crt");
    let out = dir.join("out");
    let kube = dir.join("no-kubeconfig");
    let base = |ca: &str| {
        vec![
            "run".to_string(),
            "--kubeconfig".into(),
            kube.display().to_string(),
            "--target".into(),
            "deployment/ws-good".into(),
            "--protocol".into(),
            "websocket".into(),
            "--tls".into(),
            "--ca-file".into(),
            ca.to_string(),
            "--out".into(),
            out.display().to_string(),
        ]
    };
    for (ca, needle) in [
        (missing.display().to_string(), "missing.crt"),
        (not_pem.display().to_string(), "no PEM certificate"),
    ] {
        let args = base(&ca);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&args, needle);
        assert!(!out.exists(), "nothing is written for bad input");
    }
    refused(
        &[
            "run",
            "--target",
            "deployment/ws-good",
            "--ca-file",
            "ca.pem",
        ],
        "--ca-file needs --tls",
    );
    refused(
        &["run", "--target", "deployment/ws-good", "--tls"],
        "--tls needs --ca-file",
    );
}

#[test]
fn an_out_of_range_duration_is_a_clear_error_never_a_panic() {
    for (flag, value, needle) in [
        (
            "--interval",
            "99999999999999999999s",
            "longer than the longest duration taken, 24h",
        ),
        ("--flow-timeout", "1e400s", "unknown unit"),
        ("--interval", "0.5ms", "not a whole number of milliseconds"),
        ("--interval", "-1s", "not a duration"),
    ] {
        let arg = format!("{flag}={value}");
        refused(&["run", "--platform", "local", &arg], needle);
    }
    refused(
        &[
            "run",
            "--platform",
            "local",
            "--threshold",
            "trigger-to-sigterm <= 99999999999999999999s",
        ],
        "--threshold",
    );
}
