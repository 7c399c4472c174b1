//! `--ingress-managed` on the local cluster: a Traefik each trial deploys, as an identity
//! `drainwatch rbac --ingress-managed` renders, in namespaces of this test's own (the other
//! lanes' cluster tests run beside it).

use std::path::{Path, PathBuf};

use crate::TRAEFIK_FAILED;
use crate::common::{self, json, temp_dir};
use crate::manifests;
use crate::support::*;
use crate::through::attributed_failures;

/// The target's namespace of the managed-ingress test, and its identity's.
const MANAGED_NS: &str = "drainwatch-ingress-managed-e2e";
const MANAGED_SA_NS: &str = "drainwatch-ingress-managed-sa";

/// How long good-shutdown serves on after SIGTERM, s: past Traefik's lag, which on a loaded
/// two-core machine (a cold CI run) reached 5.5 s, past the example's default 5.
const GOOD_DRAIN_S: u32 = 10;

/// Deletes the identity `drainwatch rbac` rendered (its namespace and bindings; the shared
/// roles stay) and the target's namespace when dropped.
struct Identity(PathBuf, String);

impl Drop for Identity {
    fn drop(&mut self) {
        let _ = common::delete_identity(&self.0, &self.1, "ingress-managed-rbac");
        let _ = kubectl(
            &self.0,
            &["delete", "namespace", MANAGED_NS, "--wait=false"],
        );
    }
}

