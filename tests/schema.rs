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

/// A valid `trial.termination_settings` (schema 3.1), as an attach trial records it.
fn termination_settings() -> Value {
    json!({
        "source": "workload",
        "workload": "deployment/web",
        "termination_grace_period_seconds": 30,
        "containers": [{
            "name": "app",
            "pre_stop": {"kind": "exec", "sleep_seconds": 5},
            "readiness_probe": {"period_seconds": 2, "failure_threshold": 3}
        }, {"name": "sidecar", "pre_stop": null, "readiness_probe": null}],
        "rollout": {
            "strategy": "rolling-update", "replicas": 3,
            "max_surge": "25%", "max_unavailable": 0,
            "max_surge_pods": 1, "max_unavailable_pods": 0, "partition": null
        },
        "pdbs": [{
            "name": "web", "min_available": 2, "max_unavailable": null,
            "disruptions_allowed": 1, "current_healthy": 3, "desired_healthy": 2,
            "expected_pods": 3
        }],
        "unread": []
    })
}

/// `trial.clock.client` of client shards on two kernels, one of them the orchestrator's.
fn client_summary() -> Value {
    json!({
        "mapping": "offset-one-sided", "approximate": true, "offset_ms": null,
        "error_bound_ms": null, "samples": 4, "note": "two kernels"
    })
}

