//! What users copy is the strongest: every policy, workflow and command line drainwatch ships
//! for copying (examples/gate/*.toml, examples/policy.toml, examples/workflows/*.yml, the
//! README's and the guides' code blocks) gates new connections with `no-new-connection-failed`,
//! which counts every failed dial (refused, reset, timed out), never with
//! `no-new-connection-refused` alone, which a service whose dials time out passes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

use std::path::{Path, PathBuf};

const WEAK: &str = "no-new-connection-refused";
const STRONG: &str = "no-new-connection-failed";

/// The guides whose fenced code blocks users copy.
const GUIDES: [&str; 5] = [
    "README.md",
    "docs/ci.md",
    "docs/gate-your-service.md",
    "docs/getting-started.md",
    "docs/other-ci.md",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

/// The fenced code blocks of a Markdown file, each with the line it starts on.
fn blocks(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            match open.take() {
                Some(b) => out.push(b),
                None => open = Some((i + 1, String::new())),
            }
        } else if let Some((_, b)) = open.as_mut() {
            b.push_str(line);
            b.push('\n');
        }
    }
    out
}

/// Every copyable text: whole example files, and the guides' code blocks.
fn copyable() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let shown = |p: &Path| p.strip_prefix(repo()).unwrap().display().to_string();
    let mut whole = files("examples/gate", "toml");
    whole.push(repo().join("examples/policy.toml"));
    whole.extend(files("examples/workflows", "yml"));
    for p in whole {
        out.push((shown(&p), std::fs::read_to_string(&p).unwrap()));
    }
    for g in GUIDES {
        let text = std::fs::read_to_string(repo().join(g)).unwrap();
        for (line, b) in blocks(&text) {
            out.push((format!("{g}:{line}"), b));
        }
    }
    out
}

#[test]
fn every_shipped_policy_gates_every_failed_new_connection() {
    let all = copyable();
    let strong = all.iter().filter(|(_, t)| t.contains(STRONG)).count();
    // Every example policy and the guides' policies name it: a floor, so this cannot pass by
    // finding nothing.
    assert!(strong >= 8, "{strong} copyable texts name {STRONG}");
    let weak: Vec<&str> = all
        .iter()
        .filter(|(_, t)| t.contains(WEAK))
        .map(|(w, _)| w.as_str())
        .collect();
    assert!(
        weak.is_empty(),
        "{WEAK} where a user would copy a policy (use {STRONG}, which also counts timed-out and reset dials): {weak:?}"
    );
    // Every example gate policy with a prober gates its dials.
    let gates = files("examples/gate", "toml");
    assert!(gates.len() >= 3, "{gates:?}");
    for p in gates {
        let text = std::fs::read_to_string(&p).unwrap();
        if text.contains("dial-rate") {
            assert!(text.contains(STRONG), "{}", p.display());
        }
    }
}
