//! Stamps the commit into the binary so every report names the build that produced it.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=DRAINWATCH_GIT_COMMIT");
    if std::env::var("DRAINWATCH_GIT_COMMIT").is_ok() {
        return;
    }
    rerun_on_commit_or_source_change();
    if let Some(c) = git(&[
        "describe",
        "--always",
        "--dirty",
        "--abbrev=12",
        "--exclude=*",
    ]) {
        println!("cargo:rustc-env=DRAINWATCH_GIT_COMMIT={c}");
    }
}

/// Reruns on a new commit (HEAD, the branch it names, packed refs) and on a change to the
/// binary's own sources (the `-dirty` mark). Not on `.git/index`: `git status` and `git
/// describe --dirty` rewrite it without any change to the tree, and a rerun then rebuilt the
/// release binary under a process that was serving and checksumming it.
fn rerun_on_commit_or_source_change() {
    for p in ["src", "Cargo.toml", "Cargo.lock", "build.rs"] {
        println!("cargo:rerun-if-changed={p}");
    }
    let mut refs = vec!["HEAD".to_string(), "packed-refs".to_string()];
    refs.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for r in refs {
        // `--git-path`: right in a linked worktree too, whose branch refs live in the common dir.
        // A path that does not exist would rerun the script on every build: skip it.
        match git(&["rev-parse", "--git-path", &r]).map(PathBuf::from) {
            Some(p) if p.exists() => println!("cargo:rerun-if-changed={}", p.display()),
            _ => {}
        }
    }
}

/// `git ARGS` in the package's directory: its trimmed output, or None when git fails.
fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8_lossy(&o.stdout).trim().to_string();
    (o.status.success() && !s.is_empty()).then_some(s)
}
