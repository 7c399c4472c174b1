//! Through an ingress on the local cluster: Traefik (built here from the Go module proxy,
//! `make traefik-image`) stands in for a user's controller in a namespace of its own, with the
//! bad-shutdown example behind an Ingress rule. `drainwatch run --ingress-service` dials
//! Traefik's Service with the rule's Host, follows Traefik's access log, and attributes each
//! failure of a rollout restart to the pod Traefik sent it to; `--ingress-managed` deploys the
//! same Traefik for each trial, under an identity of the test's own.
//!
//! Run by `make e2e-ingress` (the cluster run's probe lane), with DRAINWATCH_E2E_KUBECONFIG.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;
#[path = "ingress_e2e/managed.rs"]
mod managed;
#[path = "ingress_e2e/manifests.rs"]
mod manifests;
#[path = "ingress_e2e/prestop.rs"]
mod prestop;
#[allow(dead_code, unused_imports)]
#[path = "attach_e2e/support.rs"]
mod support;
#[path = "ingress_e2e/through.rs"]
mod through;

use std::path::Path;
use std::time::Duration;

use common::{json, temp_dir, wait};
use manifests::{HOST, Provider, manifests};
use support::*;
use through::{attributed_failures, every_request_logged, fresh_namespace};

/// Traefik's outcome for a connection to the pod it chose that failed: its log does not say how.
const TRAEFIK_FAILED: &[&str] = &["upstream-error"];

/// A rollout restart of bad-shutdown in `ns` through its Traefik, judged by `thresholds`.
fn rollout_through(kc: &Path, ns: &str, name: &str, thresholds: &[&str]) -> Run {
    rollout_through_with(kc, ns, name, thresholds, &[])
}

/// [`rollout_through`] with `extra` flags.
fn rollout_through_with(
    kc: &Path,
    ns: &str,
    name: &str,
    thresholds: &[&str],
    extra: &[&str],
) -> Run {
    let service = format!("{ns}/traefik:web");
    let mut args = vec![
        "--trigger",
        "rollout-restart",
        "--ingress-service",
        &service,
        "--ingress-host",
        HOST,
    ];
    for t in thresholds {
        args.extend(["--threshold", t]);
    }
    args.extend(extra);
    dw_run_in(kc, name, ("deployment/bad-shutdown", ns), &args)
}

/// [`rollout_through_with`], and its report, whose trial terminated two pods of the target.
fn rolled_through(
    kc: &Path,
    ns: &str,
    name: &str,
    thresholds: &[&str],
    extra: &[&str],
) -> (Run, serde_json::Value) {
    let r = rollout_through_with(kc, ns, name, thresholds, extra);
    let rep = json(&r.out.join("report.json"));
    assert_eq!(own_terminations(&rep).len(), 2, "{}", r.stderr);
    (r, rep)
}

/// Applies the JSON `patch` to bad-shutdown's Deployment in `ns`.
fn patch_bad_shutdown(kc: &Path, ns: &str, patch: &str) {
    kubectl_ok(
        kc,
        &[
            "-n",
            ns,
            "patch",
            "deployment/bad-shutdown",
            "--type=json",
            "-p",
            patch,
        ],
    );
}

fn apply(kc: &Path, provider: Provider) -> through::Gone {
    let dir = temp_dir("ingress-e2e-manifests");
    let file = dir.join("ingress.yaml");
    std::fs::write(&file, manifests(provider)).unwrap();
    let ns = provider.ns();
    let gone = fresh_namespace(kc, ns);
    kubectl_ok(kc, &["apply", "-f", file.to_str().unwrap()]);
    for d in ["deployment/traefik", "deployment/bad-shutdown"] {
        rolled_out(kc, ns, d);
    }
    routed(kc, ns);
    gone
}

/// Waits until Traefik in `ns` has built the rule's router: its API lists it (read through the
/// API server's service proxy; the API's port is the Service's `admin`).
fn routed(kc: &Path, ns: &str) {
    wait::until_every(
        "Traefik's router for the Ingress",
        Duration::from_secs(60),
        Duration::from_millis(500),
        || {
            let o = kubectl(
                kc,
                &[
                    "get",
                    "--raw",
                    &format!(
                        "/api/v1/namespaces/{ns}/services/traefik:admin/proxy/api/http/routers"
                    ),
                ],
            );
            String::from_utf8_lossy(&o.stdout)
                .contains(HOST)
                .then_some(())
        },
    );
}

