//! Faults in the middle of a Kubernetes trial, each with its named outcome and nothing left
//! behind:
//! - the orchestrator killed with SIGKILL: `drainwatch cleanup --run ID` replays the run's
//!   restore journal and the trial's namespace goes;
//! - the client pod deleted under the trial: its flows are not-measured, the trial ends at
//!   once, the report (aborted) says why, exit 2;
//! - kube-apiserver restarted during observation (deploy/local-cluster/restart.sh): the watches
//!   and log streams resume, the gap is recorded, the trial completes;
//! - the probe's node's kubelet stopped before the trigger: what the trial records while the
//!   node goes NotReady, then the kubelet is started again.
//!
//! `#[ignore]`d: `make e2e-k8s` runs them (`-- --ignored`) with `DRAINWATCH_E2E_KUBECONFIG` set
//! to the local cluster's admin kubeconfig; without it, they fail (nothing here skips). The
//! apiserver and kubelet tests stop parts of the local cluster (as root, through restart.sh):
//! they need the project's local cluster itself, not any cluster, and start what they stopped
//! before they end, pass or fail.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{Logged, json, kubectl, temp_dir, wait_for_trigger};
use drainwatch::evidence::journal::{self as record, Change, Closer};
use drainwatch::recorder::journal;
use serde_json::Value;

/// Waits until `file` holds `needle`; the run ending first, or `limit` passing, fails with what
/// the run wrote on stderr so far.
fn wait_for(file: &Path, needle: &str, trial: &mut Logged, limit: Duration) {
    let what = format!("{needle} in {}", file.display());
    let child = &mut trial.child;
    let ended = common::wait::until(common::wait::with_output(&what, &trial.log), limit, || {
        if std::fs::read_to_string(file).is_ok_and(|s| s.contains(needle)) {
            return Some(None);
        }
        child.try_wait().unwrap().map(Some)
    });
    if let Some(st) = ended {
        let (_, log) = trial.exit(Duration::from_secs(10));
        panic!("the run ended ({st}) before {what}; its stderr:\n{log}");
    }
}

