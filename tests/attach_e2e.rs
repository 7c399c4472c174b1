//! `drainwatch run --target` end to end: the two example services (examples/k8s/) on a real
//! cluster, through the terminations that happen in production.
//!
//! Runs only when `DRAINWATCH_E2E_KUBECONFIG` names an admin kubeconfig (`make e2e-attach` sets
//! it to the local cluster's, and `DRAINWATCH_E2E_IMAGE` to this checkout's image, which
//! `make example-images` builds and imports with the example images). Without it every test
//! returns at once, saying so; with it a broken cluster fails the tests. Tests take a lock, so
//! trials never overlap. Traffic goes only to the cluster's own addresses.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::{Reaper, json, spawn_until_trigger, temp_dir};
use serde_json::Value;

static SERIAL: Mutex<()> = Mutex::new(());
const NS: &str = "drainwatch-examples";

/// The admin kubeconfig and the lock; `None` when not configured.
fn cluster() -> Option<(PathBuf, MutexGuard<'static, ()>)> {
    let Some(kc) = std::env::var_os("DRAINWATCH_E2E_KUBECONFIG") else {
        eprintln!(
            "not run: set DRAINWATCH_E2E_KUBECONFIG (make e2e-attach) to test against a cluster"
        );
        return None;
    };
    let guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let kc = PathBuf::from(kc);
    let out = kubectl(&kc, &["get", "nodes", "-o", "name"]);
    assert!(
        out.status.success() && !out.stdout.is_empty(),
        "DRAINWATCH_E2E_KUBECONFIG={} is set but the cluster does not answer: {}",
        kc.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some((kc, guard))
}

fn image() -> String {
    std::env::var("DRAINWATCH_E2E_IMAGE").unwrap_or_else(|_| {
        format!(
            "ghcr.io/drainwatch/drainwatch:{}-attach",
            env!("CARGO_PKG_VERSION")
        )
    })
}

fn kubectl(kc: &Path, args: &[&str]) -> Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kc)
        .args(args)
        .output()
        .expect("kubectl runs")
}

