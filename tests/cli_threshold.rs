//! `drainwatch run --threshold SENTENCE` and the block a run without any threshold prints when
//! it saw failures, on the local platform: a real probe process that exits at once on SIGTERM
//! (`exit-now`), so every flow is severed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::process::Output;

use common::*;

/// One exit-now trial on free ports, with `extra` flags; its output and --out directory.
fn exit_now(name: &str, extra: &[&str]) -> (Output, std::path::PathBuf) {
    let (tcp, udp, ready) = free_ports();
    let dir = temp_dir(&format!("cli-threshold-{name}"));
    let (tcp, udp, ready) = (tcp.to_string(), udp.to_string(), ready.to_string());
    let mut args = vec![
        "run",
        "--platform",
        "local",
        "--drain-behavior",
        "exit-now",
        "--grace-period",
        "4",
        "--settle-seconds",
        "1",
        "--tcp-flows",
        "4",
        "--udp-flows",
        "0",
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
    (run(&args), dir)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_missed_threshold_fails_the_run_with_the_verdict() {
    let (o, dir) = exit_now(
        "missed",
        &[
            "--threshold",
            "severed <= 0",
            "--threshold",
            "tcp read-timeout <= 0",
        ],
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("fail  run: severed ≤ 0"), "{e}");
    assert!(e.contains("pass  run: tcp read-timeout ≤ 0"), "{e}");
    assert!(
        e.contains("  missed: run: severed ≤ 0: trial-001: 4 of 4 flows severed (100%); the threshold is ≤ 0"),
        "{e}"
    );
    assert!(e.contains("verdict: fail (the --threshold flags"), "{e}");
    assert!(!e.contains("NOT JUDGED"), "a gated run has no hint: {e}");
    // The run's evidence is as without the flag; no verdict files are invented.
    assert_valid_report(&json(&dir.join("report.json")));
    assert!(!dir.join("verdict.json").exists() && !dir.join("junit.xml").exists());
}

#[test]
fn a_run_without_thresholds_that_saw_failures_says_nothing_was_judged() {
    let (o, _) = exit_now("hint", &[]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    let block: Vec<&str> = e
        .lines()
        .skip_while(|l| !l.starts_with("NOT JUDGED"))
        .collect();
    assert_eq!(block.len(), 4, "{e}");
    assert!(block[0].contains("exits 0"), "{e}");
    assert_eq!(block[1], "  trial-001: 4 of 4 flows severed (100%)");
    assert_eq!(block[3], "  --threshold 'severed <= 0'");
    // The table came first (stdout), the block after it.
    assert!(String::from_utf8_lossy(&o.stdout).contains("severed"));
}

#[test]
fn a_bad_or_unmeasurable_threshold_is_refused_before_anything_runs() {
    let (o, dir) = exit_now("strict", &["--threshold", "severed > 0"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("--threshold <SENTENCE>") && e.contains("use >= or <="),
        "{e}"
    );
    assert!(!dir.join("report.json").exists(), "nothing ran");

    let (o, dir) = exit_now("probe-request", &["--threshold", "no-request-failed"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("invalid --threshold")
            && e.contains("no-request-failed")
            && e.contains("impossible"),
        "{e}"
    );
    assert!(!dir.join("report.json").exists(), "nothing ran");

    let (o, _) = exit_now(
        "twice",
        &["--threshold", "severed <= 0", "--threshold", "severed ≤ 0"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("twice"), "{}", stderr(&o));

    let o = run(&[
        "run",
        "--policy",
        "builtin:smoke",
        "--threshold",
        "severed <= 0",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}
