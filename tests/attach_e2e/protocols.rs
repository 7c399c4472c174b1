//! Attach over HTTP/2 and gRPC on the cluster: the h2c port of good-shutdown / bad-shutdown
//! (`--protocol http2`) and grpc-good / grpc-bad (`--protocol grpc`), each through a rollout
//! restart. A graceful example loses nothing; an abrupt one's failures carry a mechanism, are
//! attributed to a pod the trial saw terminate, and fail the policy.

use drainwatch::evidence::event::EventName;
use std::path::Path;

use serde_json::Value;

use crate::common::{self, json, temp_dir};
use crate::support::*;

pub const GRPC_GOOD: &str = "deployment/grpc-good";
pub const GRPC_BAD: &str = "deployment/grpc-bad";

/// A rollout restart of the good `target` over `protocol` (`extra` flags after): exit 0,
/// requests made, nothing failed, both replicas terminated.
fn good_loses_nothing(kc: &Path, name: &str, target: &str, protocol: &str, extra: &[&str]) {
    example(kc, target);
    let before = workload_state(kc, target);
    let mut flags = vec!["--protocol", protocol, "--trigger", "rollout-restart"];
    flags.extend_from_slice(extra);
    let r = dw_run(kc, name, target, &flags);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rep = json(&r.out.join("report.json"));
    common::assert_valid_report(&rep);
    assert_eq!(rep["trial"]["status"], "completed");
    let ls = lines(&r.out);
    let requests = named(&ls, EventName::AttachRequest).len();
    assert!(requests > 0, "{protocol}: no request recorded");
    assert_eq!(
        failures(&ls),
        (0, 0, 0),
        "{target} over {protocol}: nothing fails"
    );
    let pods = own_terminations(&rep);
    assert_eq!(pods.len(), 2, "both old replicas terminated: {pods:?}");
    assert_eq!(workload_state(kc, target), before);
}

/// A rollout restart of the abrupt `target` over `protocol` under a policy of
/// `no-request-failed` and `goaway-before-close`: exit 1, something fails (a request, a dial
/// or a held connection), and every failure has a mechanism;
/// some are attributed to a pod that terminated, in a phase of its termination; and held
/// connections of the old pods ended with no GOAWAY (an exit without a graceful stop). The
/// report's attach section.
fn bad_is_caught(kc: &Path, name: &str, target: &str, protocol: &str) -> Value {
    example(kc, target);
    let before = workload_state(kc, target);
    let policy = temp_dir(&format!("{name}-policy")).join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "version = 1\n[[arm]]\nname = \"{name}\"\ntarget = \"{target}\"\ntarget-namespace = \"{NS}\"\nprotocol = \"{protocol}\"\ntrigger = \"rollout-restart\"\nthresholds = [\"no-request-failed\", \"goaway-before-close\"]\n"
        ),
    )
    .unwrap();
    let out = temp_dir(name);
    run_policy_expecting_miss(kc, &out, target, &policy);
    let arm = out.join(name);
    let ls = lines(&arm);
    let (req, dial, severed) = failures(&ls);
    // What fails depends on what was in flight when the pod exited: a request on a held
    // connection, a dial routed to the pod still in rotation, or a connection cut. A run with no
    // request in flight then fails none (seen: 0 requests, 13 dials), so the sum is the property.
    assert!(
        req + dial + severed > 0,
        "{target} over {protocol}: an exit at once fails requests, dials or held connections ({req} requests, {dial} dials, {severed} severed)"
    );
    let rep = json(&arm.join("report.json"));
    common::assert_valid_report(&rep);
    let pods = terminated_pods(&ls);
    let fails = rep["trial"]["attach"]["failures"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!fails.is_empty(), "{:#}", rep["trial"]["attach"]);
    for f in &fails {
        assert!(
            f["mechanism"].is_string(),
            "every failure has a mechanism: {f}"
        );
    }
    let attributed = fails
        .iter()
        .filter(|f| {
            f["pod"]
                .as_str()
                .is_some_and(|p| pods.iter().any(|t| t == p))
                && f["phase"] != "unattributed"
        })
        .count();
    assert!(
        attributed > 0,
        "failures attributed to a terminated pod ({pods:?}): {fails:#?}"
    );
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("<failure"), "{junit}");
    assert_eq!(workload_state(kc, target), before);
    // The GOAWAY evidence: connections that ended, ended without one (idle ones with a bare
    // FIN, busy ones with no-goaway or a reset), and the policy said so.
    let at = rep["trial"]["attach"].clone();
    let ended = at["connection_records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["ended_t_ms"].is_null())
        .collect::<Vec<_>>();
    assert!(
        !ended.is_empty(),
        "held connections of the old pods ended: {at:#}"
    );
    assert!(
        ended.iter().all(|c| c["goaway_code"].is_null()),
        "an exit at once sends no GOAWAY: {ended:#?}"
    );
    let verdict = json(&out.join("verdict.json"));
    let goaway = verdict["arms"][0]["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "goaway-before-close")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        goaway["verdict"], "fail",
        "goaway-before-close misses: {verdict:#}"
    );
    at
}

