//! The cluster the end-to-end tests run against: its admin kubeconfig, kubectl, and the lock
//! that keeps trials from overlapping when the harness runs tests in parallel.
//!
//! Every cluster test is `#[ignore]`d, so a plain `cargo test` lists it as ignored; its `make`
//! target runs it with `-- --ignored` and sets `DRAINWATCH_E2E_KUBECONFIG`. A cluster test that
//! runs without the variable, or against a cluster that does not answer, fails: none returns
//! early and counts as passed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

/// The admin kubeconfig from `DRAINWATCH_E2E_KUBECONFIG` and the lock every cluster test
/// holds. Panics, naming the variable and the `make` target that sets it, when the variable is
/// not set, and when the cluster it names does not answer.
pub fn cluster(make_target: &str) -> (PathBuf, MutexGuard<'static, ()>) {
    let Some(kc) = std::env::var_os("DRAINWATCH_E2E_KUBECONFIG") else {
        panic!(
            "DRAINWATCH_E2E_KUBECONFIG is not set: this cluster test needs a Kubernetes \
             cluster; run it with `make {make_target}` (which sets it to the local cluster's \
             admin kubeconfig) or set it to a kubeconfig yourself"
        );
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
    (kc, guard)
}

/// The probe image the cluster tests run when `DRAINWATCH_E2E_IMAGE` names one (the tag the
/// cluster's image archive was imported under); `None`: the default `--image`.
pub fn e2e_image() -> Option<String> {
    std::env::var("DRAINWATCH_E2E_IMAGE")
        .ok()
        .filter(|s| !s.is_empty())
}

/// `kubectl --kubeconfig KC ARGS…`.
pub fn kubectl(kc: &Path, args: &[&str]) -> Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kc)
        .args(args)
        .output()
        .expect("kubectl runs")
}

/// `drainwatch cleanup --run RUN --kubeconfig KC` with the restore journals of `state`
/// (`DRAINWATCH_STATE_DIR`): what the fault tests run after a SIGKILLed trial.
pub fn cleanup_run(kc: &Path, run: &str, state: &Path) -> Output {
    Command::new(super::bin())
        .args(["cleanup", "--run", run, "--kubeconfig"])
        .arg(kc)
        .env("DRAINWATCH_STATE_DIR", state)
        .output()
        .expect("drainwatch cleanup runs")
}

/// `kubectl delete` of an identity's objects in `yaml` (documents split on `---` lines): its
/// namespace, ServiceAccount and bindings, not the ClusterRoles and Roles they bind, which are
/// shared by name with the cluster tests of the other lanes running beside this one.
pub fn delete_identity(kc: &Path, yaml: &str, name: &str) -> Output {
    let kept: Vec<&str> = yaml
        .split("\n---")
        .filter(|doc| {
            !doc.lines()
                .any(|l| matches!(l.trim_end(), "kind: ClusterRole" | "kind: Role"))
        })
        .collect();
    let file = super::temp_dir(name).join("delete.yaml");
    std::fs::write(&file, kept.join("\n---")).expect("the delete list is written");
    kubectl(
        kc,
        &[
            "delete",
            "--ignore-not-found",
            "--wait=false",
            "-f",
            file.to_str().expect("a UTF-8 temp path"),
        ],
    )
}