#[test]
#[ignore = "needs the local cluster with the example images and Traefik's (make e2e-ingress)"]
fn a_rollout_through_traefiks_ingress_nginx_provider_waits_on_gone_pods_retries_unseen_and_passes_with_the_derived_prestop()
 {
    let (kc, _lock) = cluster();
    let provider = Provider::IngressNginx;
    let ns = provider.ns();
    let _gone = apply(&kc, provider);
    let (r, rep) = rolled_through(
        &kc,
        ns,
        "ingress-nginx-rollout",
        &["no-request-failed", "no-ingress-hidden-retry"],
        &[],
    );
    let a = &rep["trial"]["attach"];
    let ingress = &a["ingress"];
    // The same rollout as through Traefik's own provider: the old pods exit at once, and the
    // provider's retry sends each failed attempt on to a pod that answers.
    let retries = &ingress["hidden_retries"];
    let replicas = retries["replicas"].as_array().unwrap();
    assert_eq!(replicas.len(), 1, "{retries:#}");
    let hidden = retries["hidden"]
        .as_u64()
        .unwrap_or_else(|| panic!("not measured: {retries:#}\n{}", r.stderr));
    assert!(hidden > 0, "no hidden retry: {retries:#}");
    // This threshold's own verdict (no-request-failed misses too, on the clients' timeouts).
    let said = format!("no-ingress-hidden-retry: trial-001: {hidden} failed attempt(s)");
    assert!(
        r.stderr
            .lines()
            .any(|l| l.trim_start().starts_with("missed:") && l.contains(&said)),
        "{}",
        r.stderr
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    // ... and the finding that says what it means.
    let findings = rep["findings"].as_array().unwrap();
    let retried = findings
        .iter()
        .find(|f| f["id"] == "ingress-hidden-retry")
        .unwrap_or_else(|| panic!("no ingress-hidden-retry finding: {findings:#?}"));
    assert_eq!(
        retried["title"],
        format!("The ingress retried {hidden} failed attempts its clients never saw."),
        "{retried:#}"
    );
    let seen = replicas[0]["failed_logged"].as_u64().unwrap();
    println!(
        "through the ingress-nginx provider: {hidden} failed attempts retried, {seen} 5xx the clients saw; requests failed {}, dials failed {}",
        a["requests"]["failed"], a["dials"]["failed"]
    );
    // The clients' timeouts: Traefik chose the exited pods' addresses, which answer nothing,
    // and waited on its connect timeout (60 s) until each client gave up; the finding says so.
    let hang = findings
        .iter()
        .find(|f| f["id"] == "ingress-upstream-hang")
        .unwrap_or_else(|| panic!("no ingress-upstream-hang finding: {findings:#?}"));
    let hung = hung_on_exited(a);
    assert!(hung > 0, "{a:#}");
    assert_eq!(
        hang["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "attach-failure")
            .count(),
        hung,
        "{hang:#}"
    );

    // The same pods with a sidecar that outlives the app container: the exited app's port now
    // refuses Traefik's connections at once, and the provider retries each on another pod.
    patch_bad_shutdown(&kc, ns, &manifests::sidecar_patch());
    rolled_out(&kc, ns, "deployment/bad-shutdown");
    let (r2, rep2) = rolled_through(
        &kc,
        ns,
        "ingress-nginx-sidecar",
        &["no-request-failed", "no-new-connection-failed"],
        &[],
    );
    let a2 = &rep2["trial"]["attach"];
    // The pod outlives Traefik's lag by seconds: no client waits on a gone address, and the
    // refused attempts are retried behind the clients' backs.
    assert_eq!(hung_on_exited(a2), 0, "{a2:#}");
    let findings2 = rep2["findings"].as_array().unwrap();
    assert!(
        findings2.iter().all(|f| f["id"] != "ingress-upstream-hang"),
        "{findings2:#?}"
    );
    let hidden2 = a2["ingress"]["hidden_retries"]["hidden"]
        .as_u64()
        .unwrap_or_else(|| panic!("not measured: {:#}", a2["ingress"]));
    assert!(hidden2 > 0, "{:#}", a2["ingress"]);
    println!(
        "with a sidecar: requests failed {} of {}, dials failed {} of {}, hidden retries {}, clients timed out on an exited pod {}; exit {}",
        a2["requests"]["failed"],
        a2["requests"]["total"],
        a2["dials"]["failed"],
        a2["dials"]["total"],
        a2["ingress"]["hidden_retries"]["hidden"],
        hung_on_exited(a2),
        r2.code
    );

    // Without the sidecar again, the Ingress asking ingress-nginx's 1 s connect timeout
    // (`proxy-connect-timeout`, which the provider makes the route's dial timeout; Traefik
    // restarted to take it) and clients that wait 5 s: each of the provider's 3 tries at a
    // gone pod's address fails within 1 s, inside the clients' wait, and is retried.
    patch_bad_shutdown(
        &kc,
        ns,
        r#"[{"op":"remove","path":"/spec/template/spec/containers/1"}]"#,
    );
    rolled_out(&kc, ns, "deployment/bad-shutdown");
    kubectl_ok(
        &kc,
        &[
            "-n",
            ns,
            "annotate",
            "--overwrite",
            "ingress/bad-shutdown",
            "nginx.ingress.kubernetes.io/proxy-connect-timeout=1",
        ],
    );
    kubectl_ok(&kc, &["-n", ns, "rollout", "restart", "deployment/traefik"]);
    rolled_out(&kc, ns, "deployment/traefik");
    routed(&kc, ns);
    let (r3, rep3) = rolled_through(
        &kc,
        ns,
        "ingress-nginx-connect-timeout",
        &["no-request-failed", "no-new-connection-failed"],
        &["--request-timeout", "5s"],
    );
    let a3 = &rep3["trial"]["attach"];
    assert_eq!(
        rep3["trial"]["config"]["attach"]["request_timeout_ms"], 5000,
        "{:#}",
        rep3["trial"]["config"]
    );
    // No client gave up on a gone pod: each try there ended at 1 s, and the provider retried
    // it unseen. What the clients still saw is Traefik's own answer after its last try, each
    // attributed to an old pod: its retry may choose a pod it already tried (ingress-nginx
    // does not), so three tries can each time out on a gone pod's address (504 at 3 s).
    assert_eq!(hung_on_exited(a3), 0, "{a3:#}");
    let hidden3 = a3["ingress"]["hidden_retries"]["hidden"]
        .as_u64()
        .unwrap_or_else(|| panic!("not measured: {:#}", a3["ingress"]));
    assert!(hidden3 > 0, "{:#}", a3["ingress"]);
    let old = own_terminations(&rep3);
    let failures = a3["failures"].as_array().unwrap();
    assert_eq!(
        failures.len() as u64,
        a3["requests"]["failed"].as_u64().unwrap() + a3["dials"]["failed"].as_u64().unwrap(),
        "{a3:#}"
    );
    for f in failures {
        assert!(
            f["ingress"] == "upstream-timeout" || f["ingress"] == "upstream-error",
            "{f:#}"
        );
        let pod = f["pod"].as_str().unwrap_or_default();
        assert!(old.iter().any(|o| o == pod), "{f:#}");
    }
    println!(
        "with a 1 s connect timeout and clients waiting 5 s: requests failed {} of {}, dials failed {} of {}, hidden retries {}, clients timed out on an exited pod {}, failures {:?}; exit {}",
        a3["requests"]["failed"],
        a3["requests"]["total"],
        a3["dials"]["failed"],
        a3["dials"]["total"],
        a3["ingress"]["hidden_retries"]["hidden"],
        hung_on_exited(a3),
        a3["failures"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (
                f["ingress"].clone(),
                f["phase"].clone(),
                f["mechanism"].clone()
            ))
            .collect::<Vec<_>>(),
        r3.code
    );

    // The advice taken through the same provider: the preStop sleep the endpoint-lag finding
    // derived from Traefik's own lag in the first trial. The old pods serve until Traefik has
    // stopped choosing them, so no client fails and no attempt is retried behind the clients'
    // backs: the same as through Traefik's Kubernetes Ingress provider, the migration's parity.
    let (sleep, _) = prestop::derived_from_ingress(&rep);
    patch_bad_shutdown(&kc, ns, &prestop::sleep_patch(sleep));
    rolled_out(&kc, ns, "deployment/bad-shutdown");
    let r4 = prestop::judged_with_sleep(
        sleep,
        ("ingress-nginx-prestop", "ingress-nginx-prestop-again"),
        |name| {
            rollout_through(
                &kc,
                ns,
                name,
                &[
                    "no-request-failed",
                    "no-new-connection-failed",
                    "no-ingress-hidden-retry",
                ],
            )
        },
        || rolled_out(&kc, ns, "deployment/bad-shutdown"),
    );
    assert_eq!(r4.code, 0, "preStop sleep {sleep} s: {}", r4.stderr);
    let rep4 = json(&r4.out.join("report.json"));
    let a4 = &rep4["trial"]["attach"];
    assert_eq!(own_terminations(&rep4).len(), 2, "{a4:#}");
    every_request_logged(a4);
    assert_eq!(a4["ingress"]["hidden_retries"]["hidden"], 0, "{a4:#}");
    println!(
        "with the derived preStop sleep of {sleep} s: requests failed {} of {}, dials failed {} of {}, hidden retries {}",
        a4["requests"]["failed"],
        a4["requests"]["total"],
        a4["dials"]["failed"],
        a4["dials"]["total"],
        a4["ingress"]["hidden_retries"]["hidden"],
    );
}

/// The failures the clients timed out on while the ingress waited on a pod that had exited.
fn hung_on_exited(a: &serde_json::Value) -> usize {
    a["failures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["ingress"] == "client-closed" && f["phase"] == "after-exit")
        .count()
}

#[test]
#[ignore = "needs the local cluster with the example images and Traefik's (make e2e-ingress)"]
fn a_rollout_through_traefik_attributes_each_502_to_its_pod_and_the_derived_prestop_makes_it_pass()
{
    let (kc, _lock) = cluster();
    let ns = Provider::Ingress.ns();
    let _gone = apply(&kc, Provider::Ingress);
    let r = rollout_through(
        &kc,
        ns,
        "ingress-bad-rollout",
        &["ingress-last-request-lag <= 500ms"],
    );
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    assert!(r.stderr.contains("ingress-located"), "{}", r.stderr);
    assert!(r.stderr.contains("ingress-access-log"), "{}", r.stderr);
    let rep = json(&r.out.join("report.json"));
    let cfg = &rep["trial"]["config"];
    assert_eq!(cfg["attach"]["host_header"], HOST, "{cfg:#}");
    assert_eq!(
        cfg["kubernetes"]["attach"]["ingress"]["service"], "traefik",
        "{cfg:#}"
    );
    let a = &rep["trial"]["attach"];
    let ingress = &a["ingress"];
    every_request_logged(a);
    // Every pod Traefik sent a request to is one of the target's: old or new.
    let upstreams = ingress["upstreams"].as_array().unwrap();
    assert!(!upstreams.is_empty(), "{ingress:#}");
    // bad-shutdown exits at once: the old pods' 502s, each attributed through the access log.
    attributed_failures(a, &own_terminations(&rep), TRAEFIK_FAILED);
    // Traefik's routing, per replica from its own log: the one replica is named, every request
    // after the old pods turned not ready was logged, and the threshold's verdict (the exit
    // code) is the one the report's lag decides.
    let routing = &ingress["routing"];
    let replicas = routing["replicas"].as_array().unwrap();
    assert_eq!(replicas.len(), 1, "{routing:#}");
    let replica = replicas[0]["replica"].as_str().unwrap();
    assert!(replica.starts_with("traefik-"), "{routing:#}");
    assert_eq!(routing["not_logged_after_not_ready"], 0, "{routing:#}");
    assert!(
        routing["logged_after_not_ready"].as_u64().unwrap() > 0,
        "{routing:#}"
    );
    let lag = routing["last_request_lag_ms"].as_i64().unwrap();
    assert_eq!(r.code, i32::from(lag > 500), "lag {lag} ms: {}", r.stderr);
    // Traefik's own endpoint view, from its API polled through the trial: its one replica
    // let go of each old pod (fenced or removed), at a time bounded by two polls.
    let view = ingress["view"].as_array().unwrap();
    assert_eq!(view.len(), 1, "{ingress:#}");
    assert!(view[0]["polls"].as_u64().unwrap() > 20, "{:#}", view[0]);
    let left = view[0]["pods"].as_array().unwrap();
    assert_eq!(left.len(), 2, "{:#}", view[0]);
    for p in left {
        assert!(p["left_as"].is_string(), "{p:#}");
        assert!(p["lag_at_most_ms"].as_i64().is_some(), "{p:#}");
    }
    // kube-proxy beside it: the client pods also dialled bad-shutdown's Service directly, and
    // the data plane is read from those dials (not the ones through Traefik), per client node.
    let direct = &a["direct_dials"];
    assert!(direct["total"].as_u64().unwrap() > 20, "{direct:#}");
    assert_eq!(
        cfg["attach"]["direct_dial"]["port"], 80,
        "{:#}",
        cfg["attach"]
    );
    let nodes = a["data_plane"].as_array().unwrap();
    assert!(!nodes.is_empty(), "{a:#}");
    for n in nodes {
        assert!(n["lag_at_least_ms"].as_i64().is_some(), "{n:#}");
    }
    // The Kubernetes Ingress provider retries nothing: Traefik's counters, scraped before the
    // trial's first request and after its last, grew by no 5xx its clients were not sent.
    let retries = &ingress["hidden_retries"];
    assert_eq!(
        retries["replicas"].as_array().map(Vec::len),
        Some(1),
        "{retries:#}"
    );
    assert_eq!(retries["hidden"], 0, "{retries:#}");
    assert!(
        r.stderr.contains("ingress-last-request-lag"),
        "{}",
        r.stderr
    );

    // The advice, taken: the preStop sleep the endpoint-lag finding derived from Traefik's own
    // lag (until its one replica had stopped choosing each old pod, from its access log, not
    // from the failures' times) makes the same rollout through Traefik pass.
    let (sleep, lagged) = prestop::derived_from_ingress(&rep);
    let why = lagged["why"].as_str().unwrap();
    assert!(why.contains("Through the ingress"), "{lagged:#}");
    assert!(
        why.contains("kube-proxy (the Service dialled directly from each client node)"),
        "{lagged:#}"
    );
    let rule = lagged["recommendation"]["derived"]["rule"]
        .as_str()
        .unwrap();
    assert!(rule.contains(replica), "{lagged:#}");
    patch_bad_shutdown(&kc, ns, &prestop::sleep_patch(sleep));
    rolled_out(&kc, ns, "deployment/bad-shutdown");
    let r = prestop::judged_with_sleep(
        sleep,
        ("ingress-prestop-rollout", "ingress-prestop-rollout-again"),
        |name| {
            rollout_through(
                &kc,
                ns,
                name,
                &["no-request-failed", "no-new-connection-failed"],
            )
        },
        || rolled_out(&kc, ns, "deployment/bad-shutdown"),
    );
    assert_eq!(r.code, 0, "preStop sleep {sleep} s: {}", r.stderr);
    let rep = json(&r.out.join("report.json"));
    let pre_stop = &rep["trial"]["termination_settings"]["containers"][0]["pre_stop"];
    assert_eq!(pre_stop["kind"], "sleep", "{pre_stop:#}");
    assert_eq!(
        pre_stop["sleep_seconds"].as_u64(),
        Some(sleep),
        "{pre_stop:#}"
    );
    assert_eq!(
        own_terminations(&rep).len(),
        2,
        "{:#}",
        rep["trial"]["attach"]
    );

    // One replica, deleted: the pod, in its preStop sleep, still serves, but Traefik fences a
    // terminating endpoint and never falls back to it, so until the replacement is ready it has
    // no server to choose and answers 503 itself, where kube-proxy (the direct dials) keeps
    // sending new connections to the serving, terminating pod.
    kubectl_ok(
        &kc,
        &["-n", ns, "scale", "deployment/bad-shutdown", "--replicas=1"],
    );
    rolled_out(&kc, ns, "deployment/bad-shutdown");
    let service = format!("{ns}/traefik:web");
    let r = dw_run_in(
        &kc,
        "ingress-single-delete",
        ("deployment/bad-shutdown", ns),
        &[
            "--trigger",
            "delete",
            "--ingress-service",
            &service,
            "--ingress-host",
            HOST,
            "--threshold",
            "no-request-failed",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let rep = json(&r.out.join("report.json"));
    let a = &rep["trial"]["attach"];
    let empty: Vec<&serde_json::Value> = a["failures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["ingress"] == "no-available-server")
        .collect();
    assert!(!empty.is_empty(), "no 503 of Traefik's own: {a:#}");
    let findings = rep["findings"].as_array().unwrap();
    assert!(
        findings
            .iter()
            .any(|f| f["id"] == "ingress-no-available-server"),
        "{findings:#?}"
    );
    println!(
        "one replica deleted through Traefik: {} requests answered 503 by Traefik itself; direct dials to the Service {} of {} served",
        empty.len(),
        a["direct_dials"]["served"],
        a["direct_dials"]["total"]
    );
}
