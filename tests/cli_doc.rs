//! docs/cli.md is the CLI reference, generated from the clap definitions in `src/cli*`: every
//! subcommand's long help, as `drainwatch <subcommand> --help` prints it. This test renders it
//! and fails with a diff when the committed file differs, so the reference cannot drift from
//! the flags. `DRAINWATCH_BLESS=1 cargo test --test cli_doc` rewrites the file.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on a broken checkout by design

use std::path::PathBuf;

use clap::{Command, CommandFactory};
use drainwatch::cli::Cli;

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md")
}

/// Environment values would make the page depend on the shell that rendered it
/// (`[env: DRAINWATCH_CLIENT=host]`); the variable's name stays.
fn without_env_values(cmd: Command) -> Command {
    cmd.mut_args(|a| a.hide_env_values(true))
        .mut_subcommands(without_env_values)
}

/// Depth first, in declaration order: `drainwatch`, `drainwatch run`, …, `drainwatch ci judge`.
fn collect(cmd: &Command, path: &str, out: &mut Vec<(String, String)>) {
    let mut c = cmd.clone();
    out.push((path.to_string(), c.render_long_help().to_string()));
    for sub in cmd.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        collect(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

fn render() -> (String, usize) {
    let mut cmd = without_env_values(Cli::command());
    cmd.build();
    let mut pages = Vec::new();
    collect(&cmd, "drainwatch", &mut pages);
    let mut s = String::from(
        "# Command-line reference\n\n\
         <!-- Generated from src/cli* by tests/cli_doc.rs; do not edit by hand. \
         Rewrite it with: DRAINWATCH_BLESS=1 cargo test --test cli_doc -->\n\n\
         Every subcommand's `--help`, as the binary prints it. How the pieces fit together is in \
         the guides: [getting started](getting-started.md), \
         [gate your service](gate-your-service.md), [CI reference](ci.md).\n\n",
    );
    for (path, _) in &pages {
        let anchor = path.replace(' ', "-");
        s.push_str(&format!("- [`{path}`](#{anchor})\n"));
    }
    for (path, help) in &pages {
        s.push_str(&format!(
            "\n## {path}\n\n```text\n{}\n```\n",
            help.trim_end()
        ));
    }
    (s, pages.len())
}

#[test]
fn docs_cli_md_is_the_help_of_every_subcommand() {
    let (want, pages) = render();
    // drainwatch, its 8 subcommands, and ci's own subcommands: a render that lost the tree
    // would be far below this.
    assert!(pages >= 12, "only {pages} help pages rendered");
    let path = doc_path();
    if std::env::var_os("DRAINWATCH_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &want).expect("write docs/cli.md");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want {
        let diff = similar_lines(&have, &want);
        panic!(
            "docs/cli.md differs from the clap definitions ({} lines differ); \
             rewrite it with DRAINWATCH_BLESS=1 cargo test --test cli_doc\n{diff}",
            diff.lines().count()
        );
    }
}

/// A line diff good enough to see what changed: lines only in the file (`-`) and only in the
/// rendering (`+`), each with its line number, in order.
fn similar_lines(have: &str, want: &str) -> String {
    let a: Vec<&str> = have.lines().collect();
    let b: Vec<&str> = want.lines().collect();
    // Longest common subsequence, quadratic: the page is a few thousand lines at most.
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("+{:>5} {}\n", j + 1, b[j]));
            j += 1;
        } else {
            out.push_str(&format!("-{:>5} {}\n", i + 1, a[i]));
            i += 1;
        }
    }
    out
}
