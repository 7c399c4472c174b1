//! Parallel and repeated runs on one cluster are safe (issue 14): two `drainwatch run`s started
//! together get distinct run ids and namespaces, every object each creates carries its own
//! run's mark, both complete with reports, and neither deletes the other's; a run whose
//! namespace name is already taken fails by name and leaves that namespace alone.
//!
//! `#[ignore]`d: `make e2e-k8s` runs them with `DRAINWATCH_E2E_KUBECONFIG` set. The probe image
//! is `DRAINWATCH_E2E_IMAGE` when set (the image archive's tag), else the default `--image`.
//! Only namespaces these tests create are deleted by them.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Reaper, assert_valid_report, json, kubectl, temp_dir};
use drainwatch::evidence::event::EventName;
use drainwatch::host;
use serde_json::Value;

const RUN_LABEL: &str = "drainwatch.dev/run";

fn image() -> String {
    common::e2e_image().unwrap_or_else(|| drainwatch::k8s::DEFAULT_IMAGE.into())
}

/// `drainwatch run` of one small delete trial on the cluster, as a child process.
fn spawn_run(kc: &Path, out: &Path, run_id: Option<&str>) -> Reaper {
    let log = out.with_extension("stderr");
    let mut c = Command::new(common::bin());
    c.args([
        "run",
        "--platform",
        "kubernetes",
        "--drain-behavior",
        "drain",
        "--trigger",
        "delete",
        "--tcp-flows",
        "3",
        "--udp-flows",
        "2",
        "--grace-period",
        "8",
        "--settle-seconds",
        "2",
        "--post-terminal-grace",
        "3",
        "--ready-timeout",
        "120",
        "--image",
        &image(),
        "--kubeconfig",
    ])
    .arg(kc)
    .arg("--out")
    .arg(out);
    if let Some(id) = run_id {
        c.args(["--run-id", id]);
    }
    // Output to a file, not a pipe: nothing reads while the test watches the cluster.
    let err = std::fs::File::create(log).unwrap();
    Reaper(
        c.stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .expect("drainwatch runs"),
    )
}

/// Every drainwatch-managed namespace and pod now, as (kind/namespace/name → run label).
fn marks(kc: &Path) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    for kind in ["namespaces", "pods,deployments,services"] {
        let o = kubectl(
            kc,
            &[
                "get",
                kind,
                "-A",
                "-l",
                "app.kubernetes.io/managed-by=drainwatch",
                "-o",
                "json",
            ],
        );
        if !o.status.success() {
            continue;
        }
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        for item in v["items"].as_array().into_iter().flatten() {
            let m = &item["metadata"];
            let key = format!(
                "{}/{}/{}",
                item["kind"].as_str().unwrap_or("?"),
                m["namespace"].as_str().unwrap_or("-"),
                m["name"].as_str().unwrap_or("?")
            );
            out.insert(key, m["labels"][RUN_LABEL].as_str().map(String::from));
        }
    }
    out
}

struct Finished {
    code: Option<i32>,
    stderr: String,
    out: PathBuf,
}

fn finish(mut r: Reaper, out: PathBuf) -> Finished {
    let status = r.0.wait().expect("the run ends");
    let stderr = std::fs::read_to_string(out.with_extension("stderr")).unwrap_or_default();
    eprintln!("--- {}: exit {:?}\n{stderr}", out.display(), status.code());
    Finished {
        code: status.code(),
        stderr,
        out,
    }
}

