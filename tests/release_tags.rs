//! The release tag rules (scripts/release-tag.sh, which release.yml calls before anything is
//! built or pushed): a tag must be "v" + the Cargo version; a final release moves the major tag
//! (`v0`, what `uses: drainwatch/action@v0` and the image's `:v0` follow), a pre-release never
//! does. The Cargo version is passed in, so these hold whatever version the crate is at.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

fn release_tag(tag: &str, cargo_version: &str) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/release-tag.sh");
    Command::new("bash")
        .arg(&script)
        .arg(tag)
        .env("CARGO_VERSION", cargo_version)
        .output()
        .expect("bash runs scripts/release-tag.sh")
}

/// The key=value lines the workflow appends to $GITHUB_OUTPUT.
fn outputs(out: &Output) -> BTreeMap<String, String> {
    assert!(
        out.status.success(),
        "release-tag.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('=').expect("key=value");
            (k.to_string(), v.to_string())
        })
        .collect()
}

#[test]
fn a_final_release_pushes_the_exact_tag_and_moves_the_major_tag() {
    let o = outputs(&release_tag("v0.3.0", "0.3.0"));
    assert_eq!(o.len(), 6, "{o:?}");
    assert_eq!(o["version"], "0.3.0");
    assert_eq!(o["kind"], "final");
    assert_eq!(o["prerelease"], "false");
    assert_eq!(o["major"], "v0");
    assert_eq!(o["move-major"], "true");
    assert_eq!(o["tags"], "v0.3.0 v0");
}

#[test]
fn a_pre_release_pushes_only_its_exact_tag() {
    for (tag, version) in [
        ("v0.3.0-rc.1", "0.3.0-rc.1"),
        ("v1.0.0-beta.2", "1.0.0-beta.2"),
    ] {
        let o = outputs(&release_tag(tag, version));
        assert_eq!(o["version"], version);
        assert_eq!(o["kind"], "prerelease", "{tag}");
        assert_eq!(o["prerelease"], "true", "{tag}");
        assert_eq!(
            o["move-major"], "false",
            "{tag} must not move the major tag"
        );
        assert_eq!(o["tags"], tag, "{tag}: only the exact tag");
    }
}

#[test]
fn a_tag_that_differs_from_the_cargo_version_is_refused_by_name() {
    // A mismatching patch, and an -rc tag on a crate that says it is the final 0.3.0.
    for tag in ["v0.3.1", "v0.3.0-rc.1"] {
        let out = release_tag(tag, "0.3.0");
        assert_eq!(out.status.code(), Some(2), "{tag}");
        assert!(out.stdout.is_empty(), "{tag}: no outputs for a refused tag");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!(
                "tag '{tag}' does not match the Cargo version '0.3.0'"
            )),
            "{tag}: {err}"
        );
    }
}

#[test]
fn a_tag_outside_the_release_forms_is_refused_by_name() {
    for tag in ["v0.3", "0.3.0", "v0.3.0-rc1", "v0.3.0-dev.1", "v00.3.0"] {
        let out = release_tag(tag, "0.3.0");
        assert_eq!(out.status.code(), Some(2), "{tag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("tag '{tag}' is not a release tag")),
            "{tag}: {err}"
        );
    }
}

#[test]
fn the_release_workflow_takes_its_tags_from_the_script() {
    let wf = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(".github/workflows/release.yml"),
    )
    .unwrap();
    assert!(
        wf.contains("scripts/release-tag.sh"),
        "release.yml must call the tag rules"
    );
    assert!(
        wf.contains("needs.tag.outputs.move-major == 'true'"),
        "the major tag moves only when the script says so"
    );
}
