//! What the ingress end-to-end tests check the same way through every controller: Traefik's
//! (tests/ingress_e2e.rs) and Envoy Gateway's (tests/ingress_envoy_e2e.rs).

use std::path::{Path, PathBuf};

use drainwatch::evidence::ingress::IngressOutcome;
use serde_json::Value;

use crate::support::{kubectl, kubectl_ok};

/// Deletes the namespace when dropped, so a failed assertion leaves nothing behind.
pub struct Gone(PathBuf, String);

impl Drop for Gone {
    fn drop(&mut self) {
        let _ = kubectl(&self.0, &["delete", "namespace", &self.1, "--wait=false"]);
    }
}

/// Waits until an earlier run's namespace `ns` is gone (it is deleted without waiting, and
/// nothing can be created in it while it terminates), and returns the guard that deletes this
/// run's.
pub fn fresh_namespace(kc: &Path, ns: &str) -> Gone {
    kubectl_ok(
        kc,
        &[
            "wait",
            "--for=delete",
            &format!("namespace/{ns}"),
            "--timeout=180s",
        ],
    );
    Gone(kc.to_path_buf(), ns.to_string())
}

/// Asserts that every request and dial of the trial's `attach` section is either logged by the
/// ingress or counted as not logged, and that over a hundred were logged; returns how many.
pub fn every_request_logged(a: &Value) -> u64 {
    let ingress = &a["ingress"];
    let asked = a["requests"]["total"].as_u64().unwrap() + a["dials"]["total"].as_u64().unwrap();
    let logged = ingress["logged"].as_u64().unwrap();
    assert_eq!(
        logged + ingress["not_logged"].as_u64().unwrap(),
        asked,
        "{ingress:#}"
    );
    assert!(logged > 100, "{ingress:#}");
    logged
}

/// The upstream errors of the trial's `attach` section (Traefik's 502, Envoy's 503: the
/// connection to the pod the ingress chose failed), asserted to be some, each with one of the
/// controller's outcomes `said` (an upstream failure of another outcome fails the test), and
/// each attributed to one of the two pods the rollout `terminated`, at the upstream address the
/// access log named.
pub fn attributed_failures<'a>(
    a: &'a Value,
    terminated: &[String],
    said: &[&str],
) -> Vec<&'a Value> {
    assert_eq!(terminated.len(), 2, "{a:#}");
    let through: Vec<&Value> = a["failures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["ingress"]
                .as_str()
                .and_then(IngressOutcome::parse)
                .is_some_and(IngressOutcome::upstream_failed)
        })
        .collect();
    assert!(
        !through.is_empty(),
        "no upstream error through the ingress: {a:#}"
    );
    for f in &through {
        assert!(
            said.iter().any(|s| f["ingress"] == *s),
            "{} is not one of {said:?}: {f:#}",
            f["ingress"]
        );
    }
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