fn kubectl_ok(kc: &Path, args: &[&str]) -> String {
    let o = kubectl(kc, args);
    assert!(
        o.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn manifest(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/k8s")
        .join(name)
        .display()
        .to_string()
}

/// Applies the namespace and `app`'s Deployment, Service and PDB, and waits for the rollout.
fn example(kc: &Path, app: &str) {
    kubectl_ok(
        kc,
        &[
            "apply",
            "-f",
            &manifest("namespace.yaml"),
            "-f",
            &manifest(&format!("{app}.yaml")),
        ],
    );
    kubectl_ok(
        kc,
        &[
            "-n",
            NS,
            "rollout",
            "status",
            &format!("deployment/{app}"),
            "--timeout",
            "180s",
        ],
    );
}

/// What attach changes, and must leave as found: replicas, the deletion-cost annotations,
/// every node's cordon.
fn workload_state(kc: &Path, app: &str) -> (String, String, String) {
    let replicas = kubectl_ok(
        kc,
        &[
            "-n",
            NS,
            "get",
            &format!("deployment/{app}"),
            "-o",
            "jsonpath={.spec.replicas}",
        ],
    );
    let costs = kubectl_ok(
        kc,
        &[
            "-n",
            NS,
            "get",
            "pods",
            "-l",
            &format!("app.kubernetes.io/name={app}"),
            "-o",
            r#"jsonpath={range .items[*]}{.metadata.annotations.controller\.kubernetes\.io/pod-deletion-cost}{end}"#,
        ],
    );
    let cordons = kubectl_ok(
        kc,
        &[
            "get",
            "nodes",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.spec.unschedulable};{end}",
        ],
    );
    (replicas, costs, cordons)
}

fn generation(kc: &Path, app: &str) -> String {
    kubectl_ok(
        kc,
        &[
            "-n",
            NS,
            "get",
            &format!("deployment/{app}"),
            "-o",
            "jsonpath={.metadata.generation}",
        ],
    )
}

struct Run {
    code: i32,
    stderr: String,
    out: PathBuf,
}

fn dw_args(kc: &Path, out: &Path, app: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "run",
        "--target",
        &format!("deployment/{app}"),
        "--target-namespace",
        NS,
        "--image",
        &image(),
        "--tcp-flows",
        "4",
        "--dial-rate",
        "20",
        "--interval",
        "200ms",
        "--settle-seconds",
        "3",
        "--post-terminal-grace",
        "3",
        "--ready-timeout",
        "120",
        "--kubeconfig",
        kc.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn dw_run(kc: &Path, name: &str, app: &str, extra: &[&str]) -> Run {
    let out = temp_dir(name);
    let o = Command::new(common::bin())
        .args(dw_args(kc, &out, app, extra))
        .output()
        .expect("drainwatch runs");
    let r = Run {
        code: o.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        out,
    };
    let lines: Vec<&str> = r.stderr.lines().collect();
    eprintln!(
        "--- {name}: exit {}\n{}",
        r.code,
        lines[lines.len().saturating_sub(30)..].join("\n")
    );
    r
}

/// The trial's event lines.
fn lines(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn named<'a>(ls: &'a [Value], event: &str) -> Vec<&'a Value> {
    ls.iter().filter(|l| l["event"] == event).collect()
}

/// Failed requests, failed dials and severed connections, as the client recorded them.
fn failures(ls: &[Value]) -> (usize, usize, usize) {
    let bad_req = named(ls, "attach_request")
        .into_iter()
        .filter(|l| l["result"] != "ok")
        .count();
    let bad_dial = named(ls, "attach_dial")
        .into_iter()
        .filter(|l| l["result"] != "served")
        .count();
    (bad_req, bad_dial, named(ls, "attach_conn_severed").len())
}

/// Every pod the trial saw terminate has its own lane: a deletion and an exit, by name.
fn terminated_pods(ls: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = named(ls, "pod_deletion_timestamp_set")
        .into_iter()
        .filter_map(|l| l["instance"].as_str().map(str::to_string))
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn rollout_restart_of_the_good_example_fails_nothing() {
    let Some((kc, _lock)) = cluster() else {
        return;
    };
    example(&kc, "good-shutdown");
    let before = workload_state(&kc, "good-shutdown");
    let r = dw_run(
        &kc,
        "attach-good-rollout",
        "good-shutdown",
        &["--trigger", "rollout-restart"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rep = json(&r.out.join("report.json"));
    common::assert_valid_report(&rep);
    assert_eq!(rep["trial"]["status"], "completed");
    let ls = lines(&r.out);
    let requests = named(&ls, "attach_request").len();
    let dials = named(&ls, "attach_dial").len();
    assert!(
        requests > 0 && dials > 0,
        "{requests} requests, {dials} dials"
    );
    assert_eq!(failures(&ls), (0, 0, 0), "good shutdown: nothing fails");
    let pods = terminated_pods(&ls);
    assert_eq!(pods.len(), 2, "both old replicas terminated: {pods:?}");
    for p in &pods {
        let exited = named(&ls, "container_terminated")
            .into_iter()
            .any(|l| l["instance"] == p.as_str());
        assert!(exited, "{p} has a container_terminated in its lane");
    }
    assert!(!named(&ls, "rollout_complete").is_empty());
    assert_eq!(workload_state(&kc, "good-shutdown"), before);
    let restarted = kubectl_ok(
        &kc,
        &[
            "-n",
            NS,
            "get",
            "deployment/good-shutdown",
            "-o",
            r#"jsonpath={.spec.template.metadata.annotations.kubectl\.kubernetes\.io/restartedAt}"#,
        ],
    );
    assert!(!restarted.is_empty(), "the documented annotation is left");
}

#[test]
fn rollout_restart_of_the_bad_example_is_caught_by_the_policy() {
    let Some((kc, _lock)) = cluster() else {
        return;
    };
    example(&kc, "bad-shutdown");
    let before = workload_state(&kc, "bad-shutdown");
    let policy = temp_dir("attach-bad-policy").join("policy.toml");
    std::fs::write(
        &policy,
        "version = 1\n[[arm]]\nname = \"bad-rollout\"\ntarget = \"deployment/bad-shutdown\"\ntarget-namespace = \"drainwatch-examples\"\ntrigger = \"rollout-restart\"\nthresholds = [\"no-request-failed\", \"no-new-connection-refused\"]\n",
    )
    .unwrap();
    let out = temp_dir("attach-bad-rollout");
    let mut args = dw_args(&kc, &out, "bad-shutdown", &[]);
    // The policy names the target; the flags only tune the flows.
    let i = args.iter().position(|a| a == "--target").unwrap();
    args.drain(i..i + 4);
    args.extend(["--policy".to_string(), policy.display().to_string()]);
    let o = Command::new(common::bin()).args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    eprintln!("{stderr}");
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let ls = lines(&out.join("bad-rollout"));
    let (req, dial, severed) = failures(&ls);
    assert!(
        req + dial + severed > 0,
        "an exit at once on SIGTERM fails something"
    );
    for l in named(&ls, "attach_request")
        .into_iter()
        .chain(named(&ls, "attach_dial"))
        .filter(|l| l["result"] != "ok" && l["result"] != "served")
    {
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
    assert_eq!(workload_state(&kc, "bad-shutdown"), before);
}

#[test]
fn drain_node_replaces_the_good_example_elsewhere_and_uncordons() {
    let Some((kc, _lock)) = cluster() else {
        return;
    };
    example(&kc, "good-shutdown");
    let before = workload_state(&kc, "good-shutdown");
    let r = dw_run(
        &kc,
        "attach-good-drain",
        "good-shutdown",
        &["--trigger", "drain-node"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let ls = lines(&r.out);
    let cordoned = named(&ls, "node_cordoned");
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
        workload_state(&kc, "good-shutdown"),
        before,
        "uncordoned, replicas as found"
    );
    // Put the replicas back on both nodes for the next test (a rollout spreads them again).
    kubectl_ok(
        &kc,
        &["-n", NS, "rollout", "restart", "deployment/good-shutdown"],
    );
    example(&kc, "good-shutdown");
}

#[test]
fn a_target_that_cannot_be_measured_is_named_before_anything_changes() {
    let Some((kc, _lock)) = cluster() else {
        return;
    };
    example(&kc, "good-shutdown");
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
    let before = (
        workload_state(&kc, "good-shutdown"),
        generation(&kc, "good-shutdown"),
    );
    let cases: [(&str, &str, Vec<&str>, &str); 4] = [
        (
            "missing",
            "no-such-app",
            vec!["--trigger", "rollout-restart"],
            "preflight check \"target-found\" failed: deployment no-such-app not found in namespace drainwatch-examples",
        ),
        (
            "selects-nothing",
            "good-shutdown",
            vec!["--service", "selects-nothing", "--trigger", "scale"],
            "preflight check \"service-selects-target\" failed: service selects-nothing",
        ),
        (
            "no-port",
            "good-shutdown",
            vec!["--port", "9999", "--trigger", "drain-node"],
            "preflight check \"service-port\" failed: service good-shutdown has no port 9999 (its ports: http=80/TCP)",
        ),
        (
            "no-port-name",
            "good-shutdown",
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
        (
            workload_state(&kc, "good-shutdown"),
            generation(&kc, "good-shutdown")
        ),
        before,
        "nothing changed"
    );
    let _ = kubectl(&kc, &["-n", NS, "delete", "service", "selects-nothing"]);
}

fn interrupt_after_trigger(kc: &Path, name: &str, trigger: &str) -> (Value, String) {
    let out = temp_dir(name);
    let (child, triggered, log) =
        spawn_until_trigger(dw_args(kc, &out, "good-shutdown", &["--trigger", trigger]));
    let mut child = Reaper(child);
    let t = Instant::now();
    while !triggered.load(Ordering::SeqCst) {
        assert!(
            t.elapsed() < Duration::from_secs(180),
            "no trigger within 180 s:\n{}",
            log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
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
fn an_interrupted_run_leaves_the_workload_as_found() {
    let Some((kc, _lock)) = cluster() else {
        return;
    };
    example(&kc, "good-shutdown");
    let before = workload_state(&kc, "good-shutdown");
    assert!(before.0 == "2", "the example runs 2 replicas: {before:?}");

    // scale: down by one, then Ctrl-C: the replica count comes back.
    let (_, log) = interrupt_after_trigger(&kc, "attach-ctrl-c-scale", "scale");
    assert!(log.contains("scaled back to 2 replicas"), "{log}");
    assert_eq!(workload_state(&kc, "good-shutdown"), before);
    example(&kc, "good-shutdown");

    // drain-node: cordoned, then Ctrl-C mid-drain: the node is uncordoned.
    let (_, log) = interrupt_after_trigger(&kc, "attach-ctrl-c-drain", "drain-node");
    assert!(log.contains("uncordoned"), "{log}");
    assert_eq!(workload_state(&kc, "good-shutdown"), before);
    kubectl_ok(
        &kc,
        &["-n", NS, "rollout", "restart", "deployment/good-shutdown"],
    );
    example(&kc, "good-shutdown");
}

/// The shipped attach Role grants exactly what attach checks, and a bare identity is named.
#[test]
fn the_attach_rbac_grants_what_attach_needs() {
    let Some((kc, _lock)) = cluster() else {
        return;
    };
    example(&kc, "good-shutdown");
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

    // A run under the ServiceAccount gets past every permission check (the refusal below is
    // about the port, after the permissions preflight).
    let tok = kubectl_ok(
        &kc,
        &[
            "-n",
            "drainwatch-system",
            "create",
            "token",
            "drainwatch",
            "--duration",
            "1h",
        ],
    );
    let sa_kc = token_kubeconfig(&kc, tok.trim(), "attach-rbac-kubeconfig");
    let r = dw_run(
        &sa_kc,
        "attach-rbac",
        "good-shutdown",
        &["--trigger", "drain-node", "--port", "9999"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("preflight [ ok ] permissions"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("\"service-port\" failed"), "{}", r.stderr);

    // Without the attach binding the same run names what it lacks.
    kubectl_ok(
        &kc,
        &["delete", "-f", attach.to_str().unwrap(), "--wait=false"],
    );
    let r = dw_run(
        &sa_kc,
        "attach-rbac-denied",
        "good-shutdown",
        &["--trigger", "drain-node"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("preflight check \"permissions\" failed"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("patch nodes"), "{}", r.stderr);
    assert!(r.stderr.contains("rbac-attach.yaml"), "{}", r.stderr);
    let _ = kubectl(
        &kc,
        &["delete", "-f", base.to_str().unwrap(), "--wait=false"],
    );
}

/// A kubeconfig for the admin kubeconfig's server and CA, authenticating with `token`.
fn token_kubeconfig(admin: &Path, token: &str, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(admin).unwrap();
    let cfg: serde_norway::Value = serde_norway::from_str(&text).unwrap();
    let cluster = &cfg["clusters"][0]["cluster"];
    let server = cluster["server"].as_str().unwrap();
    let ca = cluster["certificate-authority-data"]
        .as_str()
        .unwrap_or_default();
    let y = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u, namespace: {NS}}}\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: {token}\n"
    );
    let p = temp_dir(name).join("kubeconfig");
    std::fs::write(&p, y).unwrap();
    p
}
