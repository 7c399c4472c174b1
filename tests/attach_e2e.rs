//! `drainwatch run --target` end to end: the example services (examples/k8s/) on a real
//! cluster, through the terminations that happen in production.
//!
//! Runs only when `DRAINWATCH_E2E_KUBECONFIG` names an admin kubeconfig (`make e2e-attach` sets
//! it to the local cluster's, and `DRAINWATCH_E2E_IMAGE` to this checkout's image, which
//! `make example-images` builds and imports with the example images). Every test is
//! `#[ignore]`d and `make e2e-attach` runs them with `-- --ignored`; run without the variable,
//! or against a broken cluster, they fail: nothing here skips. Tests take a lock, so
//! trials never overlap. Traffic goes only to the cluster's own addresses.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;
#[path = "attach_e2e/earned.rs"]
mod earned;
#[path = "attach_e2e/grpc_watch.rs"]
mod grpc_watch;
#[path = "attach_e2e/own_terminations.rs"]
mod own_terminations;
#[path = "attach_e2e/protocols.rs"]
mod protocols;
#[path = "attach_e2e/stuck.rs"]
mod stuck;
#[path = "attach_e2e/support.rs"]
mod support;

use drainwatch::evidence::event::EventName;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{json, temp_dir, wait, wait_for_trigger};
use serde_json::Value;
use support::*;

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn rollout_restart_of_the_good_example_fails_nothing() {
    let (kc, _lock) = cluster();
    example(&kc, GOOD);
    let before = workload_state(&kc, GOOD);
    let r = dw_run(
        &kc,
        "attach-good-rollout",
        GOOD,
        &["--trigger", "rollout-restart"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rep = json(&r.out.join("report.json"));
    common::assert_valid_report(&rep);
    assert_eq!(rep["trial"]["status"], "completed");
    let ls = lines(&r.out);
    let requests = named(&ls, EventName::AttachRequest).len();
    let dials = named(&ls, EventName::AttachDial).len();
    assert!(
        requests > 0 && dials > 0,
        "{requests} requests, {dials} dials"
    );
    assert_eq!(failures(&ls), (0, 0, 0), "good shutdown: nothing fails");
    let pods = own_terminations(&rep);
    assert_eq!(pods.len(), 2, "both old replicas terminated: {pods:?}");
    // The client pod's node and what it routed to each old pod (trial.attach.data_plane).
    let dp = rep["trial"]["attach"]["data_plane"]
        .as_array()
        .expect("the prober's dials were answered: a data-plane view");
    assert_eq!(dp.len(), 1, "one client pod, one node: {dp:?}");
    assert!(
        dp[0]["node"].as_str().is_some_and(|n| !n.is_empty()),
        "the client's node is recorded: {dp:?}"
    );
    assert_eq!(
        pod_names(&dp[0]["pods"]),
        pods,
        "a routing entry per terminated pod"
    );
    for p in &pods {
        let exited = named(&ls, EventName::ContainerTerminated)
            .into_iter()
            .any(|l| l["instance"] == p.as_str());
        assert!(exited, "{p} has a container_terminated in its lane");
    }
    assert!(!named(&ls, EventName::RolloutComplete).is_empty());
    assert_eq!(workload_state(&kc, GOOD), before);
    let restarted = kubectl_ok(
        &kc,
        &[
            "-n",
            NS,
            "get",
            GOOD,
            "-o",
            r#"jsonpath={.spec.template.metadata.annotations.kubectl\.kubernetes\.io/restartedAt}"#,
        ],
    );
    assert!(!restarted.is_empty(), "the documented annotation is left");
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn rollout_restart_of_the_bad_example_is_caught_by_the_policy() {
    let (kc, _lock) = cluster();
    example(&kc, BAD);
    let before = workload_state(&kc, BAD);
    let policy = temp_dir("attach-bad-policy").join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[[arm]]\nname = \"bad-rollout\"\ntarget = \"deployment/bad-shutdown\"\ntarget-namespace = \"drainwatch-examples\"\ntrigger = \"rollout-restart\"\nthresholds = [\"no-request-failed\", \"no-new-connection-refused\"]\n",
    )
    .unwrap();
    let out = temp_dir("attach-bad-rollout");
    run_policy_expecting_miss(&kc, &out, BAD, &policy);
    let ls = lines(&out.join("bad-rollout"));
    let (req, dial, severed) = failures(&ls);
    assert!(
        req + dial + severed > 0,
        "an exit at once on SIGTERM fails something"
    );
    let failed: Vec<&Value> = named(&ls, EventName::AttachRequest)
        .into_iter()
        .chain(named(&ls, EventName::AttachDial))
        .filter(|l| l["result"] != "ok" && l["result"] != "served")
        .collect();
    assert_eq!(failed.len(), req + dial, "the failed requests and dials");
    for l in failed {
        assert!(
            l["result"].is_string(),
            "every failure has a mechanism: {l}"
        );
    }
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("<failure"), "{junit}");
    assert!(
        junit.chars().any(|c| c.is_ascii_digit()),
        "the failure names the numbers: {junit}"
    );
    let rep = json(&out.join("bad-rollout").join("report.json"));
    common::assert_valid_report(&rep);
    assert_eq!(workload_state(&kc, BAD), before);
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn drain_node_replaces_the_good_example_elsewhere_and_uncordons() {
    let (kc, _lock) = cluster();
    example(&kc, GOOD);
    let before = workload_state(&kc, GOOD);
    let r = dw_run(&kc, "attach-good-drain", GOOD, &["--trigger", "drain-node"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let ls = lines(&r.out);
    let cordoned = named(&ls, EventName::NodeCordoned);
    assert_eq!(cordoned.len(), 1);
    let drained = cordoned[0]["detail"]
        .as_str()
        .unwrap()
        .split([';', ' '])
        .next()
        .unwrap()
        .to_string();
    let evicted = terminated_pods(&ls);
    assert!(!evicted.is_empty(), "the pods on {drained} were evicted");
    assert_eq!(
        failures(&ls),
        (0, 0, 0),
        "a drained good service fails nothing"
    );
    let nodes = kubectl_ok(
        &kc,
        &[
            "-n",
            NS,
            "get",
            "pods",
            "-l",
            "app.kubernetes.io/name=good-shutdown",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName} {end}",
        ],
    );
    let pods: Vec<&str> = nodes.split_whitespace().collect();
    assert_eq!(pods.len(), 2, "both replicas run again: {nodes}");
    for p in &pods {
        assert!(
            !p.ends_with(&format!("={drained}")),
            "every replacement runs off the drained node {drained}: {nodes}"
        );
        assert!(
            !evicted.iter().any(|e| p.starts_with(&format!("{e}="))),
            "the evicted pods are gone: {nodes}"
        );
    }
    assert_eq!(
        workload_state(&kc, GOOD),
        before,
        "uncordoned, replicas as found"
    );
    // Put the replicas back on both nodes for the next test (a rollout spreads them again).
    kubectl_ok(&kc, &["-n", NS, "rollout", "restart", GOOD]);
    example(&kc, GOOD);
}

/// The lane of terminated pod `pod` in the report: every transition observed, exit code 0.
fn full_lane(rep: &Value, pod: &str) {
    let lanes = rep["trial"]["attach"]["pods"].as_array().unwrap();
    let lane = lanes
        .iter()
        .find(|l| l["pod"] == pod)
        .unwrap_or_else(|| panic!("no lane for {pod}: {lanes:?}"));
    for k in [
        "deletion_requested_t_ms",
        "endpoint_not_ready_t_ms",
        "endpoint_removed_t_ms",
        "exited_t_ms",
    ] {
        assert!(lane[k].is_i64(), "{pod}: {k} observed: {lane}");
    }
    assert_eq!(lane["exit_code"], 0, "{lane}");
    assert_eq!(lane["failures"], 0, "{lane}");
}

/// A StatefulSet replaces each pod under its predecessor's name: the trial must still see each
/// terminated pod's lane end and the replacement come up, and settle (not run out the window).
#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn a_statefulset_target_rolls_deletes_evicts_and_scales_without_a_failure() {
    let (kc, _lock) = cluster();
    example(&kc, GOOD_STS);
    let before = workload_state(&kc, GOOD_STS);
    assert_eq!(before.0, "2", "the example runs 2 replicas");
    let (sts0, sts1) = ("good-shutdown-sts-0", "good-shutdown-sts-1");
    for (trigger, victims) in [
        ("rollout-restart", vec![sts0, sts1]),
        ("delete", vec![sts0]),
        ("evict", vec![sts0]),
        // A scale-down takes the highest ordinal, whatever drainwatch might prefer.
        ("scale", vec![sts1]),
    ] {
        let uids = pod_uids(&kc, GOOD_STS);
        let t = Instant::now();
        let r = dw_run(
            &kc,
            &format!("attach-sts-{trigger}"),
            GOOD_STS,
            &["--trigger", trigger, "--observe-timeout", "150"],
        );
        assert_eq!(r.code, 0, "{trigger}: {}", r.stderr);
        assert!(
            r.stderr.contains("service good-shutdown-sts ClusterIP"),
            "the routed Service, not the headless governing one: {}",
            r.stderr
        );
        let rep = json(&r.out.join("report.json"));
        common::assert_valid_report(&rep);
        assert_eq!(rep["trial"]["status"], "completed");
        let ls = lines(&r.out);
        let (requests, dials) = (
            named(&ls, EventName::AttachRequest).len(),
            named(&ls, EventName::AttachDial).len(),
        );
        assert!(
            requests > 0 && dials > 0,
            "{requests} requests, {dials} dials"
        );
        assert_eq!(failures(&ls), (0, 0, 0), "{trigger}: nothing fails");
        assert_eq!(
            own_terminations(&rep),
            victims,
            "{trigger}: the pods terminated"
        );
        for p in &victims {
            full_lane(&rep, p);
        }
        let settled = named(&ls, EventName::DisruptionSettled);
        assert_eq!(
            settled.len(),
            1,
            "{trigger}: the same-named replacements were told from the pods they replace: {:?}",
            named(&ls, EventName::DisruptionNotSettled)
        );
        if trigger == "rollout-restart" {
            let done = named(&ls, EventName::RolloutComplete);
            assert_eq!(done.len(), 1);
            assert!(
                done[0]["detail"]
                    .as_str()
                    .unwrap()
                    .starts_with("statefulset/good-shutdown-sts rolled out"),
                "{}",
                done[0]
            );
        }
        if trigger == "scale" {
            let chosen = named(&ls, EventName::PodUnderTestChosen);
            assert!(
                chosen[0]["detail"].as_str().unwrap().starts_with(sts1),
                "the victim is named before the trigger: {}",
                chosen[0]
            );
            let issued = named(&ls, EventName::TriggerApiReturned);
            assert!(
                issued[0]["detail"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("pod {sts1} (its highest ordinal")),
                "and in it: {}",
                issued[0]
            );
        }
        assert_eq!(workload_state(&kc, GOOD_STS), before, "{trigger}");
        eprintln!("{trigger}: {:?}", t.elapsed());
        example(&kc, GOOD_STS);
        // Each victim came back under its name as a new pod; the others were left alone.
        let after = pod_uids(&kc, GOOD_STS);
        assert_eq!(after.len(), 2, "{after:?}");
        for (was, now) in uids.iter().zip(&after) {
            let pod = was.split('=').next().unwrap();
            assert_eq!(
                was == now,
                !victims.contains(&pod),
                "{trigger}: {was} -> {now}"
            );
        }
    }
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn a_target_that_cannot_be_measured_is_named_before_anything_changes() {
    let (kc, _lock) = cluster();
    example(&kc, GOOD);
    // A Service that selects nothing, beside the good one.
    let nothing = temp_dir("attach-nothing").join("svc.yaml");
    std::fs::write(
        &nothing,
        format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: selects-nothing\n  namespace: {NS}\nspec:\n  selector:\n    app.kubernetes.io/name: nothing-at-all\n  ports:\n    - port: 80\n"
        ),
    )
    .unwrap();
    kubectl_ok(&kc, &["apply", "-f", nothing.to_str().unwrap()]);
    let before = (workload_state(&kc, GOOD), generation(&kc, GOOD));
    let cases: [(&str, &str, Vec<&str>, &str); 4] = [
        (
            "missing",
            "deployment/no-such-app",
            vec!["--trigger", "rollout-restart"],
            "preflight check \"target-found\" failed: deployment no-such-app not found in namespace drainwatch-examples",
        ),
        (
            "selects-nothing",
            GOOD,
            vec!["--service", "selects-nothing", "--trigger", "scale"],
            "preflight check \"service-selects-target\" failed: service selects-nothing",
        ),
        (
            "no-port",
            GOOD,
            vec!["--port", "9999", "--trigger", "drain-node"],
            "preflight check \"service-port\" failed: service good-shutdown has no port 9999 (its ports: http=80/TCP)",
        ),
        (
            "no-port-name",
            GOOD,
            vec!["--port", "grpc", "--trigger", "rollout-restart"],
            "preflight check \"service-port\" failed: service good-shutdown has no port grpc",
        ),
    ];
    for (name, app, extra, want) in cases {
        let t = Instant::now();
        let r = dw_run(&kc, &format!("attach-refused-{name}"), app, &extra);
        assert_eq!(r.code, 2, "{name}: {}", r.stderr);
        assert!(
            r.stderr.contains(want),
            "{name}: want {want:?} in\n{}",
            r.stderr
        );
        assert!(r.stderr.contains("invariant:"), "{}", r.stderr);
        assert!(!r.out.join("report.json").exists(), "{name}: no report");
        assert!(
            !r.stderr.contains("drainwatch: namespace "),
            "{name}: refused before drainwatch created anything"
        );
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{name}: {:?}",
            t.elapsed()
        );
    }
    assert_eq!(
        (workload_state(&kc, GOOD), generation(&kc, GOOD)),
        before,
        "nothing changed"
    );
    let _ = kubectl(&kc, &["-n", NS, "delete", "service", "selects-nothing"]);
}

fn interrupt_after_trigger(kc: &Path, name: &str, trigger: &str) -> (Value, String) {
    let out = temp_dir(name);
    let (child, triggered, log) =
        spawn_until_trigger(dw_args(kc, &out, GOOD, &["--trigger", trigger]));
    let mut child = Reaper(child);
    wait_for_trigger(&mut child.0, &triggered, &log, Duration::from_secs(180));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.0.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.0.wait().unwrap();
    let log = log.lock().unwrap().clone();
    eprintln!("--- {name}\n{log}");
    assert_eq!(status.code(), Some(130), "{log}");
    let rep = json(&out.join("report.json"));
    common::assert_valid_report(&rep);
    assert_eq!(rep["trial"]["status"], "aborted");
    (rep, log)
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn an_interrupted_run_leaves_the_workload_as_found() {
    let (kc, _lock) = cluster();
    example(&kc, GOOD);
    let before = workload_state(&kc, GOOD);
    assert!(before.0 == "2", "the example runs 2 replicas: {before:?}");

    // scale: down by one, then Ctrl-C: the replica count comes back.
    let (_, log) = interrupt_after_trigger(&kc, "attach-ctrl-c-scale", "scale");
    assert!(log.contains("scaled back to 2 replicas"), "{log}");
    assert_eq!(workload_state(&kc, GOOD), before);
    example(&kc, GOOD);

    // drain-node: cordoned, then Ctrl-C mid-drain: the node is uncordoned.
    let (_, log) = interrupt_after_trigger(&kc, "attach-ctrl-c-drain", "drain-node");
    assert!(log.contains("uncordoned"), "{log}");
    assert_eq!(workload_state(&kc, GOOD), before);
    kubectl_ok(&kc, &["-n", NS, "rollout", "restart", GOOD]);
    example(&kc, GOOD);
}

/// The shipped attach Role grants exactly what attach checks: a whole rollout-restart trial
/// runs under it, and without it the same run is refused by name.
#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn the_attach_rbac_grants_what_attach_needs() {
    let (kc, _lock) = cluster();
    example(&kc, GOOD);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let base = root.join("deploy/rbac.yaml");
    let attach = root.join("deploy/rbac-attach.yaml");
    kubectl_ok(
        &kc,
        &[
            "apply",
            "-f",
            base.to_str().unwrap(),
            "-f",
            attach.to_str().unwrap(),
        ],
    );
    let sa = "system:serviceaccount:drainwatch-system:drainwatch";
    // `RESOURCE[/SUBRESOURCE]`, as `kubectl auth can-i VERB RESOURCE --subresource SUB` asks.
    let can = |verb: &str, res: &str, ns: Option<&str>| {
        let (res, sub) = res
            .split_once('/')
            .map_or((res, None), |(r, s)| (r, Some(s)));
        let mut a = vec!["auth", "can-i", verb, res, "--as", sa];
        if let Some(sub) = sub {
            a.extend(["--subresource", sub]);
        }
        if let Some(ns) = ns {
            a.extend(["-n", ns]);
        }
        kubectl(&kc, &a).status.success()
    };
    for (verb, res) in [
        ("get", "deployments.apps"),
        ("watch", "deployments.apps"),
        ("patch", "deployments.apps"),
        ("patch", "deployments.apps/scale"),
        ("patch", "statefulsets.apps"),
        ("list", "services"),
        ("patch", "pods"),
        ("delete", "pods"),
        ("create", "pods/eviction"),
        ("watch", "endpointslices.discovery.k8s.io"),
    ] {
        assert!(can(verb, res, Some(NS)), "{verb} {res} in {NS}");
    }
    assert!(can("patch", "nodes", None), "patch nodes");
    assert!(can("get", "nodes", None), "get nodes");
    assert!(
        !can("patch", "deployments.apps", Some("kube-system")),
        "the workload rights are only in the target namespace"
    );
    assert!(!can("delete", "nodes", None), "no more than cordon");

    // A whole rollout-restart trial under the ServiceAccount, bound to the base Role and the
    // attach Role and nothing else: every permission check passes and the report is written.
    let sa_kc = token_kubeconfig(&kc, &sa_token(&kc, "drainwatch"), "attach-rbac-kubeconfig");
    let rolled_from = generation(&kc, GOOD);
    let r = dw_run(
        &sa_kc,
        "attach-rbac",
        GOOD,
        &["--trigger", "rollout-restart"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("preflight [ ok ] permissions"),
        "{}",
        r.stderr
    );
    let rep = json(&r.out.join("report.json"));
    common::assert_valid_report(&rep);
    assert_eq!(rep["trial"]["status"], "completed");
    let ls = lines(&r.out);
    assert!(
        !named(&ls, EventName::AttachRequest).is_empty()
            && !named(&ls, EventName::AttachDial).is_empty()
    );
    assert_eq!(failures(&ls), (0, 0, 0), "good shutdown: nothing fails");
    let own = own_terminations(&rep);
    assert_eq!(own.len(), 2, "both old replicas terminated: {own:?}");
    assert!(!named(&ls, EventName::RolloutComplete).is_empty());
    assert_ne!(generation(&kc, GOOD), rolled_from, "the rollout happened");
    example(&kc, GOOD);

    // Without the attach Role's bindings the same run is refused by name before anything
    // changes (the roles stay: other lanes' identities bind them).
    let o = common::delete_identity(
        &kc,
        &std::fs::read_to_string(&attach).unwrap(),
        "attach-rbac-unbound",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    wait::until(
        "the attach Role's binding is gone",
        Duration::from_secs(30),
        || (!can("patch", "deployments.apps", Some(NS))).then_some(()),
    );
    let before = (
        workload_state(&kc, GOOD),
        generation(&kc, GOOD),
        pod_uids(&kc, GOOD),
    );
    for (name, trigger, lacks) in [
        (
            "attach-rbac-denied",
            "rollout-restart",
            "patch deployments (group apps) in namespace drainwatch-examples",
        ),
        ("attach-rbac-denied-drain", "drain-node", "patch nodes"),
    ] {
        let r = dw_run(&sa_kc, name, GOOD, &["--trigger", trigger]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(
            r.stderr.contains("preflight check \"permissions\" failed"),
            "{}",
            r.stderr
        );
        assert!(
            r.stderr.contains(lacks),
            "{trigger}: want {lacks:?} in {}",
            r.stderr
        );
        assert!(r.stderr.contains("rbac-attach.yaml"), "{}", r.stderr);
        assert!(!r.out.join("report.json").exists(), "{trigger}: no report");
        assert!(
            !r.stderr.contains("drainwatch: namespace "),
            "{trigger}: refused before drainwatch created anything"
        );
    }
    assert_eq!(
        (
            workload_state(&kc, GOOD),
            generation(&kc, GOOD),
            pod_uids(&kc, GOOD)
        ),
        before,
        "nothing changed: no rollout, no pod replaced"
    );
    let _ = common::delete_identity(
        &kc,
        &std::fs::read_to_string(&base).unwrap(),
        "attach-rbac-base",
    );
}

/// ws-good's wss port needs the examples-tls Secret, which `make examples-apply` makes.
fn examples_tls(kc: &Path) {
    let o = kubectl(kc, &["-n", NS, "get", "secret", "examples-tls"]);
    assert!(
        o.status.success(),
        "no secret {NS}/examples-tls: run make examples-apply first"
    );
    assert!(
        Path::new(&examples_ca()).is_file(),
        "no {}: run make examples-apply first",
        examples_ca()
    );
}

/// The held WebSocket connections that ended with a close frame, and their close codes.
fn ws_closes(ls: &[Value]) -> Vec<i64> {
    named(ls, EventName::AttachConnClosedGraceful)
        .into_iter()
        .map(|l| l["close_code"].as_i64().unwrap_or(-1))
        .collect()
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn rollout_restart_of_ws_good_closes_with_1001_and_loses_nothing() {
    let (kc, _lock) = cluster();
    examples_tls(&kc);
    example(&kc, WS_GOOD);
    let before = workload_state(&kc, WS_GOOD);
    let r = dw_run(
        &kc,
        "attach-ws-good",
        WS_GOOD,
        &[
            "--protocol",
            "websocket",
            "--port",
            "ws",
            "--path",
            "/ws",
            "--trigger",
            "rollout-restart",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rep = json(&r.out.join("report.json"));
    common::assert_valid_report(&rep);
    assert_eq!(rep["trial"]["status"], "completed");
    let ls = lines(&r.out);
    assert_eq!(failures(&ls), (0, 0, 0), "ws-good: nothing fails");
    let closes = ws_closes(&ls);
    assert!(!closes.is_empty(), "the old pods closed their connections");
    assert!(closes.iter().all(|c| *c == 1001), "{closes:?}");
    let at = &rep["trial"]["attach"];
    assert_eq!(at["failures"].as_array().unwrap().len(), 0, "{at:#}");
    assert!(
        at["connections"]["reopened"].as_u64().unwrap() >= 1,
        "{at:#}"
    );
    let own = own_terminations(&rep);
    assert_eq!(own.len(), 2, "both old replicas terminated: {own:?}");
    assert_eq!(workload_state(&kc, WS_GOOD), before);
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn rollout_restart_of_ws_bad_ends_without_close_frames_and_fails_the_policy() {
    let (kc, _lock) = cluster();
    example(&kc, WS_BAD);
    let policy = temp_dir("attach-ws-bad-policy").join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[[arm]]\nname = \"ws-bad-rollout\"\ntarget = \"deployment/ws-bad\"\ntarget-namespace = \"drainwatch-examples\"\nprotocol = \"websocket\"\npath = \"/ws\"\ntrigger = \"rollout-restart\"\nthresholds = [\"no-ws-abnormal-close\"]\n",
    )
    .unwrap();
    let out = temp_dir("attach-ws-bad-rollout");
    run_policy_expecting_miss(&kc, &out, WS_BAD, &policy);
    let dir = out.join("ws-bad-rollout");
    let ls = lines(&dir);
    let pods = own_terminations(&json(&dir.join("report.json")));
    assert_eq!(pods.len(), 2, "both old replicas terminated: {pods:?}");
    // summary.md (the PR comment's text) draws a lane per terminated pod and the replacements'
    // readiness.
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for p in &pods {
        assert!(
            summary.contains(&format!("    section pod {p}\n")),
            "a lane for {p}: {summary}"
        );
    }
    assert!(
        summary.contains("    section replacements (endpoint ready)\n"),
        "{summary}"
    );
    let severed = named(&ls, EventName::AttachConnSevered);
    assert!(
        !severed.is_empty(),
        "an exit at once severs the held connections"
    );
    for l in &severed {
        let m = l["result"].as_str().unwrap();
        assert!(m == "ws-no-close-frame" || m == "reset", "{l}");
    }
    let rep = json(&dir.join("report.json"));
    common::assert_valid_report(&rep);
    let f: Vec<&Value> = rep["trial"]["attach"]["failures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["kind"] == "connection"
                && severed
                    .iter()
                    .any(|l| l["flow_id"] == f["flow_id"] && l["seq"] == f["seq"])
        })
        .collect();
    assert_eq!(
        f.len(),
        severed.len(),
        "each severed connection is a failure"
    );
    // A reopen refused or reset while the ClusterIP still routed to the exited pod is a
    // failure too, but of no connection a pod served (it may be unattributed); each severed
    // one is attributed to the pod that served it.
    for x in f {
        // Attributed: the pod that served the connection, one of those the rollout ended.
        let pod = x["pod"].as_str().unwrap_or_else(|| panic!("{x:#}"));
        assert!(pods.iter().any(|p| p == pod), "{pod} not in {pods:?}");
        assert_ne!(x["phase"], "unattributed", "{x:#}");
    }
    assert!(ws_closes(&ls).is_empty(), "ws-bad sends no close frame");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("no-ws-abnormal-close"), "{junit}");
    assert!(junit.contains("<failure"), "{junit}");
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn wss_on_ws_good_verified_against_the_examples_ca_loses_nothing() {
    let (kc, _lock) = cluster();
    examples_tls(&kc);
    example(&kc, WS_GOOD);
    let ca = examples_ca();
    let r = dw_run(
        &kc,
        "attach-wss-good",
        WS_GOOD,
        &[
            "--protocol",
            "websocket",
            "--port",
            "wss",
            "--path",
            "/ws",
            "--tls",
            "--ca-file",
            &ca,
            "--trigger",
            "rollout-restart",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rep = json(&r.out.join("report.json"));
    common::assert_valid_report(&rep);
    let asked = &rep["trial"]["config"]["kubernetes"]["attach"]["tls"];
    assert_eq!(asked["ca_file"], ca.as_str(), "{asked}");
    let tls = &rep["trial"]["config"]["attach"]["tls"];
    assert_eq!(
        tls["server_name"], "ws-good.drainwatch-examples.svc",
        "{tls}"
    );
    assert_eq!(tls["ca_file"], "/etc/drainwatch/ca/ca.crt", "{tls}");
    assert_eq!(tls["insecure_skip_verify"], false);
    let ls = lines(&r.out);
    assert_eq!(failures(&ls), (0, 0, 0), "wss on ws-good: nothing fails");
    assert!(ws_closes(&ls).iter().all(|c| *c == 1001));
    assert!(
        named(&ls, EventName::AttachDial)
            .iter()
            .any(|l| l["result"] == "served"),
        "TLS handshakes and upgrades served"
    );
    // The CA ConfigMap went with the trial.
    let run = rep["environment"]["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!run.is_empty(), "{:#}", rep["environment"]);
    let left = kubectl_ok(
        &kc,
        &[
            "get",
            "configmaps",
            "-A",
            "-l",
            &format!("drainwatch.dev/run={run}"),
            "-o",
            "name",
        ],
    );
    assert!(left.trim().is_empty(), "left behind: {left}");
}
