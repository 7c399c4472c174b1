//! The cluster the end-to-end tests run against: its admin kubeconfig, kubectl, and the lock
//! that keeps trials from overlapping when the harness runs tests in parallel.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

/// The admin kubeconfig and the lock every cluster test holds; `None` (saying so, and naming
/// the `make` target that sets it) when `DRAINWATCH_E2E_KUBECONFIG` is not set. A configured
/// cluster that does not answer fails the test: nothing skips then.
pub fn cluster(make_target: &str) -> Option<(PathBuf, MutexGuard<'static, ()>)> {
    let Some(kc) = std::env::var_os("DRAINWATCH_E2E_KUBECONFIG") else {
        eprintln!(
            "not run: set DRAINWATCH_E2E_KUBECONFIG (make {make_target}) to test against a cluster"
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

/// `kubectl --kubeconfig KC ARGS…`.
pub fn kubectl(kc: &Path, args: &[&str]) -> Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kc)
        .args(args)
        .output()
        .expect("kubectl runs")
}
