//! What the attach end-to-end tests share: the cluster and its lock, kubectl, the example
//! workloads as `KIND/NAME` targets, drainwatch runs and their event lines.

use drainwatch::evidence::event::EventName;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::MutexGuard;

use serde_json::Value;

use crate::common::{self, temp_dir};

pub const NS: &str = "drainwatch-examples";
/// The examples, as `--target` names them (examples/k8s/NAME.yaml each).
pub const GOOD: &str = "deployment/good-shutdown";
pub const BAD: &str = "deployment/bad-shutdown";
pub const GOOD_STS: &str = "statefulset/good-shutdown-sts";
pub const WS_GOOD: &str = "deployment/ws-good";
pub const WS_BAD: &str = "deployment/ws-bad";

/// The examples' CA on this host (`make examples-apply` writes it beside the kubeconfig).
pub fn examples_ca() -> String {
    std::env::var("DRAINWATCH_E2E_EXAMPLES_CA")
        .unwrap_or_else(|_| "/var/lib/drainwatch-cluster/examples-ca.crt".into())
}

/// The admin kubeconfig and the lock; panics when not configured.
pub fn cluster() -> (PathBuf, MutexGuard<'static, ()>) {
    common::cluster("e2e-attach")
}

pub fn image() -> String {
    std::env::var("DRAINWATCH_E2E_IMAGE").unwrap_or_else(|_| {
        format!(
            "ghcr.io/drainwatch/drainwatch:{}-attach",
            env!("CARGO_PKG_VERSION")
        )
    })
}

pub use crate::common::kubectl;