#[test]
#[ignore = "needs the local cluster; make e2e-k8s"]
fn sigkill_mid_trial_then_cleanup_removes_the_namespace_and_closes_the_journal() {
    let (kc, _lock) = common::cluster("e2e-k8s");
    let (out, state) = (temp_dir("k8s-sigkill"), temp_dir("k8s-sigkill-state"));
    let run = format!("20261201-231500-{:08x}", std::process::id());
    let mut cmd = Command::new(common::bin());
    cmd.args(["run", "--kubeconfig", kc.to_str().unwrap()])
        .args(["--drain-behavior", "ignore", "--grace-period", "30"])
        .args([
            "--tcp-flows",
            "2",
            "--udp-flows",
            "1",
            "--settle-seconds",
            "2",
        ])
        .args(["--ready-timeout", "90", "--run-id", &run])
        .arg("--out")
        .arg(&out)
        .env("DRAINWATCH_STATE_DIR", &state);
    if let Some(image) = common::e2e_image() {
        cmd.args(["--image", &image]);
    }
    let mut trial = Logged::spawn(cmd);
    wait_for(
        &out.join("events.jsonl"),
        "\"trigger_issued\"",
        &mut trial,
        Duration::from_secs(180),
    );
    let jpath = journal::path_of(&state, &run);
    let entries = journal::read(&jpath).unwrap();
    let ns: Vec<String> = record::pending(&entries)
        .iter()
        .filter_map(|(_, c)| match c {
            Change::NamespaceCreated { namespace } => Some(namespace.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        ns.len(),
        1,
        "the trial's namespace is journalled: {entries:?}"
    );
    trial.child.kill().unwrap(); // SIGKILL
    trial.child.wait().unwrap();
    let got = kubectl(&kc, &["get", "ns", &ns[0], "-o", "name"]);
    assert!(got.status.success(), "the killed run left its namespace");

    let o = common::cleanup_run(&kc, &run, &state);
    let said = String::from_utf8_lossy(&o.stdout);
    eprintln!("{said}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success());
    assert!(
        said.contains(&format!("restored: namespace {} created", ns[0])),
        "{said}"
    );
    let entries = journal::read(&jpath).unwrap();
    assert!(record::pending(&entries).is_empty(), "{entries:?}");
    assert_eq!(record::closed(&entries), Some(Closer::Cleanup));
    // Deleting a namespace takes its pods' grace: a generous hang guard, no timing claim.
    ns_gone(&kc, &ns[0]);
    // The events written so far replay as aborted, saying why.
    let replay = temp_dir("k8s-sigkill-replay");
    let o = Command::new(common::bin())
        .args(["report", "--events"])
        .arg(out.join("events.jsonl"))
        .arg("--out")
        .arg(&replay)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(&replay.join("report.json"));
    assert_eq!(r["trial"]["status"], "aborted");
    assert!(
        r["trial"]["status_detail"]
            .as_str()
            .unwrap()
            .contains("ended without its end events")
    );
}

/// A run id of this test process; `n` tells the tests' runs apart.
fn run_id(n: u8) -> String {
    format!("20261202-0700{n:02}-{:08x}", std::process::id())
}

/// The namespace of a one-trial run's trial.
fn ns_of(run: &str) -> String {
    format!("drainwatch-{run}-001")
}

/// `drainwatch run` of the probe with two TCP flows and one UDP flow, `extra` flags after, the
/// restore journal in `state`.
fn probe_run(kc: &Path, out: &Path, state: &Path, run: &str, extra: &[&str]) -> Command {
    let mut cmd = Command::new(common::bin());
    cmd.args(["run", "--kubeconfig", kc.to_str().unwrap()])
        .args(["--tcp-flows", "2", "--udp-flows", "1"])
        .args(["--ready-timeout", "90", "--run-id", run])
        .args(extra)
        .arg("--out")
        .arg(out)
        .env("DRAINWATCH_STATE_DIR", state);
    if let Some(image) = common::e2e_image() {
        cmd.args(["--image", &image]);
    }
    cmd
}

/// Waits until the run exits and its stderr is read, `limit` being a hang guard; its exit code
/// and stderr.
fn exit_of(trial: &mut Logged, limit: Duration) -> (i32, String) {
    let (st, log) = trial.exit(limit);
    eprintln!("--- drainwatch stderr ---\n{log}");
    (st.code().unwrap_or(-1), log)
}

/// Waits until the run has issued its trigger (hang guard 240 s).
fn wait_trigger(trial: &mut Logged) {
    wait_for_trigger(
        &mut trial.child,
        &trial.triggered,
        &trial.log,
        Duration::from_secs(240),
    );
}

/// Waits until namespace `ns` is gone (its pods' grace: a generous hang guard, no timing
/// claim).
fn ns_gone(kc: &Path, ns: &str) {
    common::wait::until_every(
        format_args!("namespace {ns} deleted"),
        Duration::from_secs(240),
        Duration::from_secs(2),
        || {
            (!kubectl(kc, &["get", "ns", ns, "-o", "name"])
                .status
                .success())
            .then_some(())
        },
    );
}

/// The event lines of `dir/events.jsonl`.
fn events(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn named<'a>(lines: &'a [Value], event: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["event"] == event).collect()
}

/// Nothing of the run is left: its namespace is gone (a hang guard: deletion takes its pods'
/// grace) and its restore journal was removed, everything restored.
fn nothing_left(kc: &Path, run: &str, state: &Path) {
    let ns = ns_of(run);
    ns_gone(kc, &ns);
    let j = journal::path_of(state, run);
    assert!(
        !j.exists(),
        "the journal {} stayed: {:?}",
        j.display(),
        journal::read(&j)
    );
}

/// The API server ready and every node Ready and schedulable within `limit` (a hang guard):
/// after the API server or a kubelet was down, a node's lease may have lapsed, and it is
/// Unknown until its kubelet's next status update gets through, which a client's reconnect can
/// delay by tens of seconds.
fn wait_nodes_healthy(kc: &Path, limit: Duration) {
    common::wait::until_every(
        "the API server ready and every node Ready and schedulable",
        limit,
        Duration::from_millis(500),
        || api_ready(kc).and_then(|()| node_health(kc)).ok(),
    );
}

/// Whether the API server says every one of its readiness checks passes (`/readyz`): after a
/// restart it answers before its informers and authorizer have caught up.
fn api_ready(kc: &Path) -> Result<(), String> {
    let o = kubectl(kc, &["get", "--raw", "/readyz"]);
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    if o.status.success() && said.trim() == "ok" {
        Ok(())
    } else {
        Err(format!(
            "/readyz: {said}{}",
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

/// Whether every node is Ready and schedulable, and if not which is not.
fn node_health(kc: &Path) -> Result<(), String> {
    let o = kubectl(
        kc,
        &[
            "get",
            "nodes",
            "-o",
            r#"jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status},{.spec.unschedulable};{end}"#,
        ],
    );
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    let nodes: Vec<&str> = said.split(';').filter(|n| !n.is_empty()).collect();
    if nodes.is_empty() {
        return Err(format!("no nodes: {said}"));
    }
    match nodes.iter().find(|n| !n.ends_with("=True,")) {
        Some(n) => Err(format!("node not Ready and schedulable: {n}")),
        None => Ok(()),
    }
}

/// deploy/local-cluster/restart.sh with `args`; panics, with its output, when it fails.
fn restart_sh(args: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/local-cluster/restart.sh");
    let o = Command::new(&script).args(args).output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    eprintln!("--- restart.sh {args:?}\n{said}");
    assert!(o.status.success(), "restart.sh {args:?} failed:\n{said}");
}

/// A kubelet this test stopped: started again when dropped, so a failed assertion cannot leave
/// the node down.
struct KubeletDown(Option<String>);

impl KubeletDown {
    fn stop(name: &str) -> Self {
        restart_sh(&["stop", name]);
        Self(Some(name.to_string()))
    }

    fn start(mut self) {
        if let Some(n) = self.0.take() {
            restart_sh(&["start", &n]);
        }
    }
}

impl Drop for KubeletDown {
    fn drop(&mut self) {
        if let Some(n) = self.0.take() {
            let script =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/local-cluster/restart.sh");
            let _ = Command::new(script).args(["start", &n]).status();
        }
    }
}

fn dirs(name: &str) -> (PathBuf, PathBuf) {
    (temp_dir(name), temp_dir(&format!("{name}-state")))
}

#[test]
#[ignore = "needs the local cluster; make e2e-k8s"]
fn a_client_pod_deleted_mid_trial_ends_the_trial_with_its_flows_not_measured() {
    let (kc, _lock) = common::cluster("e2e-k8s");
    let (out, state) = dirs("k8s-client-lost");
    let run = run_id(2);
    // The probe ignores SIGTERM for 30 s, so every flow is still open when the client goes;
    // the long window is what a trial that missed the loss would wait out.
    let cmd = probe_run(
        &kc,
        &out,
        &state,
        &run,
        &[
            "--drain-behavior",
            "ignore",
            "--grace-period",
            "30",
            "--settle-seconds",
            "2",
            "--observe-timeout",
            "900",
        ],
    );
    let mut trial = Logged::spawn(cmd);
    wait_trigger(&mut trial);
    let ns = ns_of(&run);
    let del = kubectl(
        &kc,
        &[
            "-n",
            &ns,
            "delete",
            "pod",
            "drainwatch-client",
            "--wait=false",
        ],
    );
    assert!(
        del.status.success(),
        "{}",
        String::from_utf8_lossy(&del.stderr)
    );
    // Hang guard: far below the 900 s window a trial that missed the loss would wait out.
    let (code, stderr) = exit_of(&mut trial, Duration::from_secs(300));
    assert_eq!(code, 2, "a lost client is a harness fault: exit 2");
    assert!(stderr.contains("the client was lost"), "{stderr}");
    assert!(stderr.contains("(status aborted)"), "{stderr}");

    let r = json(&out.join("report.json"));
    common::assert_valid_report(&r);
    assert_eq!(r["trial"]["status"], "aborted");
    let detail = r["trial"]["status_detail"].as_str().unwrap();
    assert!(
        detail.contains("client was lost") && detail.contains("drainwatch-client"),
        "{detail}"
    );
    let flows = common::flows(&r);
    assert_eq!(flows.len(), 3);
    for f in &flows {
        assert_eq!(f["outcome"], "not-measured", "{f}");
        assert!(
            f["detail"].as_str().unwrap().contains("client was lost"),
            "{f}"
        );
    }
    let ev = events(&out);
    assert_eq!(named(&ev, "client_lost").len(), 1, "recorded once");
    assert_eq!(named(&ev, "trial_ended").len(), 1, "the recording is whole");
    common::assert_replay_identical(&out, None);
    nothing_left(&kc, &run, &state);
}

#[test]
#[ignore = "needs the local cluster; make e2e-k8s"]
fn a_kube_apiserver_restarted_during_observation_is_a_recorded_gap_and_the_trial_completes() {
    let (kc, _lock) = common::cluster("e2e-k8s");
    wait_nodes_healthy(&kc, Duration::from_secs(180));
    let (out, state) = dirs("k8s-apiserver-restart");
    let run = run_id(3);
    // The probe ignores SIGTERM for 60 s: the flows stay open, and the observation goes on,
    // while the API server is down and back; the kubelet kills the probe on its own.
    let cmd = probe_run(
        &kc,
        &out,
        &state,
        &run,
        &[
            "--drain-behavior",
            "ignore",
            "--grace-period",
            "60",
            "--settle-seconds",
            "2",
            "--observe-timeout",
            "180",
        ],
    );
    let mut trial = Logged::spawn(cmd);
    wait_trigger(&mut trial);
    restart_sh(&["kube-apiserver"]);
    assert!(
        trial.child.try_wait().unwrap().is_none(),
        "the premise: the trial was still observing when the API server was back:\n{}",
        trial.log.lock().unwrap()
    );
    let (code, stderr) = exit_of(&mut trial, Duration::from_secs(360));
    assert_eq!(code, 0, "{stderr}");

    let r = json(&out.join("report.json"));
    common::assert_valid_report(&r);
    assert_eq!(r["trial"]["status"], "completed");
    let ev = events(&out);
    let (cut, resumed) = (named(&ev, "watch_interrupted"), named(&ev, "watch_resumed"));
    assert!(!cut.is_empty(), "the watches failed while it was down");
    assert!(!resumed.is_empty(), "and resumed");
    for l in &resumed {
        assert!(
            l["detail"].as_str().unwrap().contains("after a gap of"),
            "{l}"
        );
    }
    // The log streams went through the API server too: reopened, nothing counted twice.
    assert!(!named(&ev, "log_stream_resumed").is_empty());
    let flows = common::flows(&r);
    assert_eq!(flows.len(), 3);
    for f in &flows {
        assert_ne!(f["outcome"], "not-measured", "the outage lost no flow: {f}");
    }
    common::assert_replay_identical(&out, None);
    nothing_left(&kc, &run, &state);
    wait_nodes_healthy(&kc, Duration::from_secs(180));
}

#[test]
#[ignore = "needs the local cluster; make e2e-k8s"]
fn the_probe_nodes_kubelet_stopped_before_the_trigger_leaves_the_pod_terminating_and_its_flows_open()
 {
    let (kc, _lock) = common::cluster("e2e-k8s");
    // The premise: both nodes serve (a test before may have left one briefly Unknown).
    wait_nodes_healthy(&kc, Duration::from_secs(180));
    let (out, state) = dirs("k8s-kubelet-stopped");
    let run = run_id(4);
    // The kubelet is stopped in the settle period, so the delete trigger reaches a node that
    // cannot act on it; the window (70 s after the trigger) outlasts the node-monitor grace
    // period (40 s), so the node's NotReady shows in it.
    let cmd = probe_run(
        &kc,
        &out,
        &state,
        &run,
        &[
            "--drain-behavior",
            "drain",
            "--grace-period",
            "30",
            "--settle-seconds",
            "15",
            "--observe-timeout",
            "70",
        ],
    );
    let mut trial = Logged::spawn(cmd);
    wait_for(
        &out.join("events.jsonl"),
        "\"preflight_passed\"",
        &mut trial,
        Duration::from_secs(240),
    );
    let ns = ns_of(&run);
    let o = kubectl(
        &kc,
        &[
            "-n",
            &ns,
            "get",
            "pods",
            "-l",
            "app.kubernetes.io/name=drainwatch-probe",
            "-o",
            "jsonpath={.items[0].spec.nodeName}",
        ],
    );
    let node = String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert!(node.starts_with("node"), "the probe's node: {node:?}");
    let down = KubeletDown::stop(&format!("kubelet-{node}"));
    wait_trigger(&mut trial);
    let (code, stderr) = exit_of(&mut trial, Duration::from_secs(300));
    down.start();
    wait_nodes_healthy(&kc, Duration::from_secs(180));

    let r = json(&out.join("report.json"));
    common::assert_valid_report(&r);
    let ev = events(&out);
    let k8s: Vec<String> = ev
        .iter()
        .filter(|l| l["source"] == "k8s" || l["source"] == "orchestrator")
        .map(|l| format!("{} {}", l["event"], l["detail"]))
        .collect();
    eprintln!("--- k8s and orchestrator lines\n{}", k8s.join("\n"));
    eprintln!(
        "--- flows\n{}",
        common::flows(&r)
            .iter()
            .map(|f| format!("{} {} {}", f["id"], f["outcome"], f["detail"]))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // What the trial records while the node cannot act: the deletion and the endpoint turning
    // terminating (the control plane), no SIGTERM, no exit, the probe's log cut off (it is
    // served by the stopped kubelet), the pod Ready=False once the node controller marks the
    // node NotReady (40 s grace), and every flow still open when the window closes.
    // Asked to leave but never signalled: not terminated, so nothing is judged (a threshold
    // would be not measured), and the run without thresholds says so.
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(r["trial"]["status"], "not-terminated");
    assert!(
        r["trial"]["status_detail"]
            .as_str()
            .is_some_and(|d| d.contains("1 pod deletion(s) requested, but no container")),
        "{}",
        r["trial"]["status_detail"]
    );
    assert!(stderr.contains("NOT TERMINATED"), "{stderr}");
    for e in [
        "pod_deletion_timestamp_set",
        "endpointslice_terminating_true",
        "log_stream_interrupted",
        "pod_ready_false",
    ] {
        assert!(!named(&ev, e).is_empty(), "{e} recorded");
    }
    for e in ["sigterm_received", "container_terminated"] {
        assert!(named(&ev, e).is_empty(), "no {e}: the kubelet was down");
    }
    // A reopen every ~2 s for the whole window: said once per run of failures, not per attempt.
    for e in ["log_stream_interrupted", "log_stream_error"] {
        assert!(named(&ev, e).len() <= 3, "{e}: {}", named(&ev, e).len());
    }
    let flows = common::flows(&r);
    assert_eq!(flows.len(), 3);
    for f in &flows {
        assert_eq!(f["outcome"], "survived-observation-window", "{f}");
    }
    assert!(r["trial"]["summary"]["trigger_to_container_terminated_ms"].is_null());
    let ids: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert!(
        !ids.contains(&"nothing-wrong"),
        "no termination was measured: {ids:?}"
    );
    assert!(ids.contains(&"not-terminated"), "{ids:?}");
    common::assert_replay_identical(&out, None);
    nothing_left(&kc, &run, &state);
    // The restarted kubelet kills the containers of the pods deleted while it was down.
    let sock = format!(
        "{}/containerd-{node}.sock",
        std::env::var("DRAINWATCH_CLUSTER_RUN")
            .unwrap_or_else(|_| "/run/drainwatch-cluster".into())
    );
    let filter = format!("labels.\"io.kubernetes.pod.namespace\"=={ns}");
    let left = || {
        let o = Command::new("ctr")
            .args([
                "--address",
                &sock,
                "-n",
                "k8s.io",
                "containers",
                "ls",
                "-q",
                &filter,
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    common::wait::until_every(
        format_args!("no container of {ns} left on {node}"),
        Duration::from_secs(180),
        Duration::from_secs(2),
        || left().is_empty().then_some(()),
    );
}
