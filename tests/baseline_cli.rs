//! `drainwatch ci evaluate --baseline` (and `run --policy --baseline`) as a user runs them on the
//! committed local runs: baseline thresholds hold against the run itself (exit 0), a regression
//! against a baseline is missed and named (exit 1), a missing baseline warns as a skipped JUnit
//! test case or fails as `no-baseline` when the policy says so, and a baseline directory that
//! holds no run is bad input (exit 2) before anything is judged or run.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{copy_dir, json, temp_dir};

const POLICY: &str = r#"version = 1
description = "baseline thresholds on the committed local runs"
ON_MISSING
[[arm]]
name = "drain"
thresholds = [
  "tcp severed <= 0",
  "tcp-severed <= baseline",
  "sigterm-to-last-flow-end <= baseline + 10%",
  "no-regression",
]

[[arm]]
name = "exit-now"
thresholds = ["tcp-severed <= baseline", "no-regression"]
"#;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ci/run-local")
}

/// A copy of the committed run to judge (evaluate writes its files into it) and the policy.
fn setup(name: &str, on_missing: &str) -> (PathBuf, PathBuf) {
    let d = temp_dir(&format!("baseline-cli-{name}"));
    copy_dir(&fixtures(), &d.join("new"));
    let p = d.join("policy.toml");
    std::fs::write(&p, POLICY.replace("ON_MISSING", on_missing)).unwrap();
    (d, p)
}

