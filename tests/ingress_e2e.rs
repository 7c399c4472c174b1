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

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{json, temp_dir, wait};
use manifests::{HOST, Provider, manifests};
use support::*;

/// A rollout restart of bad-shutdown in `ns` through its Traefik, judged by `thresholds`.
fn rollout_through(kc: &Path, ns: &str, name: &str, thresholds: &[&str]) -> Run {
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
    dw_run_in(kc, name, ("deployment/bad-shutdown", ns), &args)
}

/// [`rollout_through`], and its report, whose trial terminated two pods of the target.
fn rolled_through(
    kc: &Path,
    ns: &str,
    name: &str,
    thresholds: &[&str],
) -> (Run, serde_json::Value) {
    let r = rollout_through(kc, ns, name, thresholds);
    let rep = json(&r.out.join("report.json"));
    assert_eq!(own_terminations(&rep).len(), 2, "{}", r.stderr);
    (r, rep)
}

/// The 502s of the trial's `attach` section, asserted to be some and each attributed to one of
/// the two pods the rollout `terminated`, at the upstream address the access log named.
fn attributed_502s<'a>(
    a: &'a serde_json::Value,
    terminated: &[String],
) -> Vec<&'a serde_json::Value> {
    assert_eq!(terminated.len(), 2, "{a:#}");
    let through: Vec<&serde_json::Value> = a["failures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["ingress"] == "upstream-error")
        .collect();
    assert!(!through.is_empty(), "no 502 through Traefik: {a:#}");
    for f in &through {
        let pod = f["pod"]
            .as_str()
            .unwrap_or_else(|| panic!("unattributed: {f:#}"));
        assert!(
            terminated.iter().any(|t| t == pod),
            "{pod} not terminated: {f:#}"
        );
        assert!(f["upstream"].as_str().is_some(), "{f:#}");
    }
    through
}

/// Waits for `workload`'s rollout in `ns` to finish.
fn rolled_out(kc: &Path, ns: &str, workload: &str) {
    kubectl_ok(
        kc,
        &["-n", ns, "rollout", "status", workload, "--timeout", "180s"],
    );
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

/// Deletes the namespace when dropped, so a failed assertion leaves nothing behind.
struct Gone(PathBuf, &'static str);

impl Drop for Gone {
    fn drop(&mut self) {
        let _ = kubectl(&self.0, &["delete", "namespace", self.1, "--wait=false"]);
    }
}

fn apply(kc: &Path, provider: Provider) -> Gone {
    let dir = temp_dir("ingress-e2e-manifests");
    let file = dir.join("ingress.yaml");
    std::fs::write(&file, manifests(provider)).unwrap();
    let ns = provider.ns();
    // A run just before this one may have left the namespace terminating: nothing can be
    // created in it until it is gone.
    kubectl_ok(
        kc,
        &[
            "wait",
            "--for=delete",
            &format!("namespace/{ns}"),
            "--timeout=180s",
        ],
    );
    let gone = Gone(kc.to_path_buf(), ns);
    kubectl_ok(kc, &["apply", "-f", file.to_str().unwrap()]);
    for d in ["deployment/traefik", "deployment/bad-shutdown"] {
        rolled_out(kc, ns, d);
    }
    // Traefik has built the rule's router once its API lists it (read through the API
    // server's service proxy; the API's port is the Service's `admin`).
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
    gone
}

#[test]
#[ignore = "needs the local cluster with the example images and Traefik's (make e2e-ingress)"]
fn a_rollout_through_traefiks_ingress_nginx_provider_waits_on_gone_pods_and_retries_refusing_ones_unseen()
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
    let asked = a["requests"]["total"].as_u64().unwrap() + a["dials"]["total"].as_u64().unwrap();
    let logged = ingress["logged"].as_u64().unwrap();
    assert_eq!(
        logged + ingress["not_logged"].as_u64().unwrap(),
        asked,
        "{ingress:#}"
    );
    assert!(logged > 100, "{ingress:#}");
    // Every pod Traefik sent a request to is one of the target's: old or new.
    let upstreams = ingress["upstreams"].as_array().unwrap();
    assert!(!upstreams.is_empty(), "{ingress:#}");
    // bad-shutdown exits at once: the old pods' 502s, each attributed through the access log.
    attributed_502s(a, &own_terminations(&rep));
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
    let findings = rep["findings"].as_array().unwrap();
    let lagged = findings
        .iter()
        .find(|f| f["id"] == "endpoint-lag")
        .unwrap_or_else(|| panic!("no endpoint-lag finding: {findings:#?}"));
    let why = lagged["why"].as_str().unwrap();
    assert!(why.contains("Through the ingress"), "{lagged:#}");
    assert!(
        why.contains("kube-proxy (the Service dialled directly from each client node)"),
        "{lagged:#}"
    );
    let derived = &lagged["recommendation"]["derived"];
    let rule = derived["rule"].as_str().unwrap();
    assert!(
        rule.contains("until the ingress had stopped sending it requests")
            && rule.contains(replica),
        "{lagged:#}"
    );
    let sleep = derived["value"].as_u64().unwrap();
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
