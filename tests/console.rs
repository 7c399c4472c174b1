//! What a run says on stderr, with and without `--quiet`: a real local trial each time.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use common::*;

/// A short local trial (`exit-now`, one flow of each protocol); its stderr and exit code.
fn trial(quiet: bool) -> (String, Option<i32>) {
    let (tcp, udp, ready) = free_ports();
    let dir = temp_dir(if quiet { "quiet" } else { "said" });
    let (tcp, udp, ready) = (tcp.to_string(), udp.to_string(), ready.to_string());
    let mut args = vec![
        "run",
        "--platform",
        "local",
        "--drain-behavior",
        "exit-now",
        "--settle-seconds",
        "1",
        "--tcp-flows",
        "1",
        "--udp-flows",
        "1",
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
    if quiet {
        args.insert(0, "--quiet");
    }
    let out = run(&args);
    assert!(
        dir.join("report.json").is_file(),
        "the report is written either way"
    );
    (
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

#[test]
fn quiet_drops_progress_and_keeps_results() {
    let (said, code) = trial(false);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("preflight [ ok ]"), "{said}");
    assert!(said.contains("trigger: sigterm issued"), "{said}");
    assert!(said.contains("report written to"), "{said}");
    let (quiet, code) = trial(true);
    assert_eq!(code, Some(0), "{quiet}");
    assert!(!quiet.contains("preflight ["), "{quiet}");
    assert!(!quiet.contains("trigger: "), "{quiet}");
    assert!(quiet.contains("report written to"), "{quiet}");
    assert!(
        quiet.lines().count() < said.lines().count(),
        "quiet:\n{quiet}\nsaid:\n{said}"
    );
}

#[test]
fn a_failure_on_stderr_that_is_not_a_terminal_has_no_colour() {
    let (tcp, udp, ready) = free_ports();
    // The probe's TCP port is taken: the local-ports-free check fails, a failure line.
    let _taken = std::net::TcpListener::bind(("0.0.0.0", tcp)).unwrap();
    let dir = temp_dir("colour");
    let out = run(&[
        "run",
        "--platform",
        "local",
        "--tcp-port",
        &tcp.to_string(),
        "--udp-port",
        &udp.to_string(),
        "--ready-port",
        &ready.to_string(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("preflight [FAIL] local-ports-free"), "{err}");
    assert!(!err.contains('\x1b'), "{err:?}");
}