/// `ci evaluate`; `baseline` is the flag's value, `env` DRAINWATCH_BASELINE_DIR's (unset: None).
fn evaluate(d: &Path, policy: &Path, baseline: Option<&Path>, env: Option<&str>) -> Output {
    let mut c = Command::new(common::bin());
    c.args(["ci", "evaluate", "--policy"])
        .arg(policy)
        .arg("--dir")
        .arg(d.join("new"))
        .env_remove("DRAINWATCH_BASELINE_DIR")
        .env_remove("DRAINWATCH_BASELINE_REASON");
    if let Some(b) = baseline {
        c.arg("--baseline").arg(b);
    }
    if let Some(e) = env {
        c.env("DRAINWATCH_BASELINE_DIR", e);
    }
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn valid_verdict(d: &Path) -> serde_json::Value {
    let v = json(&d.join("new/verdict.json"));
    assert_valid_verdict(&v);
    v
}

fn assert_valid_verdict(v: &serde_json::Value) {
    let schema = json(&Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/verdict.schema.json"));
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn against_itself_every_baseline_threshold_holds_but_one_trial_cannot_show_no_regression() {
    let (d, p) = setup("itself", "");
    let o = evaluate(&d, &p, Some(&fixtures()), None);
    // One trial against one: the medians hold, but the rank-sum test cannot exclude a
    // regression of the intervals, so no-regression is not measured and fails the gate.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("  not measured: drain: no-regression: not measured: 1 new against 1 baseline trial(s) cannot decide"),
        "{}",
        stderr(&o)
    );
    let v = valid_verdict(&d);
    assert_eq!(v["schema_version"], "2.0");
    assert_eq!(v["baseline"]["dir"], fixtures().display().to_string());
    let arms = v["arms"].as_array().unwrap();
    assert_eq!(arms.len(), 2);
    for a in arms {
        assert_eq!(a["baseline"]["status"], "compared", "{a}");
        assert_eq!(a["baseline"]["trials"], 1);
    }
    for a in arms {
        for t in a["thresholds"].as_array().unwrap() {
            let want = if t["name"] == "no-regression" {
                "not-measured"
            } else {
                "held"
            };
            assert_eq!(t["checks"][0]["state"], want, "{t}");
        }
    }
    let no_regression = &arms[0]["thresholds"][3];
    assert_eq!(no_regression["name"], "no-regression");
    assert_eq!(no_regression["checks"][0]["trial_id"], "arm");
    let junit = read(&d.join("new/junit.xml"));
    assert_eq!(junit.matches("<testcase ").count(), 6, "{junit}");
    assert_eq!(
        junit.matches("<failure type=\"not-measured\"").count(),
        2,
        "{junit}"
    );
    assert!(!junit.contains("<skipped"), "{junit}");
}

#[test]
fn a_regression_against_the_baseline_is_missed_and_named() {
    let (d, p) = setup("regression", "");
    // A baseline whose exit-now arm drained: the new exit-now severs 3 flows where it severed 0.
    let base = d.join("base");
    copy_dir(&fixtures().join("drain"), &base.join("exit-now"));
    copy_dir(&fixtures().join("drain"), &base.join("drain"));
    let o = evaluate(&d, &p, None, Some(base.to_str().unwrap()));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("missed: exit-now: tcp-severed ≤ baseline: median tcp-severed 3 over 1 trial(s); baseline median 0 over 1 trial(s), so at most 0"),
        "{}",
        stderr(&o)
    );
    let v = valid_verdict(&d);
    assert_eq!(
        v["baseline"]["dir"],
        base.display().to_string(),
        "from the env var"
    );
    let junit = read(&d.join("new/junit.xml"));
    assert_eq!(
        junit.matches("<failure type=\"threshold-missed\"").count(),
        2,
        "{junit}"
    );
    assert!(
        junit.contains("regressed tcp-severed 0 → 3 (every-trial-against-none)"),
        "{junit}"
    );
    let summary = read(&d.join("new/summary.md"));
    assert!(
        // exit-now's two miss; drain's no-regression cannot decide one trial against one.
        summary.contains("fail — 3 of 6 thresholds missed in 2 of 2 arms"),
        "{summary}"
    );
    assert!(
        summary.contains(&format!(
            "Baseline `{}`: `drain` compared (1 trial) · `exit-now` compared (1 trial)",
            base.display()
        )),
        "{summary}"
    );
    // The job summary and the PR comment are rendered from the verdict: the same lines.
    let o = Command::new(common::bin())
        .args(["ci", "summary", "--dir"])
        .arg(d.join("new"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let step = String::from_utf8_lossy(&o.stdout);
    assert!(
        step.contains("- **exit-now** · `no-regression` — 1 new against 1 baseline trial(s)"),
        "{step}"
    );
    assert!(step.contains("`drain` compared (1 trial)"), "{step}");
    // Fetched from a CI run, the line links the run instead of the runner's download directory.
    let o = Command::new(common::bin())
        .args(["ci", "summary", "--dir"])
        .arg(d.join("new"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .env(
            "DRAINWATCH_BASELINE_RUN_URL",
            "https://github.com/o/r/actions/runs/7",
        )
        .env("DRAINWATCH_BASELINE_RUN_ID", "7")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let step = String::from_utf8_lossy(&o.stdout);
    assert!(
        step.contains("Baseline [run 7](https://github.com/o/r/actions/runs/7): `drain` compared (1 trial) · `exit-now` compared (1 trial)"),
        "{step}"
    );
    assert!(!step.contains(&base.display().to_string()), "{step}");
}

#[test]
fn a_missing_baseline_warns_as_skipped_or_fails_when_the_policy_says_so() {
    // Empty means no baseline (the Action found none): not an error.
    let (d, p) = setup("warn", "");
    let o = evaluate(&d, &p, None, Some(""));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stderr(&o).matches("not judged: ").count(),
        5,
        "{}",
        stderr(&o)
    );
    let v = valid_verdict(&d);
    assert!(v.get("baseline").is_none(), "{v}");
    assert_eq!(v["arms"][0]["baseline"]["status"], "not-given");
    assert_eq!(
        v["arms"][0]["thresholds"][1]["checks"][0]["state"],
        "no-baseline"
    );
    // Not judged, never written as a pass; the absolute threshold beside it passed.
    assert_eq!(v["arms"][0]["thresholds"][1]["verdict"], "not-judged");
    assert_eq!(v["arms"][0]["thresholds"][0]["verdict"], "pass");
    let junit = read(&d.join("new/junit.xml"));
    assert_eq!(
        junit
            .matches("<skipped type=\"no-baseline\" message=\"no baseline: no baseline was given (--baseline or DRAINWATCH_BASELINE_DIR)\"/>")
            .count(),
        5,
        "{junit}"
    );
    assert!(!junit.contains("<failure"), "{junit}");
    let summary = read(&d.join("new/summary.md"));
    assert!(
        summary.contains("pass — 1 threshold held in 2 arms, 5 without a baseline"),
        "{summary}"
    );
    assert!(
        summary.contains("### Thresholds without a baseline"),
        "{summary}"
    );
    assert!(
        summary.contains("| `drain` | `no-regression` | ⚠️ no baseline |"),
        "{summary}"
    );

    // A baseline without these arms (a single trial is the arm "run"): missing too.
    let o = evaluate(&d, &p, Some(&fixtures().join("drain")), None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("has no readable trial report of arm \"exit-now\""),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        valid_verdict(&d)["arms"][1]["baseline"]["status"],
        "arm-missing"
    );

    let (d, p) = setup("fail", "on-missing-baseline = \"fail\"");
    let o = evaluate(&d, &p, None, None);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    valid_verdict(&d);
    let junit = read(&d.join("new/junit.xml"));
    assert_eq!(
        junit.matches("<failure type=\"no-baseline\"").count(),
        5,
        "{junit}"
    );
    assert!(!junit.contains("<skipped"), "{junit}");
    let summary = read(&d.join("new/summary.md"));
    assert!(
        summary.contains("| `exit-now` | `tcp-severed ≤ baseline` | ❌ no baseline |"),
        "{summary}"
    );
}

#[test]
fn without_a_baseline_each_baseline_threshold_says_why_the_ci_step_found_none() {
    let (d, p) = setup("reason", "");
    let why = "no successful push run of workflow gate.yml on branch main";
    let o = Command::new(common::bin())
        .args(["ci", "evaluate", "--policy"])
        .arg(&p)
        .arg("--dir")
        .arg(d.join("new"))
        .env("DRAINWATCH_BASELINE_DIR", "")
        .env("DRAINWATCH_BASELINE_REASON", why)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = valid_verdict(&d);
    assert_eq!(v["arms"][0]["baseline"]["reason"], why);
    let junit = read(&d.join("new/junit.xml"));
    let said = format!("<skipped type=\"no-baseline\" message=\"no baseline: {why}\"/>");
    assert_eq!(junit.matches(&said).count(), 5, "{junit}");
    assert!(!junit.contains("--baseline or"), "{junit}");
}

#[test]
fn a_baseline_that_holds_no_run_is_bad_input() {
    let (d, p) = setup("bad", "");
    let empty = d.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    for (flag, env) in [
        (Some(empty.as_path()), None),
        (None, Some(d.join("missing").to_str().unwrap().to_string())),
    ] {
        let o = evaluate(&d, &p, flag, env.as_deref());
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("is not a readable drainwatch run"),
            "{}",
            stderr(&o)
        );
        assert!(!d.join("new/verdict.json").exists(), "nothing is judged");
    }
    // `run` refuses it before any trial starts: nothing is written.
    let out = d.join("out");
    let o = Command::new(common::bin())
        .args(["run", "--platform", "local", "--policy"])
        .arg(&p)
        .arg("--baseline")
        .arg(&empty)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not a readable drainwatch run"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
}

#[test]
fn a_committed_1_0_verdict_still_reads_and_validates() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("results/2026-11-30-attach/bad-rollout-policy/out");
    let v = json(&dir.join("verdict.json"));
    assert_eq!(v["schema_version"], "1.0");
    assert_valid_verdict(&v);
    let o = Command::new(common::bin())
        .args(["ci", "summary", "--dir"])
        .arg(&dir)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(md.starts_with("## ❌ drainwatch: fail"), "{md}");
    assert!(
        !md.contains("Baseline"),
        "a verdict without a baseline says nothing of one: {md}"
    );
}

/// The committed five-trial rollouts on the local cluster (results/2026-12-01-compare-cluster),
/// laid out as the arm `rollout` of a policy run: five of `new` judged against five of `base`.
fn cluster_pair(name: &str, base: &str, new: &str) -> (PathBuf, PathBuf, PathBuf) {
    let runs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results/2026-12-01-compare-cluster");
    let d = temp_dir(&format!("baseline-cli-cluster-{name}"));
    copy_dir(&runs.join(new), &d.join("new/rollout"));
    copy_dir(&runs.join(base), &d.join("base/rollout"));
    let p = d.join("policy.toml");
    std::fs::write(
        &p,
        r#"version = 1
on-missing-baseline = "fail"
[[arm]]
name = "rollout"
thresholds = [
  "failed-requests <= baseline",
  "failed-dials <= baseline + 2",
  "longest-failure-window <= baseline + 200ms",
  "trigger-to-endpoint-removed <= baseline + 10%",
  "no-regression",
]
"#,
    )
    .unwrap();
    let base_dir = d.join("base");
    (d, p, base_dir)
}

#[test]
fn five_bad_rollouts_against_five_good_ones_regress_and_five_good_ones_do_not() {
    let (d, p, base) = cluster_pair("bad", "good-a", "bad");
    let o = evaluate(&d, &p, Some(&base), None);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = valid_verdict(&d);
    assert_eq!(v["arms"][0]["baseline"]["trials"], 5);
    let states: Vec<&str> = v["arms"][0]["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["checks"][0]["state"].as_str().unwrap())
        .collect();
    // More failed requests (median 7 against 0) and dials (17 against 0); the failure window's
    // median of 50 ms is within the 200 ms margin, and the endpoint leaves sooner (the bad
    // service exits at once): those two hold, while no-regression names the failures.
    assert_eq!(states, ["missed", "missed", "held", "held", "missed"]);
    let m = v["arms"][0]["thresholds"][0]["checks"][0]["message"]
        .as_str()
        .unwrap();
    assert!(
        m.starts_with(
            "median failed-requests 7 over 5 trial(s); baseline median 0 over 5 trial(s)"
        ),
        "{m}"
    );

    let (d, p, base) = cluster_pair("good", "good-a", "good-b");
    let o = evaluate(&d, &p, Some(&base), None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let junit = read(&d.join("new/junit.xml"));
    assert_eq!(junit.matches("<testcase ").count(), 5, "{junit}");
    assert!(
        !junit.contains("<failure") && !junit.contains("<skipped"),
        "{junit}"
    );
}