/// The run id and namespace a run printed.
fn printed(stderr: &str) -> (String, String) {
    let id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("drainwatch: run "))
        .expect("the run id is printed")
        .trim()
        .to_string();
    let ns = stderr
        .lines()
        .find_map(|l| l.strip_prefix("drainwatch: namespace "))
        .and_then(|l| l.split_whitespace().next())
        .expect("the namespace is printed")
        .to_string();
    (id, ns)
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-k8s"]
fn two_parallel_runs_keep_to_their_own_objects() {
    // The lock keeps this binary's own tests apart; the two runs inside overlap on purpose.
    let (kc, _guard) = common::cluster("e2e-k8s");
    let (out_a, out_b) = (temp_dir("parallel-a"), temp_dir("parallel-b"));
    let mut a = spawn_run(&kc, &out_a, None);
    let mut b = spawn_run(&kc, &out_b, None);
    // Watch what both create while they run (others' runs on the shared cluster too; only
    // these two runs' objects are judged below).
    let mut seen: BTreeMap<String, BTreeSet<Option<String>>> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(300);
    let running = |r: &mut Reaper| r.0.try_wait().ok().flatten().is_none();
    while (running(&mut a) || running(&mut b)) && Instant::now() < deadline {
        for (k, v) in marks(&kc) {
            seen.entry(k).or_default().insert(v);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let (a, b) = (finish(a, out_a), finish(b, out_b));
    assert_eq!(a.code, Some(0), "run a: {}", a.stderr);
    assert_eq!(b.code, Some(0), "run b: {}", b.stderr);
    let ((id_a, ns_a), (id_b, ns_b)) = (printed(&a.stderr), printed(&b.stderr));
    assert_ne!(id_a, id_b, "two processes, two run ids");
    assert_ne!(ns_a, ns_b);
    assert!(
        host::is_run_id(&id_a) && host::is_run_id(&id_b),
        "{id_a} {id_b}"
    );
    for (id, ns, f) in [(&id_a, &ns_a, &a), (&id_b, &ns_b, &b)] {
        assert_eq!(*ns, format!("drainwatch-{id}-001"));
        // Its namespace and every object seen in it carried its own mark, and only it.
        let ns_key = format!("Namespace/-/{ns}");
        assert_eq!(
            seen.get(&ns_key),
            Some(&BTreeSet::from([Some(id.clone())])),
            "{ns_key}: {seen:?}"
        );
        let inside: Vec<_> = seen
            .iter()
            .filter(|(k, _)| k.split('/').nth(1) == Some(ns.as_str()))
            .collect();
        // The probe's deployment, service and pod, and the client pod, at least.
        assert!(inside.len() >= 4, "objects seen in {ns}: {inside:?}");
        for (k, marks) in &inside {
            assert_eq!(*marks, &BTreeSet::from([Some(id.clone())]), "{k}");
        }
        // The report records the run id, and the run deleted its own namespace only.
        let report = json(&f.out.join("report.json"));
        assert_valid_report(&report);
        assert_eq!(report["trial"]["status"], "completed");
        assert_eq!(report["environment"]["run_id"], id.as_str());
        assert_eq!(
            json(&f.out.join("summary.json"))["environment"]["run_id"],
            id.as_str()
        );
        let deleted: Vec<&Value> = report["trial"]["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["event"] == EventName::WorkloadDeleted.as_str())
            .collect();
        assert_eq!(deleted.len(), 1, "{deleted:?}");
        assert_eq!(
            deleted[0]["detail"],
            format!("namespace {ns} and everything in it deleted")
        );
    }
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-k8s"]
fn a_taken_namespace_fails_by_name_and_is_left_alone() {
    let (kc, _guard) = common::cluster("e2e-k8s");
    let id = host::run_id();
    let ns = format!("drainwatch-{id}-001");
    // Someone else's namespace under the name the run will want, marked as another run's.
    let foreign = "20000101-000000-00000000";
    let manifest = format!(
        r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{ns}","labels":{{"app.kubernetes.io/managed-by":"drainwatch","{RUN_LABEL}":"{foreign}","owner":"k8s-parallel-test"}}}}}}"#
    );
    let path = temp_dir("taken-ns").join("ns.json");
    std::fs::write(&path, manifest).unwrap();
    let created = kubectl(&kc, &["create", "-f", path.to_str().unwrap()]);
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let uid = |kc: &Path| {
        let o = kubectl(
            kc,
            &[
                "get",
                "ns",
                &ns,
                "-o",
                "jsonpath={.metadata.uid} {.status.phase} {.metadata.labels.owner}",
            ],
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let before = uid(&kc);

    let out = temp_dir("taken-ns-run");
    let r = finish(spawn_run(&kc, &out, Some(&id)), out);
    let after = uid(&kc);
    // The test's own namespace goes whatever the assertions say.
    let _ = kubectl(&kc, &["delete", "ns", &ns, "--wait=false"]);

    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "namespace {ns} already exists (marked {RUN_LABEL}={foreign}); it is not this run's and is left alone"
        )),
        "{}",
        r.stderr
    );
    assert!(before.ends_with(" Active k8s-parallel-test"), "{before}");
    assert_eq!(
        after, before,
        "the namespace is untouched: same uid, still Active"
    );
    assert!(
        !r.out.join("report.json").exists(),
        "no report for a failed deploy"
    );
}
