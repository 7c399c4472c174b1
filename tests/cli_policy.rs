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
    // The fixture, and a baseline threshold with no baseline given: not judged, so it warns
    // (on the console too) and does not fail.
    let fixture = std::fs::read_to_string("tests/fixtures/ci/policies/local-pass.toml").unwrap();
    let last = "  \"sigterm-to-last-flow-end <= 3s\",\n";
    assert_eq!(fixture.matches(last).count(), 1, "{fixture}");
    let policy = scratch("pass-policy").join("policy.toml");
    std::fs::write(
        &policy,
        fixture.replace(last, &format!("{last}  \"tcp-severed <= baseline\",\n")),
    )
    .unwrap();
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
        .arg(&policy)
        .arg("--out")
        .arg(&d)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for f in [
        "drain/report.json",
        "drain/events.jsonl",
        "drain/summary.json",
        "drain/report.html",
        "junit.xml",
        "summary.md",
        "verdict.json",
        "report.html",
    ] {
        assert!(d.join(f).is_file(), "{f} missing");
    }
    assert!(stderr(&o).contains("verdict: pass"));
    assert!(
        stderr(&o).contains("warn  drain: tcp-severed ≤ baseline"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("pass  drain: tcp severed ≤ 0"),
        "{}",
        stderr(&o)
    );
    assert_valid_report(&json(&d.join("drain/report.json")));
    assert_valid_verdict(&json(&d.join("verdict.json")));
}

#[test]
fn a_failing_trial_is_retried_and_both_attempts_are_evidence() {
    let d = scratch("retry");
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
        .arg("tests/fixtures/ci/policies/local-retry.toml")
        .arg("--out")
        .arg(&d)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("trial-001: a per-trial threshold did not hold; retrying trial-001")
    );
    for f in [
        "exit-now/trial-001/report.json",
        "exit-now/trial-001-retry-1/report.json",
        "exit-now/trial-001-retry-1/events.jsonl",
    ] {
        assert!(d.join(f).is_file(), "{f} missing");
        if f.ends_with("report.json") {
            assert_valid_report(&json(&d.join(f)));
        }
    }
    let summary = json(&d.join("exit-now/summary.json"));
    let ids: Vec<&str> = summary["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["trial_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["trial-001", "trial-001-retry-1"]);
    let v = json(&d.join("verdict.json"));
    assert_valid_verdict(&v);
    assert_eq!(
        (v["schema_version"].as_str(), v["verdict"].as_str()),
        (Some("2.0"), Some("fail"))
    );
    let arm = &v["arms"][0];
    assert_eq!(arm["rule"]["retries"], 1);
    let trials = arm["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 2);
    assert_eq!(
        (
            trials[0]["attempt"].as_u64(),
            trials[0]["counted"].as_bool()
        ),
        (Some(1), Some(false))
    );
    assert_eq!(trials[1]["attempt"], 2);
    assert_eq!(trials[1]["retry_of"], "trial-001");
    assert_eq!(
        trials[1]["report"],
        "exit-now/trial-001-retry-1/report.json"
    );
    let drained = &arm["thresholds"][0];
    assert_eq!(
        drained["checks"].as_array().unwrap().len(),
        2,
        "one check per attempt"
    );
    assert_eq!(
        (drained["held"].as_u64(), drained["of"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(drained["flaky"], false);
    // The distribution counts the last attempt only; exit-now ends its flows at once.
    let p100 = &arm["thresholds"][1];
    assert_eq!(
        (p100["level"].as_str(), p100["verdict"].as_str()),
        (Some("arm"), Some("pass"))
    );
    let junit = std::fs::read_to_string(d.join("junit.xml")).unwrap();
    let name = "<testcase name=\"tcp drained-clean-close ≥ 100%\"";
    assert_eq!(
        junit.matches(name).count(),
        2,
        "both attempts are testcases: {junit}"
    );
    let first = junit.find(name).unwrap();
    assert!(
        junit[first..].find("type=\"retried-attempt\"")
            < junit[first..].find("type=\"threshold-missed\""),
        "the retried attempt comes first: {junit}"
    );
    // Judged again from the directory alone, the attempts read back the same.
    let o = bin()
        .args([
            "ci",
            "evaluate",
            "--policy",
            "tests/fixtures/ci/policies/local-retry.toml",
            "--dir",
        ])
        .arg(&d)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        json(&d.join("verdict.json"))["arms"][0]["trials"],
        arm["trials"]
    );
}

#[test]
fn a_committed_1_0_verdict_fits_the_1_1_schema() {
    let v = json(Path::new(
        "results/2026-11-30-attach/bad-rollout-policy/out/verdict.json",
    ));
    assert_eq!(v["schema_version"], "1.0");
    assert_valid_verdict(&v);
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