/// `trial.clock.client_domains` (schema 4.3) of those two kernels.
fn client_domains() -> Value {
    json!([
        {"boot_id": "boot-a", "mapping": "same-host-monotonic", "offset_ns": 0,
         "error_bound_ms": 0.0, "approximate": false, "lines": 2, "node": null},
        {"boot_id": "boot-b", "mapping": "offset-one-sided", "offset_ns": 5003000000_i64,
         "error_bound_ms": null, "approximate": true, "lines": 2, "node": "node2"}
    ])
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
    // Schema 3.1: the findings computed from the report, and recorded termination settings.
    assert!(
        good["findings"].as_array().is_some_and(|f| !f.is_empty()),
        "a local exit-now trial has findings: {}",
        good["findings"]
    );
    let mut settled = good.clone();
    settled["trial"]["termination_settings"] = termination_settings();
    assert_valid_report(&settled);
    // Schema 4.3: client shards on two kernels, each placed by its own clock.
    let mut sharded = good.clone();
    sharded["trial"]["clock"]["client"] = client_summary();
    sharded["trial"]["clock"]["client_domains"] = client_domains();
    assert_valid_report(&sharded);
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
            "schema major 6",
            Box::new(|r| {
                r["schema_version"] = json!("6.0");
            }),
        ),
        (
            "a finding id outside the closed set (3.1)",
            Box::new(|r| {
                r["findings"][0]["id"] = json!("something-odd");
            }),
        ),
        (
            "a finding resting on no evidence",
            Box::new(|r| {
                r["findings"][0]["evidence"] = json!([]);
            }),
        ),
        (
            "a finding evidence reference of an unknown kind",
            Box::new(|r| {
                r["findings"][0]["evidence"] = json!([{"kind": "guess", "path": "trial"}]);
            }),
        ),
        (
            "a derived number without its rule",
            Box::new(|r| {
                r["findings"][0]["recommendation"] =
                    json!({"text": "x", "derived": {"value": 3, "unit": "s"}});
            }),
        ),
        (
            "a derived number in an unknown unit",
            Box::new(|r| {
                r["findings"][0]["recommendation"] =
                    json!({"text": "x", "derived": {"value": 3, "unit": "min", "rule": "r"}});
            }),
        ),
        (
            "a finding severity outside the set",
            Box::new(|r| {
                r["findings"][0]["severity"] = json!("critical");
            }),
        ),
        (
            "findings null instead of absent or []",
            Box::new(|r| {
                r["findings"] = Value::Null;
            }),
        ),
        (
            "termination settings with an unread grace period written as 0 and a string",
            Box::new(|r| {
                let mut t = termination_settings();
                t["termination_grace_period_seconds"] = json!("30");
                r["trial"]["termination_settings"] = t;
            }),
        ),
        (
            "a preStop hook of an unknown kind",
            Box::new(|r| {
                let mut t = termination_settings();
                t["containers"][0]["pre_stop"]["kind"] = json!("signal");
                r["trial"]["termination_settings"] = t;
            }),
        ),
        (
            "a PDB without disruptions_allowed (null when not read, never missing)",
            Box::new(|r| {
                let mut t = termination_settings();
                t["pdbs"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("disruptions_allowed");
                r["trial"]["termination_settings"] = t;
            }),
        ),
        (
            "maxSurge as a percentage without its sign",
            Box::new(|r| {
                let mut t = termination_settings();
                t["rollout"]["max_surge"] = json!("25");
                r["trial"]["termination_settings"] = t;
            }),
        ),
        (
            "termination settings of an unknown source",
            Box::new(|r| {
                let mut t = termination_settings();
                t["source"] = json!("guess");
                r["trial"]["termination_settings"] = t;
            }),
        ),
        (
            "client_domains with one domain (absent then)",
            Box::new(|r| {
                let mut d = client_domains();
                d.as_array_mut().unwrap().pop();
                r["trial"]["clock"]["client_domains"] = d;
            }),
        ),
        (
            "a client domain on the orchestrator's kernel marked approximate",
            Box::new(|r| {
                let mut d = client_domains();
                d[0]["approximate"] = json!(true);
                r["trial"]["clock"]["client_domains"] = d;
            }),
        ),
        (
            "a client domain on another kernel not marked approximate",
            Box::new(|r| {
                let mut d = client_domains();
                d[1]["approximate"] = json!(false);
                r["trial"]["clock"]["client_domains"] = d;
            }),
        ),
        (
            "a client domain with its unknown node missing instead of null",
            Box::new(|r| {
                let mut d = client_domains();
                d[0].as_object_mut().unwrap().remove("node");
                r["trial"]["clock"]["client_domains"] = d;
            }),
        ),
        (
            "a client domain mapped by wall-clock difference (never for relayed lines)",
            Box::new(|r| {
                let mut d = client_domains();
                d[1]["mapping"] = json!("wall-clock-difference");
                r["trial"]["clock"]["client_domains"] = d;
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

/// A committed probe trial (client pod on the orchestrator's kernel) with its odd flows'
/// client lines relabelled as another kernel's, replayed: the report with two clock domains
/// (schema 4.3) fits the schema.
#[test]
fn a_replay_with_client_shards_on_two_kernels_fits_the_schema() {
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("results/2026-11-30-local-cluster-v0.2.0/drain/trial-001/events.jsonl");
    let text = std::fs::read_to_string(committed).unwrap();
    let mut relabelled = 0;
    let lines: Vec<String> = text
        .lines()
        .map(|raw| {
            let mut v: Value = serde_json::from_str(raw).unwrap();
            let odd = v["flow_id"]
                .as_str()
                .and_then(|f| f.rsplit('-').next())
                .and_then(|n| n.parse::<u32>().ok())
                .is_some_and(|n| n % 2 == 1);
            if v["source"] == "client" && v["boot_id"].is_string() && odd {
                v["boot_id"] = json!("another-kernel");
                relabelled += 1;
            }
            v.to_string()
        })
        .collect();
    assert!(relabelled > 20, "{relabelled} lines relabelled");
    let dir = temp_dir("schema-two-kernels");
    let events = dir.join("events.jsonl");
    std::fs::write(&events, lines.join("\n") + "\n").unwrap();
    let out = run(&[
        "report",
        "--events",
        events.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&dir.join("report.json"));
    assert_valid_report(&report);
    let domains = report["trial"]["clock"]["client_domains"]
        .as_array()
        .unwrap();
    let mappings: Vec<(&str, &str)> = domains
        .iter()
        .map(|d| {
            (
                d["boot_id"].as_str().unwrap(),
                d["mapping"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(mappings.len(), 2);
    assert!(
        mappings.contains(&("another-kernel", "offset-two-sided")),
        "{mappings:?}"
    );
    assert_eq!(
        report["trial"]["clock"]["client"]["mapping"],
        "offset-two-sided"
    );
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
    // Schema 4.0: the fixture's two `Connection: close` ends are announced closes.
    assert_eq!(a["connections"]["closed_announced"], json!(2));
    assert_eq!(a["connections"]["closed_unannounced_fin"], json!(0));
    assert_eq!(a["connection_records"][0]["close"], json!("announced"));
    assert_eq!(a["connection_records"][1]["outcome"], json!("severed"));
    let mut ws = good.clone();
    ws["trial"]["attach"]["connection_records"][0]["close_code"] = json!(1001);
    ws["trial"]["attach"]["connection_records"][0]["close_reason"] = json!("going away");
    assert_valid_report(&ws);
    // Schema 3.1: the windows without a ready endpoint.
    let mut gaps = good.clone();
    gaps["trial"]["attach"]["no_ready_endpoint_windows"] = json!([
        {"start_t_ms": 1000, "end_t_ms": 1800, "duration_ms": 800, "open_at_end": false}
    ]);
    assert_valid_report(&gaps);
    let mut h2 = good.clone();
    h2["trial"]["attach"]["connection_records"][0]["goaway_t_ms"] = json!(1200);
    h2["trial"]["attach"]["connection_records"][0]["goaway_last_stream_id"] = json!(7);
    h2["trial"]["attach"]["connection_records"][0]["goaway_code"] = json!("NO_ERROR");
    h2["trial"]["attach"]["failures"][0]["mechanism"] = json!("goaway-then-reset");
    h2["trial"]["attach"]["failures"][0]["h2_code"] = json!("CANCEL");
    assert_valid_report(&h2);
    // Schema 3.2: the held gRPC Watches (`--grpc-watch`).
    let watch_record = |outcome: &str| {
        json!({
            "flow_id": "grpc-0001", "generation": 1, "outcome": outcome, "stream_id": 3,
            "opened_t_ms": -900, "ended_t_ms": 1500, "not_serving_t_ms": 100,
            "statuses": [{"t_ms": -900, "status": "serving"}, {"t_ms": 100, "status": "not-serving"}],
            "grpc_code": "OK", "mechanism": null, "h2_code": null, "errno": null,
            "within_goaway": true, "instance": "web-a", "pod": "web-a", "phase": "after-exit"
        })
    };
    let with_watch = |rec: Value| {
        let mut r = good.clone();
        r["trial"]["config"]["attach"]["grpc"] =
            json!({"method": null, "service": "", "watch": true});
        r["trial"]["attach"]["watches"] = json!({
            "total": 1, "drained": 1, "ended_with_status": 0, "cut": 0,
            "survived_observation_window": 0, "not_measured": 0, "cut_by_mechanism": {},
            "records": [rec]
        });
        r
    };
    assert_valid_report(&with_watch(watch_record("drained")));
    let mut cut = watch_record("cut");
    cut["grpc_code"] = Value::Null;
    cut["mechanism"] = json!("no-goaway");
    cut["errno"] = json!("ECONNRESET");
    assert_valid_report(&with_watch(cut.clone()));
    let schema = jsonschema::validator_for(&common::schema()).unwrap();
    let mut no_mechanism = cut.clone();
    no_mechanism["mechanism"] = Value::Null;
    let mut new_mechanism = cut;
    new_mechanism["mechanism"] = json!("watch-cut");
    let mut drained_with_errno = watch_record("drained");
    drained_with_errno["errno"] = json!("ECONNRESET");
    let mut unknown_status = watch_record("drained");
    unknown_status["statuses"][0]["status"] = json!("SERVING");
    for (why, rec) in [
        ("an outcome outside the enum", watch_record("graceful")),
        ("a cut Watch without its mechanism", no_mechanism),
        ("a mechanism outside the enum", new_mechanism),
        ("a drained Watch with a socket error", drained_with_errno),
        ("a serving status spelt as on the wire", unknown_status),
    ] {
        assert!(!schema.is_valid(&with_watch(rec)), "accepted {why}");
    }
    let mut watch_false = with_watch(watch_record("drained"));
    watch_false["trial"]["config"]["attach"]["grpc"]["watch"] = json!(false);
    assert!(
        !schema.is_valid(&watch_false),
        "watch: false is written as absent"
    );
    let mutations: Vec<(&str, Mutation)> = vec![
        (
            "a no-ready-endpoint window without open_at_end",
            Box::new(|r| {
                r["trial"]["attach"]["no_ready_endpoint_windows"] =
                    json!([{"start_t_ms": 1, "end_t_ms": 2, "duration_ms": 1}]);
            }),
        ),
        (
            "no-ready-endpoint windows null instead of absent",
            Box::new(|r| {
                r["trial"]["attach"]["no_ready_endpoint_windows"] = Value::Null;
            }),
        ),
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
            "a close kind outside the enum (4.0)",
            Box::new(|r| {
                r["trial"]["attach"]["connection_records"][0]["close"] = json!("graceful");
            }),
        ),
        (
            "a close kind on a severed connection (4.0)",
            Box::new(|r| {
                r["trial"]["attach"]["connection_records"][1]["close"] = json!("unannounced-fin");
            }),
        ),
        (
            "a negative count of announced closes (4.0)",
            Box::new(|r| {
                r["trial"]["attach"]["connections"]["closed_announced"] = json!(-1);
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
    // Kubernetes; 3.1 adds the findings (derived) and termination settings (recorded, so
    // absent here): replaying the recorded local trials gives their reports back byte for byte,
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
        // Schema 3.1 adds `findings`, computed from the report, as the last top-level key: the
        // rest is byte for byte.
        let parsed: Value = serde_json::from_str(&new).unwrap();
        assert!(parsed["findings"].is_array(), "{arm}: {new}");
        let cut = new.find(",\n  \"findings\": ").expect("findings last");
        let new_without = format!("{}\n}}\n", &new[..cut]);
        let versionless = |s: &str| {
            s.lines()
                .filter(|l| !l.trim_start().starts_with("\"schema_version\""))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(versionless(&old), versionless(&new_without), "{arm}");
        assert!(
            parsed["trial"].get("termination_settings").is_none(),
            "{arm}: a recording without settings replays without them"
        );
        assert!(
            new.contains(&format!(
                "\"schema_version\": \"{}\"",
                drainwatch::evidence::report::SCHEMA_VERSION
            )),
            "{arm}"
        );
    }
}
