//! Earned verdicts on the cluster: a trial whose trigger terminated nothing is never a pass, and
//! a pod that ignores SIGTERM is watched until its SIGKILL at the grace boundary. Each test
//! deploys its own workload, from the example images, into a namespace of its own
//! (`drainwatch-earned-*`), and deletes it at the end.
//!
//! - a drain held by a PodDisruptionBudget: every eviction refused until the window's bound,
//!   nothing terminated: `not-terminated`, exit 1 under a threshold, the budget named;
//! - a rollout whose new pod the scheduler cannot place (required anti-affinity on every
//!   node, maxUnavailable 0): nothing terminated, the scheduler's message named;
//! - terminationGracePeriodSeconds 240 and a service that never exits on SIGTERM: refused at
//!   preflight with the default window, and with a window that covers it, the exit 137 at the
//!   grace boundary is in the report and judged.

use std::path::{Path, PathBuf};

use crate::common::{self, json, temp_dir};
use crate::support::*;

/// A test's workload: the example `image`, `replicas`, its grace period, and what else its pod
/// spec and the namespace carry.
struct Workload<'a> {
    ns: &'a str,
    name: &'a str,
    image: &'a str,
    replicas: usize,
    grace: u32,
    /// Lines of the pod spec, indented for it (affinity).
    pod_extra: &'a str,
    /// A PodDisruptionBudget with this minAvailable.
    pdb_min_available: Option<u32>,
}

impl Workload<'_> {
    fn target(&self) -> String {
        format!("deployment/{}", self.name)
    }

    fn yaml(&self) -> String {
        let Workload {
            ns,
            name,
            image,
            replicas,
            grace,
            pod_extra,
            pdb_min_available,
        } = self;
        let mut y = format!(
            r#"apiVersion: v1
kind: Namespace
metadata:
  name: {ns}
  labels:
    pod-security.kubernetes.io/enforce: restricted
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {ns}
spec:
  replicas: {replicas}
  strategy:
    type: RollingUpdate
    rollingUpdate: {{maxSurge: 1, maxUnavailable: 0}}
  selector:
    matchLabels: {{app.kubernetes.io/name: {name}}}
  template:
    metadata:
      labels: {{app.kubernetes.io/name: {name}}}
    spec:
      terminationGracePeriodSeconds: {grace}
      automountServiceAccountToken: false
      enableServiceLinks: false
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        seccompProfile: {{type: RuntimeDefault}}
{pod_extra}      containers:
        - name: app
          image: {image}
          imagePullPolicy: IfNotPresent
          env:
            - {{name: PORT, value: "8080"}}
            - name: POD_NAME
              valueFrom: {{fieldRef: {{fieldPath: metadata.name}}}}
          ports:
            - {{name: http, containerPort: 8080, protocol: TCP}}
          readinessProbe:
            httpGet: {{path: /readyz, port: http}}
            periodSeconds: 1
            timeoutSeconds: 1
            failureThreshold: 1
          resources:
            requests: {{cpu: 10m, memory: 16Mi}}
            limits: {{memory: 64Mi}}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            runAsNonRoot: true
            capabilities: {{drop: [ALL]}}
---
apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: {ns}
spec:
  selector: {{app.kubernetes.io/name: {name}}}
  ports:
    - {{name: http, port: 80, targetPort: http, protocol: TCP}}
"#
        );
        if let Some(m) = pdb_min_available {
            y.push_str(&format!(
                r#"---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {name}
  namespace: {ns}
spec:
  minAvailable: {m}
  selector:
    matchLabels: {{app.kubernetes.io/name: {name}}}
"#
            ));
        }
        y
    }

    /// Applies it and waits for its rollout; the namespace goes when the guard drops.
    fn apply(&self, kc: &Path) -> Gone {
        let dir = temp_dir(&format!("earned-{}", self.name));
        let file = dir.join("workload.yaml");
        std::fs::write(&file, self.yaml()).unwrap();
        let gone = Gone {
            kc: kc.to_path_buf(),
            ns: self.ns.to_string(),
        };
        kubectl_ok(kc, &["apply", "-f", file.to_str().unwrap()]);
        kubectl_ok(
            kc,
            &[
                "-n",
                self.ns,
                "rollout",
                "status",
                &self.target(),
                "--timeout",
                "180s",
            ],
        );
        gone
    }
}

/// Deletes a test's namespace when dropped, so a failed assertion leaves nothing behind.
struct Gone {
    kc: PathBuf,
    ns: String,
}

impl Drop for Gone {
    fn drop(&mut self) {
        let _ = kubectl(&self.kc, &["delete", "namespace", &self.ns, "--wait=false"]);
    }
}

/// Runs drainwatch against `w` with `extra` flags.
fn run_on(kc: &Path, w: &Workload<'_>, extra: &[&str]) -> Run {
    let name = format!("earned-run-{}", w.name);
    dw_run_in(kc, &name, (&w.target(), w.ns), extra)
}

