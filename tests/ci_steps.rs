//! `drainwatch ci key` and the no-verdict path of `ci outputs` / `ci summary` as the action's
//! steps run them: every input from the environment, the answers appended to $GITHUB_OUTPUT.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::temp_dir;

/// The binary with none of the variables these steps read inherited from the test's own
/// environment (a test run inside GitHub Actions has GITHUB_JOB set).
fn step(args: &[&str]) -> Command {
    let mut c = Command::new(common::bin());
    c.args(args);
    for v in [
        "GITHUB_JOB",
        "GITHUB_OUTPUT",
        "GITHUB_STEP_SUMMARY",
        "DRAINWATCH_MATRIX",
        "DRAINWATCH_KEY",
        "DRAINWATCH_ARTIFACT_NAME",
        "DRAINWATCH_STEPS",
        "DRAINWATCH_EXIT_CODE",
        "DRAINWATCH_REPORT_DIR",
    ] {
        c.env_remove(v);
    }
    c
}

fn ok(o: &Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn outputs_of(path: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn key_appends_key_and_artifact_name_and_prints_them() {
    let d = temp_dir("ci-steps-key");
    let out = d.join("output");
    std::fs::write(&out, "earlier=1\n").unwrap();
    let stdout = ok(&step(&["ci", "key"])
        .env("GITHUB_JOB", "gate")
        .env("DRAINWATCH_MATRIX", r#"{"service": "good-shutdown"}"#)
        .env("GITHUB_OUTPUT", &out)
        .output()
        .unwrap());
    let written = outputs_of(&out);
    assert_eq!(written.len(), 3, "{written:?}");
    assert_eq!(written[0], ("earlier".into(), "1".into()), "appended");
    let (k, key) = &written[1];
    assert_eq!(k, "key");
    assert!(key.starts_with("gate-good-shutdown-"), "{key}");
    assert_eq!(
        written[2],
        ("artifact-name".into(), format!("drainwatch-{key}"))
    );
    assert_eq!(
        stdout,
        format!("key={key}\nartifact-name=drainwatch-{key}\n")
    );
}

#[test]
fn two_legs_get_two_keys_and_an_override_wins() {
    let key_of = |matrix: &str, key: &str| {
        let stdout = ok(&step(&["ci", "key"])
            .env("GITHUB_JOB", "gate")
            .env("DRAINWATCH_MATRIX", matrix)
            .env("DRAINWATCH_KEY", key)
            .env("DRAINWATCH_ARTIFACT_NAME", "")
            .output()
            .unwrap());
        stdout.lines().next().unwrap().to_string()
    };
    let good = key_of(r#"{"service":"good-shutdown"}"#, "");
    let bad = key_of(r#"{"service":"bad-shutdown"}"#, "");
    assert_ne!(good, bad);
    assert_eq!(good, key_of(r#"{"service":"good-shutdown"}"#, ""), "stable");
    assert_eq!(key_of("null", ""), "key=gate");
    assert_eq!(key_of(r#"{"service":"x"}"#, "mine"), "key=mine");
}

#[test]
fn a_matrix_that_is_not_json_is_a_named_tool_error() {
    let o = step(&["ci", "key"])
        .env("GITHUB_JOB", "gate")
        .env("DRAINWATCH_MATRIX", "{service: good}")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("DRAINWATCH_MATRIX is not JSON"));
}

const STEPS_BINARY_FAILED: &str = r#"{
  "key": {"outputs": {"key": "gate"}, "outcome": "success", "conclusion": "success"},
  "binary": {"outputs": {}, "outcome": "failure", "conclusion": "failure"},
  "run": {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
}"#;

#[test]
fn outputs_name_the_failed_step_when_the_run_never_finished() {
    let d = temp_dir("ci-steps-outputs");
    // A valid verdict.json in the directory, but not this run's: the run step recorded no
    // exit code (it never finished), so the verdict is error, not this file's fail.
    common::copy_dir(Path::new("tests/fixtures/ci/run-local"), &d);
    let o = step(&[
        "ci",
        "evaluate",
        "--policy",
        "tests/fixtures/ci/policies/local-fail.toml",
        "--dir",
    ])
    .arg(&d)
    .output()
    .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let finished = ok(&step(&["ci", "outputs", "--dir"])
        .arg(&d)
        .env("DRAINWATCH_EXIT_CODE", "1")
        .output()
        .unwrap());
    assert!(finished.starts_with("verdict=fail\n"), "{finished}");
    let out = d.join("output");
    let summary = d.join("step-summary.md");
    for cmd in ["outputs", "summary"] {
        ok(&step(&["ci", cmd])
            .env("DRAINWATCH_REPORT_DIR", &d)
            .env("DRAINWATCH_EXIT_CODE", "")
            .env("DRAINWATCH_STEPS", STEPS_BINARY_FAILED)
            .env("DRAINWATCH_KEY", "gate-a-0123abcd")
            .env("GITHUB_OUTPUT", &out)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .output()
            .unwrap());
    }
    let written = outputs_of(&out);
    let get = |k: &str| {
        written
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(get("verdict"), Some("error"));
    assert_eq!(get("error-step"), Some("binary"));
    assert_eq!(get("junit"), Some(""));
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.starts_with("## ⚠️ drainwatch: no verdict"), "{md}");
    assert!(
        md.contains("**Failed step:** Get the drainwatch binary (`binary`)"),
        "{md}"
    );
    assert!(md.contains("- key `gate-a-0123abcd`"), "{md}");
}

#[test]
fn outputs_need_nothing_from_the_run_step() {
    // The run step never ran: no directory, no exit code, a failed step before it.
    let stdout = ok(&step(&["ci", "outputs"])
        .env("DRAINWATCH_EXIT_CODE", "")
        .env("DRAINWATCH_REPORT_DIR", "")
        .env("DRAINWATCH_STEPS", STEPS_BINARY_FAILED)
        .output()
        .unwrap());
    assert_eq!(
        stdout,
        "verdict=error\nerror-step=binary\nreport-dir=\njunit=\n"
    );
    let stdout = ok(&step(&["ci", "outputs"]).output().unwrap());
    assert_eq!(
        stdout,
        "verdict=error\nerror-step=run\nreport-dir=\njunit=\n"
    );
}

#[test]
fn outputs_blame_the_run_step_when_no_step_failed() {
    let d = temp_dir("ci-steps-run");
    let stdout = ok(&step(&["ci", "outputs", "--dir"])
        .arg(d.join("missing"))
        .env("DRAINWATCH_EXIT_CODE", "2")
        .env("DRAINWATCH_STEPS", r#"{"run":{"outcome":"success"}}"#)
        .output()
        .unwrap());
    assert!(
        stdout.starts_with("verdict=error\nerror-step=run\nreport-dir=/"),
        "{stdout}"
    );
}
