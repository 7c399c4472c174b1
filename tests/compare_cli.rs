//! `drainwatch compare` on the committed local runs: exit 0 against itself, 1 for a named
//! regression (drain as the baseline, exit-now as the new run), 2 when nothing is comparable;
//! the compare.json it writes fits schema/compare.schema.json, which rejects what it must not.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::path::PathBuf;
use std::process::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ci/run-local")
}

fn compare(base: PathBuf, new: PathBuf, json: Option<&PathBuf>) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_drainwatch"));
    cmd.arg("compare").arg(base).arg(new);
    if let Some(j) = json {
        cmd.arg("--json").arg(j);
    }
    let out = cmd.output().expect("drainwatch runs");
    (
        out.status.code().expect("exited"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_policy_run_against_itself_does_not_regress_and_says_what_one_trial_cannot_decide() {
    let (code, out, err) = compare(fixtures(), fixtures(), None);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out.matches("1 baseline trial(s) against 1 new").count(),
        3,
        "{out}"
    );
    // 3 arms of 5 metrics each, every one undecided at 1 against 1: not a clean "no regression".
    assert_eq!(out.matches("(too-few-trials)").count(), 15, "{out}");
    assert!(
        out.ends_with(
            "drainwatch compare: no regression found, 15 of 15 metrics undecided (see the table)\n"
        ),
        "{out}"
    );
}

#[test]
fn drain_against_exit_now_is_a_regression_named_in_the_table_and_the_json() {
    let json = common::temp_dir("compare-json").join("compare.json");
    let (code, out, err) = compare(
        fixtures().join("drain"),
        fixtures().join("exit-now"),
        Some(&json),
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("tcp-severed") && out.contains("regressed (every-trial-against-none)"),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("compare.json")).expect("json");
    assert_eq!(v["regressed"], true);
    let arms = v["arms"].as_array().expect("arms");
    assert_eq!(arms.len(), 1);
    assert_eq!(arms[0]["arm"], "run");
    assert_eq!(arms[0]["status"], "compared");
    let severed = arms[0]["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .find(|m| m["metric"] == "tcp-severed")
        .expect("tcp-severed");
    assert_eq!(severed["comparison"]["change"], "regressed");
    assert_eq!(severed["comparison"]["new"]["median"], 3.0);
    // Not measured on the local platform: null, never 0.
    let removed = arms[0]["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .find(|m| m["metric"] == "trigger-to-endpoint-removed")
        .expect("listed");
    assert!(removed["comparison"]["base"].is_null(), "{removed}");
    assert_eq!(removed["comparison"]["change"], "not-measured");
}

#[test]
fn nothing_comparable_or_no_run_is_a_tool_failure() {
    // A policy run against a single trial: no arm name in common.
    let (code, out, err) = compare(fixtures(), fixtures().join("drain"), None);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("no arm of the two runs is comparable"),
        "{err}"
    );
    assert!(out.contains("run: only in the new run"), "{out}");
    let empty = common::temp_dir("compare-empty");
    let (code, _, err) = compare(empty, fixtures(), None);
    assert_eq!(code, 2);
    assert!(err.contains("holds no drainwatch run"), "{err}");
    let (code, _, err) = compare(fixtures(), fixtures(), None);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_bad_alpha_is_named_and_nothing_is_compared() {
    let out = Command::new(env!("CARGO_BIN_EXE_drainwatch"))
        .args(["compare", "--alpha", "1.5"])
        .arg(fixtures())
        .arg(fixtures())
        .output()
        .expect("drainwatch runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--alpha 1.5 is not between 0 and 1"));
}

/// A change that makes a valid compare.json invalid.
type Mutation = dyn Fn(&mut serde_json::Value);

fn compare_schema() -> jsonschema::Validator {
    let s =
        common::json(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema/compare.schema.json"));
    jsonschema::validator_for(&s).expect("the schema compiles")
}

#[test]
fn every_compare_json_fits_the_schema_and_its_negative_cases_are_rejected() {
    let schema = compare_schema();
    let dir = common::temp_dir("compare-schema");
    // compared (regressed and not), only on one side, and incomparable arms between them.
    let pairs = [
        (fixtures().join("drain"), fixtures().join("exit-now")),
        (fixtures(), fixtures()),
        (fixtures(), fixtures().join("drain")),
    ];
    let mut written = Vec::new();
    for (i, (base, new)) in pairs.into_iter().enumerate() {
        let json = dir.join(format!("compare-{i}.json"));
        compare(base, new, Some(&json));
        let v = common::json(&json);
        let errors: Vec<String> = schema.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "compare-{i}.json: {errors:?}\n{v}");
        written.push(v);
    }
    assert_eq!(written.len(), 3);
    let statuses: Vec<&str> = written
        .iter()
        .flat_map(|v| v["arms"].as_array().expect("arms"))
        .map(|a| a["status"].as_str().expect("status"))
        .collect();
    assert!(
        statuses.contains(&"compared") && statuses.contains(&"only-in-new"),
        "{statuses:?}"
    );

    let good = &written[0];
    let first_metric = "/arms/0/metrics/0/comparison";
    let bad: [(&str, Box<Mutation>); 6] = [
        (
            "an unknown metric",
            Box::new(|v| v["arms"][0]["metrics"][0]["metric"] = "tcp-fine".into()),
        ),
        (
            "a spread of no values",
            Box::new(move |v| v.pointer_mut(first_metric).expect("metric")["base"]["n"] = 0.into()),
        ),
        (
            "not-measured with a p-value",
            Box::new(move |v| {
                let c = v.pointer_mut(first_metric).expect("metric");
                c["change"] = "not-measured".into();
                c["decided_by"] = "missing".into();
                c["p"] = 0.5.into();
            }),
        ),
        (
            "an unknown arm status",
            Box::new(|v| v["arms"][0]["status"] = "skipped".into()),
        ),
        (
            "a compared arm without trials",
            Box::new(|v| {
                v["arms"][0].as_object_mut().expect("arm").remove("trials");
            }),
        ),
        (
            "no schema_version",
            Box::new(|v| {
                v.as_object_mut().expect("report").remove("schema_version");
            }),
        ),
    ];
    for (what, mutate) in &bad {
        let mut v = good.clone();
        mutate(&mut v);
        assert!(!schema.is_valid(&v), "the schema accepts {what}");
    }
}

#[test]
fn markdown_names_the_regression_and_the_rule() {
    let md = common::temp_dir("compare-md").join("compare.md");
    let out = Command::new(env!("CARGO_BIN_EXE_drainwatch"))
        .arg("compare")
        .arg(fixtures().join("drain"))
        .arg(fixtures().join("exit-now"))
        .arg("--markdown")
        .arg(&md)
        .output()
        .expect("drainwatch runs");
    assert_eq!(out.status.code(), Some(1));
    let text = std::fs::read_to_string(&md).expect("compare.md");
    assert!(
        text.starts_with("### Compared with the baseline: ❌ regressed"),
        "{text}"
    );
    let severed: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("| `tcp-severed`"))
        .collect();
    assert_eq!(severed.len(), 1, "{text}");
    assert!(
        severed[0].contains("+3") && severed[0].contains("regressed"),
        "{text}"
    );
    assert!(text.contains("α = 0.05"), "{text}");
}