/// `drainwatch rbac --namespace MANAGED_SA_NS --target-namespace MANAGED_NS --ingress-managed`,
/// applied; returns it (to delete) and a kubeconfig of its ServiceAccount's token.
fn managed_identity(kc: &Path) -> (Identity, PathBuf) {
    let o = std::process::Command::new(common::bin())
        .args([
            "rbac",
            "--namespace",
            MANAGED_SA_NS,
            "--target-namespace",
            MANAGED_NS,
            "--ingress-managed",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let yaml = String::from_utf8(o.stdout).unwrap();
    let file = temp_dir("ingress-managed-rbac").join("rbac.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let identity = Identity(kc.to_path_buf(), yaml);
    kubectl_ok(kc, &["apply", "-f", file.to_str().unwrap()]);
    let token = kubectl_ok(
        kc,
        &[
            "-n",
            MANAGED_SA_NS,
            "create",
            "token",
            "drainwatch",
            "--duration",
            "1h",
        ],
    );
    let sa_kc = token_kubeconfig(kc, token.trim(), "ingress-managed-kubeconfig");
    (identity, sa_kc)
}

/// `--ingress-managed`: the trial deploys Traefik in its own namespace and routes through it,
/// as an identity `drainwatch rbac --ingress-managed` rendered (it may bind the controller's
/// role, not hold it), with either provider; nothing of it is left beside the target after, and
/// the good example passes through it.
#[test]
#[ignore = "needs the local cluster with the example images and Traefik's (make e2e-ingress)"]
fn a_managed_traefik_is_deployed_per_trial_under_the_rendered_rbac_and_removed_after() {
    let (kc, _lock) = cluster();
    let target = temp_dir("ingress-managed-target").join("target.yaml");
    std::fs::write(&target, manifests::target(MANAGED_NS)).unwrap();
    kubectl_ok(&kc, &["apply", "-f", target.to_str().unwrap()]);
    let (_identity, sa_kc) = managed_identity(&kc);
    rolled_out(&kc, MANAGED_NS, "deployment/bad-shutdown");
    let image = manifests::traefik_image();
    let left_beside_target = || {
        kubectl_ok(
            &kc,
            &[
                "-n",
                MANAGED_NS,
                "get",
                "ingresses,rolebindings",
                "-o",
                "name",
            ],
        )
        .lines()
        // The trial's Ingress and RoleBinding, `drainwatch-ingress-<trial namespace>`.
        .filter(|l| {
            l.split_once('/')
                .is_some_and(|(_, name)| name.starts_with("drainwatch-ingress-"))
        })
        .map(String::from)
        .collect::<Vec<_>>()
    };
    assert_eq!(left_beside_target(), Vec::<String>::new(), "a clean start");
    let run = |name: &str, extra: &[&str]| {
        let mut args = vec![
            "--trigger",
            "rollout-restart",
            "--ingress-managed",
            "--ingress-image",
            &image,
        ];
        args.extend(extra);
        let r = dw_run_in(&sa_kc, name, ("deployment/bad-shutdown", MANAGED_NS), &args);
        rolled_out(&kc, MANAGED_NS, "deployment/bad-shutdown");
        r
    };

    // Traefik's own provider: each 502 of the rollout attributed to an old pod.
    let r = run("ingress-managed", &["--threshold", "no-request-failed"]);
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    for check in ["permissions", "ingress-deployed", "ingress-access-log"] {
        assert!(
            r.stderr.contains(&format!("preflight [ ok ] {check}")),
            "{check}: {}",
            r.stderr
        );
    }
    let rep = json(&r.out.join("report.json"));
    common::assert_valid_report(&rep);
    let cfg = &rep["trial"]["config"];
    let it = &cfg["kubernetes"]["attach"]["ingress"];
    assert!(it["namespace"].is_null(), "{it:#}");
    assert_eq!(it["managed"]["provider"], "kubernetes-ingress", "{it:#}");
    assert_eq!(it["managed"]["image"], image.as_str(), "{it:#}");
    assert_eq!(cfg["attach"]["host_header"], "drainwatch.test", "{cfg:#}");
    let a = &rep["trial"]["attach"];
    let ingress = &a["ingress"];
    assert!(ingress["logged"].as_u64().unwrap() > 100, "{ingress:#}");
    let through = attributed_failures(a, &own_terminations(&rep), TRAEFIK_FAILED);
    assert_eq!(r.code, 1, "502s miss no-request-failed: {}", r.stderr);
    assert_eq!(left_beside_target(), Vec::<String>::new(), "{}", r.stderr);

    // The ingress-nginx provider: its retries hidden from the clients, read from its counters.
    let r = run(
        "ingress-managed-nginx",
        &["--ingress-provider", "kubernetes-ingress-nginx"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rep = json(&r.out.join("report.json"));
    let it = &rep["trial"]["config"]["kubernetes"]["attach"]["ingress"];
    assert_eq!(
        it["managed"]["provider"], "kubernetes-ingress-nginx",
        "{it:#}"
    );
    let retries = &rep["trial"]["attach"]["ingress"]["hidden_retries"];
    assert_eq!(
        retries["replicas"].as_array().map(Vec::len),
        Some(1),
        "{retries:#}"
    );
    let hidden = retries["hidden"]
        .as_u64()
        .unwrap_or_else(|| panic!("not measured: {retries:#}\n{}", r.stderr));
    assert_eq!(left_beside_target(), Vec::<String>::new(), "{}", r.stderr);

    // A run killed once it has triggered: its Ingress and RoleBinding stay beside the target
    // until `drainwatch cleanup --run` replays the journal and deletes them by name (the
    // identity may not list them in every namespace).
    let (out, state) = (
        temp_dir("ingress-managed-killed"),
        temp_dir("ingress-managed-killed-state"),
    );
    let run = format!("20261206-2100{:02}-{:08x}", 1, std::process::id());
    let mut cmd = std::process::Command::new(common::bin());
    cmd.args(dw_args_in(
        &sa_kc,
        &out,
        ("deployment/bad-shutdown", MANAGED_NS),
        &[
            "--trigger",
            "rollout-restart",
            "--ingress-managed",
            "--ingress-image",
            &image,
            "--run-id",
            &run,
        ],
    ))
    .env("DRAINWATCH_STATE_DIR", &state);
    let (child, triggered, log) = common::spawn_cmd_until_trigger(cmd);
    let mut child = common::Reaper(child);
    common::wait::until(
        "the managed trial's trigger",
        std::time::Duration::from_secs(180),
        || {
            assert!(
                child.0.try_wait().unwrap().is_none(),
                "the run ended before its trigger:\n{}",
                log.lock().unwrap()
            );
            triggered
                .load(std::sync::atomic::Ordering::SeqCst)
                .then_some(())
        },
    );
    child.0.kill().unwrap(); // SIGKILL
    child.0.wait().unwrap();
    assert_eq!(left_beside_target().len(), 2, "{}", log.lock().unwrap());
    let o = common::cleanup_run(&sa_kc, &run, &state);
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{said}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        said.contains("ingress drainwatch-ingress-managed-e2e/"),
        "{said}"
    );
    assert_eq!(left_beside_target(), Vec::<String>::new(), "{said}");
    rolled_out(&kc, MANAGED_NS, "deployment/bad-shutdown");

    // A controller that cannot come up (an image from a registry on a closed loopback port):
    // preflight names it and what its pod shows, no report is written, and what the trial put
    // beside the target is gone.
    let missing = "127.0.0.1:1/drainwatch/missing-traefik:0";
    let r = dw_run_in(
        &sa_kc,
        "ingress-managed-missing",
        ("deployment/bad-shutdown", MANAGED_NS),
        &[
            "--trigger",
            "rollout-restart",
            "--ingress-managed",
            "--ingress-image",
            missing,
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    for said in [
        "preflight check \"ingress-deployed\" failed",
        "will not become ready",
        "ImagePullBackOff",
        missing,
    ] {
        assert!(r.stderr.contains(said), "{said}: {}", r.stderr);
    }
    assert!(!r.out.join("report.json").exists());
    assert_eq!(left_beside_target(), Vec::<String>::new(), "{}", r.stderr);

    // The good example through the same controller: it serves on past Traefik's lag, and
    // every threshold of the ingress path holds.
    let good = manifests::good_shutdown(MANAGED_NS, GOOD_DRAIN_S);
    let file = temp_dir("ingress-managed-good").join("good.yaml");
    std::fs::write(&file, good).unwrap();
    kubectl_ok(&kc, &["apply", "-f", file.to_str().unwrap()]);
    rolled_out(&kc, MANAGED_NS, "deployment/good-shutdown");
    let mut args = vec![
        "--trigger",
        "rollout-restart",
        "--ingress-managed",
        "--ingress-image",
        &image,
    ];
    for t in [
        "no-request-failed",
        "no-new-connection-failed",
        "no-ingress-hidden-retry",
    ] {
        args.extend(["--threshold", t]);
    }
    let r = dw_run_in(
        &sa_kc,
        "ingress-managed-good",
        ("deployment/good-shutdown", MANAGED_NS),
        &args,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rep = json(&r.out.join("report.json"));
    let a = &rep["trial"]["attach"];
    assert_eq!(own_terminations(&rep).len(), 2, "{a:#}");
    assert!(a["ingress"]["logged"].as_u64().unwrap() > 100, "{a:#}");
    assert_eq!(a["ingress"]["not_logged"], 0, "{a:#}");
    assert_eq!(left_beside_target(), Vec::<String>::new(), "{}", r.stderr);

    // Its only replica scaled away: Traefik answers 503 itself while it fences the pod, then
    // 404 once it drops the route of the emptied service; neither reached a pod.
    kubectl_ok(
        &kc,
        &[
            "-n",
            MANAGED_NS,
            "scale",
            "deployment/good-shutdown",
            "--replicas=1",
        ],
    );
    rolled_out(&kc, MANAGED_NS, "deployment/good-shutdown");
    let r = dw_run_in(
        &sa_kc,
        "ingress-managed-scale-to-zero",
        ("deployment/good-shutdown", MANAGED_NS),
        &[
            "--trigger",
            "scale",
            "--ingress-managed",
            "--ingress-image",
            &image,
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rep = json(&r.out.join("report.json"));
    let failures = rep["trial"]["attach"]["failures"].as_array().unwrap();
    let answered = |outcome: &str| {
        failures
            .iter()
            .filter(|f| f["ingress"] == outcome)
            .inspect(|f| assert!(f["pod"].is_null(), "{f:#}"))
            .count()
    };
    let (fenced, unrouted) = (answered("no-available-server"), answered("no-route"));
    assert!(fenced > 0 && unrouted > 0, "{fenced} 503s, {unrouted} 404s");
    let ids: Vec<&str> = rep["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    for id in ["ingress-no-available-server", "ingress-no-route"] {
        assert!(ids.contains(&id), "{id}: {ids:?}");
    }
    assert_eq!(left_beside_target(), Vec::<String>::new(), "{}", r.stderr);
    println!(
        "managed Traefik: {} 502s attributed; its ingress-nginx provider hid {hidden} failed attempts; good-shutdown passed; scaled to zero: {fenced} × 503, {unrouted} × 404",
        through.len()
    );
}
