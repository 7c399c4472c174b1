//! `drainwatch run --policy` and `drainwatch ci …` as a user runs them: exit codes, the files
//! written, and the refusals (exit 2) named before anything runs.

// Test helpers outside #[test] functions panic on broken fixtures by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{assert_valid_report, copy_dir, free_ports, json, temp_dir};

fn bin() -> Command {
    Command::new(common::bin())
}

fn scratch(name: &str) -> std::path::PathBuf {
    temp_dir(&format!("cli-policy-{name}"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_policy_with_an_unknown_key_is_refused_before_anything_runs() {
    let d = scratch("unknown-key");
    let p = d.join("p.toml");
    std::fs::write(
        &p,
        "version = 1\n[[arm]]\nname = \"a\"\ngrace = 3\nthresholds = [\"severed <= 0\"]\n",
    )
    .unwrap();
    let out = d.join("out");
    let o = bin()
        .args(["run", "--policy"])
        .arg(&p)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("invalid policy") && e.contains("unknown field `grace`"),
        "{e}"
    );
    assert!(!out.exists(), "nothing may be written for a refused policy");
}

#[test]
fn a_flag_that_disagrees_with_the_policy_is_refused() {
    let o = bin()
        .args([
            "run",
            "--policy",
            "tests/fixtures/ci/policies/local-pass.toml",
            "--grace-period",
            "9",
            "--out",
        ])
        .arg(scratch("conflict").join("out"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--grace-period 9 conflicts with arm \"drain\" of the policy, which sets grace-period-seconds = 4"),
        "{}",
        stderr(&o)
    );
    let o = bin()
        .args(["run", "--policy", "builtin:smoke", "--arms", "nope"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--arms names \"nope\""),
        "{}",
        stderr(&o)
    );
}

#[test]
fn evaluate_judges_recorded_reports_again() {
    let d = scratch("evaluate");
    copy_dir(Path::new("tests/fixtures/ci/run-local"), &d);
    let o = bin()
        .args([
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
        "a missed threshold exits 1: {}",
        stderr(&o)
    );
    let v = json(&d.join("verdict.json"));
    assert_valid_verdict(&v);
    assert_eq!(v["verdict"], "fail");
    assert_eq!(v["arms"][0]["verdict"], "pass");
    assert_eq!(
        v["arms"][1]["thresholds"][1]["checks"][0]["message"],
        "trial-001: 3 of 3 tcp flows severed (100%); the threshold is ≤ 0"
    );
    let junit = std::fs::read_to_string(d.join("junit.xml")).unwrap();
    assert!(junit.contains("<testsuite id=\"1\" name=\"exit-now\""));
    assert!(
        std::fs::read_to_string(d.join("summary.md"))
            .unwrap()
            .starts_with("## ❌ drainwatch: fail")
    );
    // Outputs and summary without a GitHub environment print to stdout.
    let o = bin()
        .args(["ci", "outputs", "--dir"])
        .arg(&d)
        .env_remove("GITHUB_OUTPUT")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.starts_with("verdict=fail\nerror-step=\nreport-dir=/"),
        "{text}"
    );
    assert!(text.contains("/junit.xml\n"), "{text}");
}

#[test]
fn a_run_without_a_verdict_is_reported_as_a_tool_failure() {
    let d = scratch("no-verdict");
    let summary = d.join("step-summary.md");
    let output = d.join("output");
    for step in ["summary", "outputs"] {
        let o = bin()
            .args(["ci", step, "--exit-code", "2", "--dir"])
            .arg(d.join("missing"))
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("GITHUB_OUTPUT", &output)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{step}: {}", stderr(&o));
    }
    assert!(
        std::fs::read_to_string(&summary)
            .unwrap()
            .contains("exited with code 2 before writing `verdict.json`")
    );
    assert!(
        std::fs::read_to_string(&output)
            .unwrap()
            .starts_with("verdict=error\n")
    );
}

#[test]
fn a_passing_policy_runs_on_the_local_platform_and_exits_0() {
    let d = scratch("pass");
    let (tcp, udp, ready) = free_ports();
    let o = bin()
        .args(["run", "--platform", "local", "--settle-seconds", "1"])
        .args([
            "--tcp-port",
            &tcp.to_string(),
            "--udp-port",
            &udp.to_string(),
        ])
        .args(["--ready-port", &ready.to_string(), "--policy"])
        .arg("tests/fixtures/ci/policies/local-pass.toml")
        .arg("--out")
        .arg(&d)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for f in [
        "drain/report.json",
        "drain/events.jsonl",
        "drain/summary.json",
        "junit.xml",
        "summary.md",
        "verdict.json",
    ] {
        assert!(d.join(f).is_file(), "{f} missing");
    }
    assert!(stderr(&o).contains("verdict: pass"));
    assert_valid_report(&json(&d.join("drain/report.json")));
    assert_valid_verdict(&json(&d.join("verdict.json")));
}

fn assert_valid_verdict(v: &serde_json::Value) {
    let schema = json(&Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/verdict.schema.json"));
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "verdict.json does not match schema/verdict.schema.json: {errors:#?}"
    );
}