fn finding_ids(rep: &serde_json::Value) -> Vec<String> {
    rep["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

/// How many nodes the scheduler may place pods on.
fn schedulable_nodes(kc: &Path) -> usize {
    kubectl_ok(
        kc,
        &[
            "get",
            "nodes",
            "-o",
            "jsonpath={range .items[*]}{.spec.unschedulable}{\"\\n\"}{end}",
        ],
    )
    .lines()
    .filter(|l| l.trim() != "true")
    .count()
}

const GOOD_IMAGE: &str = "ghcr.io/drainwatch/example-good-shutdown:0.2.0";
const STUCK_IMAGE: &str = "ghcr.io/drainwatch/example-stuck-shutdown:0.2.0";

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach (cordons a node: make e2e-attach-cluster-wide)"]
fn a_drain_held_by_a_pdb_terminates_nothing_and_fails_the_gate() {
    let (kc, _lock) = cluster();
    let w = Workload {
        ns: "drainwatch-earned-pdb",
        name: "held-by-pdb",
        image: GOOD_IMAGE,
        replicas: 1,
        grace: 30,
        pod_extra: "",
        pdb_min_available: Some(1),
    };
    let _gone = w.apply(&kc);
    let r = run_on(
        &kc,
        &w,
        &[
            "--trigger",
            "drain-node",
            "--observe-timeout",
            "60",
            "--threshold",
            "no-request-failed",
        ],
    );
    assert_eq!(r.code, 1, "nothing terminated is no pass: {}", r.stderr);
    assert!(
        r.stderr.contains("fail  run: no-request-failed"),
        "{}",
        r.stderr
    );
    let rep = json(&r.out.join("report.json"));
    common::assert_valid_report(&rep);
    assert_eq!(
        rep["trial"]["status"], "not-terminated",
        "{:#}",
        rep["trial"]["status_detail"]
    );
    let why = rep["trial"]["status_detail"].as_str().unwrap();
    assert!(why.contains("eviction_gave_up"), "{why}");
    assert!(
        why.contains(
            "PodDisruptionBudget selecting the target: held-by-pdb (disruptionsAllowed 0)"
        ),
        "{why}"
    );
    let ids = finding_ids(&rep);
    assert!(ids.contains(&"not-terminated".to_string()), "{ids:?}");
    assert!(ids.contains(&"pdb-blocked-eviction".to_string()), "{ids:?}");
    assert!(!ids.contains(&"nothing-wrong".to_string()), "{ids:?}");
    assert!(
        own_terminations(&rep).is_empty(),
        "nothing of the target was terminated"
    );
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn a_rollout_whose_new_pod_cannot_be_scheduled_terminates_nothing_and_fails_the_gate() {
    let (kc, _lock) = cluster();
    // One pod on every schedulable node, none allowed beside another: the surge pod of a
    // rollout with maxUnavailable 0 has nowhere to go, so no old pod is ever deleted.
    let nodes = schedulable_nodes(&kc);
    assert!(nodes >= 1, "no schedulable node");
    let anti = "      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector:
                matchLabels: {app.kubernetes.io/name: no-room}
              topologyKey: kubernetes.io/hostname
";
    let w = Workload {
        ns: "drainwatch-earned-sched",
        name: "no-room",
        image: GOOD_IMAGE,
        replicas: nodes,
        grace: 30,
        pod_extra: anti,
        pdb_min_available: None,
    };
    let _gone = w.apply(&kc);
    let r = run_on(
        &kc,
        &w,
        &[
            "--trigger",
            "rollout-restart",
            "--observe-timeout",
            "60",
            "--threshold",
            "no-request-failed",
            "--threshold",
            "no-new-connection-failed",
        ],
    );
    assert_eq!(r.code, 1, "nothing terminated is no pass: {}", r.stderr);
    let rep = json(&r.out.join("report.json"));
    common::assert_valid_report(&rep);
    assert_eq!(
        rep["trial"]["status"], "not-terminated",
        "{:#}",
        rep["trial"]["status_detail"]
    );
    let why = rep["trial"]["status_detail"].as_str().unwrap();
    assert!(
        why.contains("terminated no pod of the target") && why.contains("pod_unschedulable"),
        "{why}"
    );
    assert!(
        why.contains("anti-affinity"),
        "the scheduler's message: {why}"
    );
    let ids = finding_ids(&rep);
    assert!(ids.contains(&"not-terminated".to_string()), "{ids:?}");
    let advice = rep["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "not-terminated")
        .and_then(|f| f["recommendation"]["text"].as_str())
        .unwrap()
        .to_string();
    assert!(advice.contains("room for the replacement pod"), "{advice}");
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn a_pod_that_ignores_sigterm_is_watched_to_its_sigkill_at_the_grace_boundary() {
    let (kc, _lock) = cluster();
    let w = Workload {
        ns: "drainwatch-earned-grace",
        name: "ignores-sigterm",
        image: STUCK_IMAGE,
        replicas: 1,
        grace: 240,
        pod_extra: "",
        pdb_min_available: None,
    };
    let _gone = w.apply(&kc);
    // The default window (180 s) cannot see a 240 s grace out: refused before anything runs.
    let r = run_on(&kc, &w, &["--trigger", "delete"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("preflight check \"window-covers-grace\" failed")
            && r.stderr.contains("terminationGracePeriodSeconds 240")
            && r.stderr.contains("to 270 or more"),
        "{}",
        r.stderr
    );
    assert!(
        !r.out.join("report.json").exists(),
        "a broken harness writes no report"
    );
    // With the window it names: the pod is killed at 240 s, and that is in the report, judged.
    let r = run_on(
        &kc,
        &w,
        &[
            "--trigger",
            "delete",
            "--observe-timeout",
            "270",
            "--threshold",
            "trigger-to-container-exit <= 260s",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rep = json(&r.out.join("report.json"));
    common::assert_valid_report(&rep);
    assert_eq!(rep["trial"]["status"], "completed");
    let pods = rep["trial"]["attach"]["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 1, "{pods:#?}");
    assert_eq!(pods[0]["exit_code"], 137, "{:#}", pods[0]);
    let exited = pods[0]["exited_t_ms"].as_i64().unwrap();
    let asked = pods[0]["deletion_requested_t_ms"].as_i64().unwrap();
    assert!(
        exited - asked >= 239_000,
        "killed at the grace boundary: deletion {asked} ms, exit {exited} ms"
    );
    let ids = finding_ids(&rep);
    assert!(ids.contains(&"sigkill-at-grace".to_string()), "{ids:?}");
}