pub fn kubectl_ok(kc: &Path, args: &[&str]) -> String {
    let o = kubectl(kc, args);
    assert!(
        o.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The NAME of a `KIND/NAME` target: its manifest's name and its pods' `app.kubernetes.io/name`.
pub fn app(target: &str) -> &str {
    target.split_once('/').map_or(target, |(_, n)| n)
}

pub fn manifest(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/k8s")
        .join(name)
        .display()
        .to_string()
}

/// Applies the namespace and `target`'s example (workload, Services, PDB), and waits for the
/// rollout.
pub fn example(kc: &Path, target: &str) {
    kubectl_ok(
        kc,
        &[
            "apply",
            "-f",
            &manifest("namespace.yaml"),
            "-f",
            &manifest(&format!("{}.yaml", app(target))),
        ],
    );
    rolled_out(kc, NS, target);
}

/// Waits for `workload`'s rollout in `ns` to finish.
pub fn rolled_out(kc: &Path, ns: &str, workload: &str) {
    kubectl_ok(
        kc,
        &["-n", ns, "rollout", "status", workload, "--timeout", "180s"],
    );
}

/// What attach changes, and must leave as found: replicas, the deletion-cost annotations,
/// every node's cordon.
pub fn workload_state(kc: &Path, target: &str) -> (String, String, String) {
    let replicas = kubectl_ok(
        kc,
        &["-n", NS, "get", target, "-o", "jsonpath={.spec.replicas}"],
    );
    let costs = kubectl_ok(
        kc,
        &[
            "-n",
            NS,
            "get",
            "pods",
            "-l",
            &format!("app.kubernetes.io/name={}", app(target)),
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

pub fn generation(kc: &Path, target: &str) -> String {
    kubectl_ok(
        kc,
        &[
            "-n",
            NS,
            "get",
            target,
            "-o",
            "jsonpath={.metadata.generation}",
        ],
    )
}

/// `NAME=UID` of each pod of `target`, sorted by name.
pub fn pod_uids(kc: &Path, target: &str) -> Vec<String> {
    let out = kubectl_ok(
        kc,
        &[
            "-n",
            NS,
            "get",
            "pods",
            "-l",
            &format!("app.kubernetes.io/name={}", app(target)),
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.metadata.uid} {end}",
        ],
    );
    let mut v: Vec<String> = out.split_whitespace().map(str::to_string).collect();
    v.sort();
    v
}

pub struct Run {
    pub code: i32,
    pub stderr: String,
    pub out: PathBuf,
}

pub fn dw_args(kc: &Path, out: &Path, target: &str, extra: &[&str]) -> Vec<String> {
    dw_args_in(kc, out, (target, NS), extra)
}

/// [`dw_args`] against `target` in namespace `ns`.
pub fn dw_args_in(
    kc: &Path,
    out: &Path,
    (target, ns): (&str, &str),
    extra: &[&str],
) -> Vec<String> {
    let mut args: Vec<String> = [
        "run",
        "--target",
        target,
        "--target-namespace",
        ns,
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

pub fn dw_run(kc: &Path, name: &str, target: &str, extra: &[&str]) -> Run {
    dw_run_in(kc, name, (target, NS), extra)
}

/// [`dw_run`] against `target` in namespace `ns`.
pub fn dw_run_in(kc: &Path, name: &str, (target, ns): (&str, &str), extra: &[&str]) -> Run {
    let out = temp_dir(name);
    let args = dw_args_in(kc, &out, (target, ns), extra);
    let o = Command::new(common::bin())
        .args(&args)
        .output()
        .expect("drainwatch runs");
    save_command(&out, &args);
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
pub fn lines(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn named(ls: &[Value], event: EventName) -> Vec<&Value> {
    ls.iter().filter(|l| l["event"] == event.as_str()).collect()
}

/// Failed requests, failed dials and severed connections, as the client recorded them.
pub fn failures(ls: &[Value]) -> (usize, usize, usize) {
    let bad_req = named(ls, EventName::AttachRequest)
        .into_iter()
        .filter(|l| l["result"] != "ok")
        .count();
    let bad_dial = named(ls, EventName::AttachDial)
        .into_iter()
        .filter(|l| l["result"] != "served")
        .count();
    (
        bad_req,
        bad_dial,
        named(ls, EventName::AttachConnSevered).len(),
    )
}

/// Every pod the trial saw terminate has its own lane: a deletion and an exit, by name.
pub fn terminated_pods(ls: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = named(ls, EventName::PodDeletionTimestampSet)
        .into_iter()
        .filter_map(|l| l["instance"].as_str().map(str::to_string))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The pods the report judges as this trial's own terminations (`trial.attach.pods`), sorted.
/// Pods an earlier rollout was still terminating when the run began are context
/// (`trial.attach.context_pods`): their deletion events are in the stream too, so counting
/// `terminated_pods` would count them.
pub fn own_terminations(rep: &Value) -> Vec<String> {
    pod_names(&rep["trial"]["attach"]["pods"])
}

/// The `pod` names of a report's pod lanes, sorted.
pub fn pod_names(pods: &Value) -> Vec<String> {
    let mut v: Vec<String> = pods
        .as_array()
        .expect("an array of pod lanes")
        .iter()
        .map(|p| p["pod"].as_str().expect("a pod name").to_string())
        .collect();
    v.sort();
    v
}

// The background run and its reaper are shared with the probe e2e tests (tests/common).
pub use crate::common::{Reaper, spawn_until_trigger};

/// A token of ServiceAccount `sa` in drainwatch-system, valid for an hour.
pub fn sa_token(kc: &Path, sa: &str) -> String {
    kubectl_ok(
        kc,
        &[
            "-n",
            "drainwatch-system",
            "create",
            "token",
            sa,
            "--duration",
            "1h",
        ],
    )
    .trim()
    .to_string()
}

/// A kubeconfig for the admin kubeconfig's server and CA, authenticating with `token`.
pub fn token_kubeconfig(admin: &Path, token: &str, name: &str) -> PathBuf {
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

/// `command.txt` beside a finished run's output: the exact command, for results/ (written after
/// the run, since `--out` must be empty when it starts).
pub fn save_command(out: &Path, args: &[String]) {
    let line = std::iter::once("drainwatch".to_string())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    std::fs::write(out.join("command.txt"), line + "\n").unwrap();
}

/// Runs a policy that names `target` (and the protocol), with `dw_args`' flags tuning the flows,
/// writes `command.txt`, and returns once the run exited 1: a threshold missed, as every bad
/// example's must.
pub fn run_policy_expecting_miss(kc: &Path, out: &Path, target: &str, policy: &Path) {
    let mut args = dw_args(kc, out, target, &[]);
    // The policy names the target: drop `--target T --target-namespace NS`.
    let i = args.iter().position(|a| a == "--target").unwrap();
    args.drain(i..i + 4);
    args.extend(["--policy".to_string(), policy.display().to_string()]);
    let o = Command::new(common::bin()).args(&args).output().unwrap();
    save_command(out, &args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    eprintln!("{stderr}");
    assert_eq!(o.status.code(), Some(1), "{stderr}");
}
