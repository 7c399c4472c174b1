//! The hand-written schema accepts what drainwatch writes and rejects what it must not, and
//! the Go v0.1 samples' shared parts (flows, timeline rows, counts) fit it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use common::*;
use serde_json::{Value, json};

fn sample_report() -> Value {
    // A real report from the local platform, produced by the binary itself.
    let (tcp, udp, ready) = free_ports();
    let dir = temp_dir("schema-sample");
    let out = run(&[
        "run",
        "--platform",
        "local",
        "--drain-behavior",
        "exit-now",
        "--grace-period",
        "2",
        "--settle-seconds",
        "0",
        "--tcp-flows",
        "2",
        "--udp-flows",
        "1",
        "--tcp-port",
        &tcp.to_string(),
        "--udp-port",
        &udp.to_string(),
        "--ready-port",
        &ready.to_string(),
        "--post-terminal-grace",
        "0",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&dir.join("report.json"))
}

/// One way to break a valid report.
type Mutation = Box<dyn Fn(&mut Value)>;

#[test]
fn negative_cases_are_rejected() {
    let good = sample_report();
    assert_valid_report(&good);
    // Schema 1.3: the cluster of a Kubernetes run, its context null in-cluster.
    let mut k8s = good.clone();
    k8s["environment"]["cluster"] = json!({"server": "https://10.0.0.1:6443", "context": null});
    assert_valid_report(&k8s);
    let mutations: Vec<(&str, Mutation)> = vec![
        (
            "unknown top-level field",
            Box::new(|r| {
                r["extra"] = json!(1);
            }),
        ),
        (
            "config.clients zero (schema 1.2: at least one client process)",
            Box::new(|r| {
                r["trial"]["config"]["clients"] = json!(0);
            }),
        ),
        (
            "config.clients not a count",
            Box::new(|r| {
                r["trial"]["config"]["clients"] = json!("2");
            }),
        ),
        (
            "outcome outside the enum",
            Box::new(|r| {
                r["trial"]["flows"][0]["outcome"] = json!("other");
            }),
        ),
        (
            "absence written as zero-length string",
            Box::new(|r| {
                r["trial"]["flows"][0]["outcome"] = json!("");
            }),
        ),
        (
            "survived flow with a terminal time",
            Box::new(|r| {
                r["trial"]["flows"][0]["outcome"] = json!("survived-observation-window");
                r["trial"]["flows"][0]["mechanism"] = json!("observation-end");
                r["trial"]["flows"][0]["t_terminal_ms"] = json!(5);
            }),
        ),
        (
            "udp flow drained",
            Box::new(|r| {
                let n = r["trial"]["flows"].as_array().unwrap().len() - 1;
                r["trial"]["flows"][n]["outcome"] = json!("drained-clean-close");
            }),
        ),
        (
            "environment.cluster without its context",
            Box::new(|r| {
                r["environment"]["cluster"] = json!({"server": "https://10.0.0.1:6443"});
            }),
        ),
        (
            "environment.cluster with an empty server",
            Box::new(|r| {
                r["environment"]["cluster"] = json!({"server": "", "context": "kind-x"});
            }),
        ),
        (
            "warnings null instead of []",
            Box::new(|r| {
                r["environment"]["warnings"] = Value::Null;
            }),
        ),
        (
            "approximate written as false",
            Box::new(|r| {
                r["trial"]["timeline"][0]["approximate"] = json!(false);
            }),
        ),
        (
            "missing schema_version",
            Box::new(|r| {
                r.as_object_mut().unwrap().remove("schema_version");
            }),
        ),
        (
            "schema major 4",
            Box::new(|r| {
                r["schema_version"] = json!("4.0");
            }),
        ),
        (
            "completed with a status detail",
            Box::new(|r| {
                r["trial"]["status_detail"] = json!("why");
            }),
        ),
        (
            "mechanism rehomed without both ends",
            Box::new(|r| {
                r["trial"]["flows"][0]["mechanism"] = json!("rehomed");
            }),
        ),
        (
            "tcp flow with last_answered_seq",
            Box::new(|r| {
                r["trial"]["flows"][0]["last_answered_seq"] = json!(3);
            }),
        ),
        (
            "flow id not sequential form",
            Box::new(|r| {
                r["trial"]["flows"][0]["id"] = json!("tcp-1");
            }),
        ),
        (
            "exit code as string",
            Box::new(|r| {
                r["trial"]["summary"]["container_exit_code"] = json!("0");
            }),
        ),
    ];
    for (name, mutate) in mutations {
        let mut bad = good.clone();
        mutate(&mut bad);
        assert!(
            !report_is_valid(&bad),
            "the schema accepted a report with {name}"
        );
    }
}

#[test]
fn go_sample_shared_parts_fit_the_schema() {
    let schema = schema();
    // Real reports of the Go drainwatch v0.1, recorded on our cluster (see the fixture README).
    let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/go-v0.1");
    let mut checked = 0;
    for entry in [
        "report-drain.json",
        "report-exit-now.json",
        "report-ignore.json",
    ] {
        let go = json(&samples.join(entry));
        let defs = &schema["$defs"];
        let entry_schema = |def: &str| {
            let mut s = defs[def].clone();
            s["$defs"] = defs.clone();
            jsonschema::validator_for(&s).unwrap()
        };
        let timeline = entry_schema("timeline_entry");
        for e in go["trial"]["timeline"].as_array().unwrap() {
            assert!(timeline.is_valid(e), "{entry}: timeline row {e}");
            checked += 1;
        }
        let counts = entry_schema("counts");
        assert!(counts.is_valid(&go["trial"]["summary"]["tcp"]));
        assert!(counts.is_valid(&go["trial"]["summary"]["udp"]));
        let outcome = entry_schema("outcome");
        for f in go["trial"]["flows"].as_array().unwrap() {
            assert!(outcome.is_valid(&f["outcome"]), "{entry}: {f}");
            checked += 1;
        }
        let config = entry_schema("config");
        let mut cfg = go["trial"]["config"].clone();
        // Go wrote an empty string where we write null.
        if cfg["namespace"] == json!("") {
            cfg["namespace"] = Value::Null;
        }
        if cfg["drain_behavior"] == json!("") {
            cfg["drain_behavior"] = Value::Null;
        }
        assert!(config.is_valid(&cfg), "{entry}: config {cfg}");
    }
    assert!(checked > 20);
}

/// The attach fixture (see its README), replayed: the committed report.json is what this build
/// writes from its events, byte for byte.
fn attach_fixture() -> Value {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/attach");
    let dir = temp_dir("attach-fixture");
    for f in ["events.jsonl", "report.json"] {
        std::fs::copy(fixture.join(f), dir.join(f)).unwrap();
    }
    assert_replay_identical(&dir, None);
    json(&dir.join("report.json"))
}

#[test]
fn attach_reports_fit_the_schema_and_its_negative_cases_are_rejected() {
    let good = attach_fixture();
    assert_valid_report(&good);
    let a = &good["trial"]["attach"];
    // The fixture exercises every attribution rule; a change to them shows up here first.
    let phases: Vec<(&str, &str)> = a["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["pod"].as_str().unwrap_or("-"),
                f["phase"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        phases,
        vec![
            ("web-a", "after-exit"),
            ("web-b", "terminating-ready"),
            ("web-b", "after-endpoint-removal"),
            ("web-b", "after-exit"),
        ]
    );
    let mut ws = good.clone();
    ws["trial"]["attach"]["connection_records"][0]["close_code"] = json!(1001);
    ws["trial"]["attach"]["connection_records"][0]["close_reason"] = json!("going away");
    assert_valid_report(&ws);
    let mut h2 = good.clone();
    h2["trial"]["attach"]["connection_records"][0]["goaway_t_ms"] = json!(1200);
    h2["trial"]["attach"]["connection_records"][0]["goaway_last_stream_id"] = json!(7);
    h2["trial"]["attach"]["connection_records"][0]["goaway_code"] = json!("NO_ERROR");
    h2["trial"]["attach"]["failures"][0]["mechanism"] = json!("goaway-then-reset");
    h2["trial"]["attach"]["failures"][0]["h2_code"] = json!("CANCEL");
    assert_valid_report(&h2);
    let mutations: Vec<(&str, Mutation)> = vec![
        (
            "a GOAWAY time without its last stream id and code",
            Box::new(|r| {
                r["trial"]["attach"]["connection_records"][0]["goaway_t_ms"] = json!(1200);
            }),
        ),
        (
            "a failure mechanism outside the enum",
            Box::new(|r| {
                r["trial"]["attach"]["failures"][0]["mechanism"] = json!("goaway-graceful");
            }),
        ),
        (
            "a close code without its reason",
            Box::new(|r| {
                r["trial"]["attach"]["connection_records"][0]["close_code"] = json!(1001);
            }),
        ),
        (
            "a close code outside RFC 6455's range",
            Box::new(|r| {
                r["trial"]["attach"]["connection_records"][0]["close_code"] = json!(200);
                r["trial"]["attach"]["connection_records"][0]["close_reason"] = json!("");
            }),
        ),
        (
            "failure mechanism outside the enum",
            Box::new(|r| {
                r["trial"]["attach"]["failures"][0]["mechanism"] = json!("exploded");
            }),
        ),
        (
            "unattributed failure that names a pod",
            Box::new(|r| {
                r["trial"]["attach"]["failures"][0]["phase"] = json!("unattributed");
            }),
        ),
        (
            "attributed failure without a pod",
            Box::new(|r| {
                r["trial"]["attach"]["failures"][0]["pod"] = Value::Null;
            }),
        ),
        (
            "requests not measured written as zero",
            Box::new(|r| {
                r["trial"]["attach"]["requests"] = json!(0);
            }),
        ),
        (
            "a dial count object with no dials",
            Box::new(|r| {
                r["trial"]["attach"]["dials"]["total"] = json!(0);
            }),
        ),
        (
            "no failure window written as zero",
            Box::new(|r| {
                r["trial"]["attach"]["longest_failure_window"] = json!(0);
            }),
        ),
        (
            "survived connection with an end time",
            Box::new(|r| {
                let n = r["trial"]["attach"]["connection_records"]
                    .as_array()
                    .unwrap()
                    .len()
                    - 1;
                r["trial"]["attach"]["connection_records"][n]["ended_t_ms"] = json!(5000);
            }),
        ),
        (
            "unknown field in the attach section",
            Box::new(|r| {
                r["trial"]["attach"]["extra"] = json!(1);
            }),
        ),
        (
            "phase outside the enum",
            Box::new(|r| {
                r["trial"]["attach"]["failures_by_phase"]["during-lunch"] = json!(1);
            }),
        ),
        (
            "attach protocol outside the enum",
            Box::new(|r| {
                r["trial"]["config"]["attach"]["protocol"] = json!("quic");
            }),
        ),
        (
            "http attach config without a path",
            Box::new(|r| {
                r["trial"]["config"]["attach"]["path"] = Value::Null;
            }),
        ),
        (
            "dial flow id in a connection record",
            Box::new(|r| {
                r["trial"]["attach"]["connection_records"][0]["flow_id"] = json!("dial-000001");
            }),
        ),
    ];
    for (name, mutate) in mutations {
        let mut bad = good.clone();
        mutate(&mut bad);
        assert!(
            !report_is_valid(&bad),
            "the schema accepted an attach report with {name}"
        );
    }
}

#[test]
fn probe_reports_change_only_in_schema_version() {
    // Schemas 1.2 and 1.3 add attach fields, the run id and a cluster that is absent off
    // Kubernetes: replaying the recorded local trials gives their reports back byte for byte,
    // but for the version line.
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ci/run-local");
    for arm in ["drain", "exit-now", "ignore"] {
        let dir = temp_dir(&format!("probe-replay-{arm}"));
        let out = run(&[
            "report",
            "--events",
            fixtures.join(arm).join("events.jsonl").to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let old = std::fs::read_to_string(fixtures.join(arm).join("report.json")).unwrap();
        let new = std::fs::read_to_string(dir.join("report.json")).unwrap();
        let versionless = |s: &str| {
            s.lines()
                .filter(|l| !l.trim_start().starts_with("\"schema_version\""))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(versionless(&old), versionless(&new), "{arm}");
        assert!(
            new.contains(&format!(
                "\"schema_version\": \"{}\"",
                drainwatch::evidence::report::SCHEMA_VERSION
            )),
            "{arm}"
        );
    }
}
