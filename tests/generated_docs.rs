//! Parts of the docs generated from committed runs, so that they cannot drift from them: the
//! release image's size (docs/releases.md, from `make dist`'s image-sizes.txt), and the job
//! summary and pull-request comment a gate writes (docs/pull-request.md, rendered by this
//! build's `drainwatch ci summary` / `ci comment --print` from the artifact of a committed
//! `make test-action-kind` run). A difference fails with the rows; `make docs`
//! (DRAINWATCH_BLESS=1) rewrites them.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

use std::path::PathBuf;
use std::process::Command;

mod common;
#[path = "common/generated.rs"]
mod generated;

const BLESS: &str = "make docs, i.e. DRAINWATCH_BLESS=1 cargo test --test generated_docs";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The committed `make dist` run the image's size is stated from.
const DIST_RUN: &str = "results/2026-12-01-dist";

/// One row of image-sizes.txt: `platform  layers-as-pushed  unpacked  manifest`, sizes as
/// `N.NN MiB`.
#[derive(Debug, PartialEq)]
struct ImageSize {
    platform: String,
    pushed: String,
    unpacked: String,
}

fn image_sizes(text: &str) -> Vec<ImageSize> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["platform", "layers-as-pushed", "unpacked", "manifest"],
        "image-sizes.txt's header"
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 6, "a row of image-sizes.txt: {l:?}");
            assert!(f[2] == "MiB" && f[4] == "MiB", "sizes in MiB: {l:?}");
            ImageSize {
                platform: f[0].to_string(),
                pushed: format!("{} MiB", f[1]),
                unpacked: format!("{} MiB", f[3]),
            }
        })
        .collect()
}

fn image_size_table(sizes: &[ImageSize]) -> String {
    let mut t = format!(
        "Measured by `make dist` ([{DIST_RUN}/image-sizes.txt](../{DIST_RUN}/image-sizes.txt)):\n\n\
         | platform | as pushed (compressed layers) | unpacked |\n| --- | --- | --- |\n"
    );
    for s in sizes {
        t.push_str(&format!(
            "| {} | {} | {} |\n",
            s.platform, s.pushed, s.unpacked
        ));
    }
    t
}

#[test]
fn the_image_size_in_the_docs_is_the_committed_dist_runs() {
    let text = std::fs::read_to_string(repo().join(DIST_RUN).join("image-sizes.txt")).unwrap();
    let sizes = image_sizes(&text);
    assert_eq!(sizes.len(), 2, "amd64 and arm64: {sizes:?}");
    generated::holds(
        &repo().join("docs/releases.md"),
        "image-size",
        &image_size_table(&sizes),
        BLESS,
    );
}

#[test]
fn the_image_size_is_stated_in_one_place() {
    // Other pages link to docs/releases.md#the-images-size instead of repeating a figure.
    let mut stated = Vec::new();
    for dir in [repo(), repo().join("docs")] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") && !path.ends_with("docs/releases.md") {
                let text = std::fs::read_to_string(&path).unwrap();
                if image_size_sentence(&text) {
                    stated.push(path);
                }
            }
        }
    }
    assert_eq!(
        stated,
        Vec::<PathBuf>::new(),
        "these state an image size of their own"
    );
}

/// Whether `text` states a size next to the word image (a MiB figure within a line of it).
fn image_size_sentence(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    lines.iter().enumerate().any(|(i, l)| {
        l.contains("MiB")
            && lines[i.saturating_sub(1)..(i + 2).min(lines.len())]
                .iter()
                .any(|n| n.contains("image"))
            && !l.contains("memory")
            && !l.contains("Memory")
            && !l.contains("artifact")
    })
}

#[test]
fn the_image_size_check_sees_a_stated_size() {
    assert!(image_size_sentence(
        "The image is the static binary alone: 11.78 MiB uncompressed"
    ));
    assert!(!image_size_sentence(
        "The image is the static binary alone ([its size](releases.md#the-images-size))."
    ));
}

#[test]
fn image_sizes_reads_the_file_make_dist_writes() {
    let rows = image_sizes(
        "platform     layers-as-pushed  unpacked        manifest\n\
         linux/amd64          6.05 MiB     13.87 MiB  sha256:bb\n",
    );
    assert_eq!(
        rows,
        [ImageSize {
            platform: "linux/amd64".into(),
            pushed: "6.05 MiB".into(),
            unpacked: "13.87 MiB".into()
        }]
    );
}

/// The committed gate run the pull-request page is rendered from: a bad-shutdown leg of
/// `make test-action-kind` (its artifact, and the environment the Action gave its summary and
/// comment steps). Its baseline was tests/fixtures/attach as the arm `rollout`.
const GATE_RUN: &str = "results/2026-12-05-action-kind-readme";

/// `drainwatch ci <args>` on the committed artifact, with the Action's environment and the
/// baseline laid out as the Action downloads it; stdout. Paths are relative to a scratch
/// directory, so the rendered text names `report` and `baseline`, never a temporary path.
fn render_ci(args: &[&str]) -> String {
    let run = repo().join(GATE_RUN);
    let scratch = common::temp_dir(&format!("generated-docs-{}", args[0]));
    common::copy_dir(&run.join("gate-bad-shutdown"), &scratch.join("report"));
    let base = scratch.join("baseline/rollout");
    std::fs::create_dir_all(&base).unwrap();
    for f in ["report.json", "events.jsonl"] {
        std::fs::copy(repo().join("tests/fixtures/attach").join(f), base.join(f)).unwrap();
    }
    let env: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(run.join("action-env.json")).unwrap())
            .unwrap();
    let mut cmd = Command::new(common::bin());
    cmd.arg("ci").args(args).current_dir(&scratch);
    for (k, _) in std::env::vars() {
        if k.starts_with("GITHUB_") || k.starts_with("DRAINWATCH_") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in &env {
        cmd.env(k, v.as_str().unwrap());
    }
    cmd.env("DRAINWATCH_REPORT_DIR", "report")
        .env("DRAINWATCH_BASELINE_DIR", "baseline");
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "drainwatch ci {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_pull_request_page_shows_what_the_committed_gate_run_renders() {
    let page = repo().join("docs/pull-request.md");
    let summary = render_ci(&["summary"]);
    let comment = render_ci(&["comment", "--print"]);
    assert!(
        summary.starts_with("## ❌ drainwatch: fail")
            && comment.starts_with(
                "<!-- drainwatch:summary key=gate-bad-shutdown-19a1128c -->\n## ❌ drainwatch: fail"
            ),
        "the committed run is a failing leg:\n{summary}\n{comment}"
    );
    generated::holds(&page, "comment", &quoted(&comment), BLESS);
    generated::holds(&page, "job-summary", &quoted(&summary), BLESS);
}

/// `markdown` as a block quote, so that it renders inside the page as it renders on GitHub, its
/// headings kept out of the page's outline.
fn quoted(markdown: &str) -> String {
    markdown
        .lines()
        .map(|l| {
            if l.is_empty() {
                ">\n".to_string()
            } else {
                format!("> {l}\n")
            }
        })
        .collect()
}
