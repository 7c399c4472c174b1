//! The attach walk-through of docs/gate-your-service.md runs as written: every ```sh block
//! preceded by a `<!-- walkthrough -->` line is extracted and the blocks run in order, in one
//! bash (`set -euo pipefail`, from the repository root), as a reader pastes them into one shell.
//! A command that does not work as copied after the one before it fails this test.
//!
//! Two substitutions only, so the test can share a cluster: the documented kubeconfig path
//! becomes `DRAINWATCH_E2E_KUBECONFIG`, and the documented drainwatch image tag becomes
//! `DRAINWATCH_E2E_IMAGE` when set (exported as `DW_IMAGE` too, the tag `make example-images`
//! builds), so one checkout's image never replaces another's, and `SKIP_IMAGE=1` keeps
//! `make cluster-up` from rebuilding the cluster's shared probe image from this checkout.
//! `make e2e-walkthrough` sets both variables.
//! Run without the kubeconfig variable, or against a cluster that does not answer, it fails.
//! `DRAINWATCH_WALKTHROUGH_LOG=FILE` also writes the whole output there. No timing is asserted.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The kubeconfig and the image tag as docs/gate-your-service.md writes them.
const DOC_KUBECONFIG: &str = "/var/lib/drainwatch-cluster/admin.kubeconfig";
const DOC_IMAGE: &str = concat!(
    "ghcr.io/drainwatch/drainwatch:",
    env!("CARGO_PKG_VERSION"),
    "-attach"
);
/// The namespace the walk-through deploys its service into (never the shared examples').
const NS: &str = "walkthrough";
/// Where the walk-through writes (as documented): under the checkout's ignored `out/`.
const OUT: &str = "out/walkthrough";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The blocks to run: a ```sh fence whose previous non-blank line is `<!-- walkthrough -->`.
fn blocks(doc: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut marked = false;
    let mut current: Option<String> = None;
    for line in doc.lines() {
        if let Some(b) = current.as_mut() {
            if line.trim_start().starts_with("```") {
                out.push(current.take().unwrap());
            } else {
                b.push_str(line);
                b.push('\n');
            }
            continue;
        }
        let t = line.trim();
        if t == "<!-- walkthrough -->" {
            marked = true;
        } else if t == "```sh" && marked {
            current = Some(String::new());
            marked = false;
        } else if !t.is_empty() {
            marked = false;
        }
    }
    assert!(current.is_none(), "an unclosed walkthrough block");
    out
}

fn script(blocks: &[String], kubeconfig: &Path, image: Option<&str>) -> String {
    let mut s = String::from("set -euo pipefail\n");
    for (i, b) in blocks.iter().enumerate() {
        let mut b = b.replace(DOC_KUBECONFIG, &kubeconfig.display().to_string());
        if let Some(img) = image {
            b = b.replace(DOC_IMAGE, img);
        }
        s.push_str(&format!(
            "echo '### walkthrough block {} of {}'\n",
            i + 1,
            blocks.len()
        ));
        s.push_str(&b);
    }
    s.push_str("echo '### walkthrough done'\n");
    s
}

#[test]
fn blocks_are_the_marked_sh_fences() {
    let doc = "text\n<!-- walkthrough -->\n\n```sh\na\nb\n```\n```sh\nnot marked\n```\n\
               <!-- walkthrough -->\nprose between\n```sh\nnot marked either\n```\n\
               <!-- walkthrough -->\n```sh\nc\n```\n";
    assert_eq!(blocks(doc), vec!["a\nb\n".to_string(), "c\n".to_string()]);
}

#[test]
fn the_walkthrough_has_its_steps_and_substitutes_only_the_shared_names() {
    let doc = std::fs::read_to_string(repo().join("docs/gate-your-service.md")).unwrap();
    let b = blocks(&doc);
    // set up, deploy, run, read, add the preStop, run again, gate, clean up
    assert!(b.len() >= 6, "only {} walkthrough blocks", b.len());
    let all = b.concat();
    assert!(
        all.contains(DOC_KUBECONFIG),
        "the blocks name no kubeconfig"
    );
    assert!(all.contains(DOC_IMAGE), "the blocks name no {DOC_IMAGE}");
    assert!(
        !all.contains("cluster-down"),
        "the walkthrough must not tear the cluster down"
    );
    assert!(
        all.contains(&format!("--target-namespace {NS}")),
        "the walkthrough deploys into a namespace other than {NS}"
    );
    let s = script(&b, Path::new("/k"), Some("img:x"));
    assert!(!s.contains(DOC_KUBECONFIG) && !s.contains(DOC_IMAGE));
}

#[test]
#[ignore = "needs the local cluster; make e2e-walkthrough"]
fn the_attach_walkthrough_runs_as_written() {
    let (kc, _guard) = common::cluster("e2e-walkthrough");
    let doc = std::fs::read_to_string(repo().join("docs/gate-your-service.md")).unwrap();
    let b = blocks(&doc);
    assert!(b.len() >= 6, "only {} walkthrough blocks", b.len());
    let image = common::e2e_image();
    let s = script(&b, &kc, image.as_deref());
    let _ = std::fs::remove_dir_all(repo().join(OUT));
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(&s).current_dir(repo());
    // `make cluster-up` rebuilds the project (probe) image when this checkout differs from the
    // one it was built from; on a shared cluster that image is everyone's, and the walk-through
    // does not use it (its client pod runs the image above), so it is left as it is.
    cmd.env("SKIP_IMAGE", "1");
    if let Some(img) = &image {
        cmd.env("DW_IMAGE", img);
    }
    let o = cmd.output().expect("run bash");
    // The guide's last block deletes its namespace; a run that stopped before it leaves it.
    let _ = common::kubectl(
        &kc,
        &[
            "delete",
            "namespace",
            NS,
            "--ignore-not-found",
            "--wait=false",
        ],
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let log = format!(
        "$ bash -c <the {} blocks>\n--- stdout\n{stdout}\n--- stderr\n{stderr}\n--- exit {:?}\n",
        b.len(),
        o.status.code()
    );
    if let Some(p) = std::env::var_os("DRAINWATCH_WALKTHROUGH_LOG").filter(|p| !p.is_empty()) {
        std::fs::write(p, &log).unwrap();
    }
    println!("{log}");
    assert!(
        o.status.success(),
        "the walkthrough failed (exit {:?})",
        o.status.code()
    );
    assert_eq!(
        stdout.matches("### walkthrough block ").count(),
        b.len(),
        "not every block ran"
    );
    assert!(stdout.contains("### walkthrough done"));
    // What the guide says each step leaves behind.
    for f in [
        "before/report.json",
        "before/report.html",
        "after/report.json",
        "gate/verdict.json",
        "gate/junit.xml",
    ] {
        assert!(
            repo().join(OUT).join(f).is_file(),
            "{OUT}/{f} was not written"
        );
    }
    let before = common::json(&repo().join(OUT).join("before/report.json"));
    common::assert_valid_report(&before);
    let findings = before["findings"].as_array().expect("findings");
    assert!(
        findings.iter().any(|f| f["id"] == "endpoint-lag"),
        "the bad service's run has no endpoint-lag finding: {findings:?}"
    );
}
