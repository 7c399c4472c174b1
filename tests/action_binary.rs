//! The action's binary step (setup/binary.sh, binary-source: release) takes the release asset
//! for the runner's architecture (RUNNER_ARCH, which the runner sets from `runner.arch`: X64 →
//! drainwatch-x86_64-linux-musl, ARM64 → drainwatch-aarch64-linux-musl), checked against its
//! .sha256, and names the architectures it has no binary for. The "release" here is a file://
//! directory laid out as release.yml publishes it; the assets are stand-in scripts that print
//! which one ran.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

const VERSION: &str = "9.8.7";

/// A release directory with both assets and their sums (sha256sum format).
fn release(dir: &Path) {
    for arch in ["x86_64", "aarch64"] {
        let asset = format!("drainwatch-{arch}-linux-musl");
        let path = dir.join(&asset);
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho drainwatch {VERSION} {arch}\n"),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = Command::new("sha256sum")
            .arg(&asset)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success());
        std::fs::write(dir.join(format!("{asset}.sha256")), out.stdout).unwrap();
    }
}

fn binary_step(runner_arch: &str, release_dir: &Path, work: &Path) -> (Output, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("setup/binary.sh");
    let gh_out = work.join("github-output");
    std::fs::write(&gh_out, "").unwrap();
    let out = Command::new("bash")
        .arg(&script)
        .env("RUNNER_ARCH", runner_arch)
        .env("RUNNER_TOOL_CACHE", work.join("tool-cache"))
        .env("RUNNER_TEMP", work)
        .env("GITHUB_OUTPUT", &gh_out)
        .env("DRAINWATCH_VERSION", VERSION)
        .env("INPUT_BINARY", "")
        .env("INPUT_BINARY_SOURCE", "release")
        .env(
            "INPUT_RELEASE_URL",
            format!("file://{}", release_dir.display()),
        )
        .output()
        .unwrap();
    (out, std::fs::read_to_string(&gh_out).unwrap())
}

#[test]
fn each_runner_architecture_gets_its_own_checksum_verified_asset() {
    let dir = common::temp_dir("action-binary");
    let rel = dir.join("release");
    std::fs::create_dir_all(&rel).unwrap();
    release(&rel);
    let cases = [("X64", "x86_64"), ("ARM64", "aarch64")];
    assert_eq!(cases.len(), 2);
    for (runner_arch, arch) in cases {
        let work = dir.join(runner_arch);
        std::fs::create_dir_all(&work).unwrap();
        let (out, gh) = binary_step(runner_arch, &rel, &work);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{runner_arch}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            gh.contains(&format!(
                "bin={}/tool-cache/drainwatch/{VERSION}/{arch}/drainwatch-{arch}-linux-musl",
                work.display()
            )),
            "{runner_arch}: {gh}"
        );
        assert!(
            stdout.contains(&format!("drainwatch {VERSION} {arch}")),
            "{runner_arch} ran: {stdout}"
        );
    }
}

#[test]
fn an_asset_that_does_not_match_its_sum_is_refused() {
    let dir = common::temp_dir("action-binary-sum");
    let rel = dir.join("release");
    std::fs::create_dir_all(&rel).unwrap();
    release(&rel);
    std::fs::write(
        rel.join("drainwatch-aarch64-linux-musl"),
        "#!/bin/sh\necho tampered\n",
    )
    .unwrap();
    let (out, gh) = binary_step("ARM64", &rel, &dir);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("drainwatch-aarch64-linux-musl does not match"),
        "{err}"
    );
    assert!(!gh.contains("bin="), "{gh}");
}

#[test]
fn a_runner_architecture_without_a_release_binary_is_named() {
    let dir = common::temp_dir("action-binary-arch");
    let (out, _) = binary_step("ARM", &dir, &dir);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no release binary for the runner architecture ARM"),
        "{err}"
    );
}