/// The mechanisms of `fails`, each once, sorted.
fn mechanisms(fails: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = fails
        .iter()
        .filter_map(|f| f["mechanism"].as_str().map(str::to_string))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The calls are the default `grpc.health.v1.Health/Check`: a draining grpc-good answers
/// NOT_SERVING on purpose (its readiness) while it keeps serving, which is an answer, not a
/// failed call. `--port grpc`: grpc-good's Service has a TLS port too.
#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn rollout_restart_of_grpc_good_over_grpc_fails_no_call() {
    let (kc, _lock) = cluster();
    good_loses_nothing(
        &kc,
        "attach-grpc-good",
        GRPC_GOOD,
        "grpc",
        &["--port", "grpc"],
    );
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn rollout_restart_of_grpc_bad_over_grpc_is_caught_with_no_goaway() {
    let (kc, _lock) = cluster();
    let at = bad_is_caught(&kc, "attach-grpc-bad", GRPC_BAD, "grpc");
    // Which mechanisms show depends on whether a call was in flight when the pod exited (a
    // unary health check takes a few ms of each interval): refused reopens and dials are the
    // common case, no-goaway / reset when a call was caught; the GOAWAY check above holds always.
    eprintln!(
        "grpc-bad mechanisms: {:?}",
        mechanisms(at["failures"].as_array().unwrap())
    );
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn rollout_restart_of_the_good_example_over_http2_fails_nothing() {
    let (kc, _lock) = cluster();
    good_loses_nothing(&kc, "attach-h2-good", GOOD, "http2", &[]);
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn rollout_restart_of_the_bad_example_over_http2_is_caught_by_the_policy() {
    let (kc, _lock) = cluster();
    let at = bad_is_caught(&kc, "attach-h2-bad", BAD, "http2");
    eprintln!(
        "bad-shutdown over http2 mechanisms: {:?}",
        mechanisms(at["failures"].as_array().unwrap())
    );
}

/// gRPC over TLS on grpc-good's `grpcs` port (ALPN h2), the certificate verified against the
/// examples' CA, which reaches the client pod as a ConfigMap of the trial: the same as over
/// h2c, nothing fails, every dial (a TLS handshake and a health check) is served.
#[test]
#[ignore = "needs a Kubernetes cluster and the examples-tls Secret; make e2e-attach"]
fn rollout_restart_of_grpc_good_over_grpc_tls_fails_no_call() {
    let (kc, _lock) = cluster();
    crate::examples_tls(&kc);
    let ca = examples_ca();
    good_loses_nothing(
        &kc,
        "attach-grpcs-good",
        GRPC_GOOD,
        "grpc",
        &["--port", "grpcs", "--tls", "--ca-file", &ca],
    );
}
