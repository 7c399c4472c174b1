//! `drainwatch compare` on runs made here and now (`make e2e-compare`, the `e2e-compare` phase
//! of deploy/local-cluster/ci.sh): one rollout-restart trial of the good example service against
//! one of the bad example names the regression and exits 1, and good against good exits 0. One
//! trial a side is the smallest pair: the exact test cannot decide at 1 against 1, so what
//! decides is the every-trial-against-none rule on failure counts (docs/ci.md). The five-trial
//! pairs behind the worked example are committed under results/2026-12-01-compare-cluster/ and
//! checked by tests/compare_results.rs.
//!
//! Runs only when `DRAINWATCH_E2E_KUBECONFIG` names an admin kubeconfig (the make target sets
//! it to the local cluster's, `DRAINWATCH_E2E_IMAGE` to this checkout's client image, which
//! `make example-images` imports with the example images); without it, or against a broken
//! cluster, it fails: nothing here skips. The example services go into a namespace of their
//! own ([`NS`]), so the run never touches `drainwatch-examples`, which the attach tests use. No
//! timing is asserted.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;
#[allow(dead_code, unused_imports)]
#[path = "attach_e2e/support.rs"]
mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::temp_dir;
use support::{kubectl_ok, rolled_out};

/// The namespace this test creates for the two example services and deletes at the end.
const NS: &str = "drainwatch-e2e-compare";
const GOOD: &str = "deployment/good-shutdown";
const BAD: &str = "deployment/bad-shutdown";
/// The metrics of an attach arm that count failures, which the every-trial-against-none rule
/// decides (the failure window is 0 when nothing failed).
const ATTACH_FAILURES: [&str; 4] = [
    "failed-requests",
    "failed-dials",
    "severed-connections",
    "longest-failure-window",
];

fn image() -> String {
    common::e2e_image().unwrap_or_else(|| {
        format!(
            "ghcr.io/drainwatch/drainwatch:{}-attach",
            env!("CARGO_PKG_VERSION")
        )
    })
}

/// examples/k8s/{namespace,good-shutdown,bad-shutdown}.yaml with the namespace replaced (the
/// `part-of` label stays), applied, and both rollouts waited for.
fn deploy_examples(kc: &Path) {
    // An earlier run's namespace may still be going (it is deleted without waiting).
    let phase = common::kubectl(
        kc,
        &["get", "namespace", NS, "-o", "jsonpath={.status.phase}"],
    );
    if String::from_utf8_lossy(&phase.stdout) == "Terminating" {
        kubectl_ok(
            kc,
            &[
                "wait",
                "--for=delete",
                &format!("namespace/{NS}"),
                "--timeout=180s",
            ],
        );
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/k8s");
    let mut yaml = String::new();
    for f in ["namespace", "good-shutdown", "bad-shutdown"] {
        let text = std::fs::read_to_string(dir.join(format!("{f}.yaml"))).unwrap();
        yaml.push_str("---\n");
        for line in text.lines() {
            let line = match line {
                "  name: drainwatch-examples" => format!("  name: {NS}"),
                "  namespace: drainwatch-examples" => format!("  namespace: {NS}"),
                l => l.to_string(),
            };
            yaml.push_str(&line);
            yaml.push('\n');
        }
    }
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kc)
        .args(["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(yaml.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "kubectl apply: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    for t in [GOOD, BAD] {
        rolled_out(kc, NS, t);
    }
}

/// One rollout-restart trial of `target` (the flags of tests/attach_e2e.rs); its --out dir.
fn trial(kc: &Path, name: &str, target: &str) -> std::path::PathBuf {
    let out = temp_dir(name);
    let o = Command::new(common::bin())
        .args(["run", "--target", target, "--target-namespace", NS])
        .args(["--image", &image(), "--trigger", "rollout-restart"])
        .args([
            "--tcp-flows",
            "4",
            "--dial-rate",
            "20",
            "--interval",
            "200ms",
        ])
        .args(["--settle-seconds", "3", "--post-terminal-grace", "3"])
        .args(["--ready-timeout", "120", "--kubeconfig"])
        .arg(kc)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("drainwatch runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(12).collect();
    eprintln!(
        "--- {name}: exit {:?}\n{}",
        o.status.code(),
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    );
    // 0 or 1: a report was written (a run without a policy exits 0 whatever it measured).
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{name}: drainwatch run failed: {stderr}"
    );
    assert!(out.join("report.json").is_file(), "{name}: no report.json");
    out
}

/// `drainwatch compare BASE NEW`: exit code and stdout.
fn compare(base: &Path, new: &Path) -> (i32, String) {
    let o = Command::new(common::bin())
        .arg("compare")
        .arg(base)
        .arg(new)
        .output()
        .expect("drainwatch runs");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    eprintln!(
        "--- compare {} {}:\n{out}{}",
        base.display(),
        new.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code().unwrap_or(-1), out)
}

/// The table rows (metric name first) that say `regressed`.
fn regressed_rows(table: &str) -> Vec<String> {
    table
        .lines()
        .filter(|l| l.starts_with("  ") && l.contains(" regressed ("))
        .map(|l| l.trim().to_string())
        .collect()
}

/// Deletes [`NS`] when the test ends, passed or not (it created it).
struct DeleteNamespace<'a>(&'a Path);

impl Drop for DeleteNamespace<'_> {
    fn drop(&mut self) {
        let o = common::kubectl(self.0, &["delete", "namespace", NS, "--wait=false"]);
        if !o.status.success() {
            eprintln!(
                "could not delete namespace {NS}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
}

#[test]
#[ignore = "needs a Kubernetes cluster and the example images; make e2e-compare"]
fn good_against_bad_regresses_and_good_against_good_does_not() {
    let (kc, _lock) = common::cluster("e2e-compare");
    let _cleanup = DeleteNamespace(&kc);
    deploy_examples(&kc);
    let good = trial(&kc, "compare-good", GOOD);
    let bad = trial(&kc, "compare-bad", BAD);
    let good2 = trial(&kc, "compare-good-2", GOOD);

    let (code, table) = compare(&good, &bad);
    assert_eq!(code, 1, "good against bad regresses: {table}");
    assert!(
        table.contains("run: 1 baseline trial(s) against 1 new"),
        "{table}"
    );
    let rows = regressed_rows(&table);
    assert!(!rows.is_empty(), "a regressed metric is named: {table}");
    for r in &rows {
        assert!(
            ATTACH_FAILURES.iter().any(|m| r.starts_with(m))
                && r.ends_with("regressed (every-trial-against-none)"),
            "at 1 against 1 only a failure metric can regress, by the \
             every-trial-against-none rule: {r}"
        );
    }
    assert!(
        table.ends_with("drainwatch compare: regressed\n"),
        "{table}"
    );

    let (code, table) = compare(&good, &good2);
    assert_eq!(code, 0, "good against good does not regress: {table}");
    assert_eq!(regressed_rows(&table), Vec::<String>::new(), "{table}");
    // At 1 against 1 the rank-sum test cannot decide: no regression found, and said undecided.
    let last = table.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("drainwatch compare: no regression found, ")
            && last.ends_with(" metrics undecided (see the table)"),
        "{table}"
    );
}
