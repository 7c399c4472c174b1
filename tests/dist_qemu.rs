//! The aarch64 release binary's trial under qemu (issue 19): `make dist-test` runs
//! scripts/dist_test.py, which starts the probe and the client of each arm as separate
//! `qemu-aarch64-static` processes on loopback and builds each arm's report with the aarch64
//! binary's own `drainwatch report`; this test then holds those reports to the schema and to
//! what each arm must show, as the x86_64 local trials do (tests/local_trial.rs).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

use std::path::{Path, PathBuf};

use serde_json::Value;

fn report(dir: &Path, arm: &str) -> Value {
    let path = dir.join(arm).join("report.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run make dist-test)", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
#[ignore = "needs make dist (the aarch64 binary) and qemu-user-static; make dist-test runs it"]
fn the_aarch64_binary_under_qemu_shows_the_three_arms() {
    let dir = PathBuf::from(
        std::env::var("DRAINWATCH_DIST_TEST_OUT")
            .expect("DRAINWATCH_DIST_TEST_OUT (make dist-test sets it)"),
    );
    let schema_text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/report.schema.json"),
    )
    .unwrap();
    let schema = jsonschema::validator_for(&serde_json::from_str(&schema_text).unwrap()).unwrap();
    let arms = ["drain", "exit-now", "ignore"];
    let reports: Vec<(&str, Value)> = arms.iter().map(|a| (*a, report(&dir, a))).collect();
    assert_eq!(reports.len(), 3);
    for (arm, r) in &reports {
        let errors: Vec<String> = schema
            .iter_errors(r)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(
            errors.is_empty(),
            "{arm}: report.json is not valid: {errors:?}"
        );
        assert_eq!(
            r["environment"]["arch"], "aarch64",
            "{arm}: built by the aarch64 binary"
        );
        assert_eq!(r["trial"]["status"], "completed", "{arm}");
        assert_eq!(r["trial"]["config"]["drain_behavior"], *arm);
        let tcp = &r["trial"]["summary"]["tcp"];
        assert!(tcp["total"].as_u64().unwrap() > 0, "{arm}: no tcp flows");
    }
    let summary =
        |arm: &str| &reports.iter().find(|(a, _)| *a == arm).unwrap().1["trial"]["summary"];
    // drain: every TCP flow closed by the probe after it announced it, the probe exits 0.
    let drain = summary("drain");
    assert_eq!(
        drain["tcp"]["drained"], drain["tcp"]["total"],
        "drain: {drain}"
    );
    assert_eq!(
        drain["mechanisms"]["tcp"]["fin-after-announcement"],
        drain["tcp"]["total"]
    );
    assert_eq!(drain["container_exit_code"], 0);
    // exit-now: every TCP flow reset at once.
    let now = summary("exit-now");
    assert_eq!(
        now["tcp"]["severed"], now["tcp"]["total"],
        "exit-now: {now}"
    );
    assert_eq!(now["mechanisms"]["tcp"]["rst"], now["tcp"]["total"]);
    // ignore: the probe outlives SIGTERM and is killed when the grace period expires.
    let ignore = summary("ignore");
    assert_eq!(ignore["container_exit_code"], 137, "ignore: {ignore}");
    assert_eq!(ignore["tcp"]["severed"], ignore["tcp"]["total"]);
    assert_eq!(ignore["tcp"]["drained"], 0);
}
