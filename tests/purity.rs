//! The evidence core stays pure: no runtime, sockets, cluster client, GitHub client or clock.
//! The compiler cannot enforce this inside one crate, so this test reads the sources.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

use std::path::Path;

const FORBIDDEN: &[&str] = &[
    "tokio::",
    "use tokio",
    "tokio_util::",
    "kube::",
    "kube_runtime::",
    "k8s_openapi::",
    "octocrab::",
    "socket2::",
    "nix::",
    "std::net",
    "std::fs",
    "std::process",
    "std::thread",
    "SystemTime",
    "Instant::",
    "crate::host",
    "crate::net",
    "crate::probe",
    "crate::platform",
    "crate::trial",
];

fn visit(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            visit(&p, files);
        } else if p.extension().is_some_and(|x| x == "rs") {
            files.push(p);
        }
    }
}

#[test]
fn the_core_imports_no_io_and_reads_no_clock() {
    let mut files = Vec::new();
    visit(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/evidence"),
        &mut files,
    );
    assert!(
        files.len() >= 10,
        "expected the core's files, found {files:?}"
    );
    // The attach core (classification, lanes, attribution, rendering) is held to the same rule.
    for f in [
        "build.rs",
        "lanes.rs",
        "window.rs",
        "section.rs",
        "render.rs",
    ] {
        assert!(
            files
                .iter()
                .any(|p| p.ends_with(Path::new("attach").join(f))),
            "the purity check no longer sees src/evidence/attach/{f}"
        );
    }
    let mut violations = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for word in FORBIDDEN {
                if code.contains(word) {
                    violations.push(format!("{}:{}: {word}: {line}", f.display(), n + 1));
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "the evidence core must stay pure:\n{}",
        violations.join("\n")
    );
}
