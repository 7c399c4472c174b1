//! Every relative link in the project's front door and guides resolves: README.md,
//! CONTRIBUTING.md, ARCHITECTURE.md, EXPERIMENTS.md and docs/*.md. A link to a file must name one
//! that exists (in the checkout, relative to the linking file); a link with `#anchor` to a
//! Markdown file (or to a heading of the same file) must name a heading of it, slugged as GitHub
//! slugs them. Links inside code blocks and spans are text, not links, and are left alone.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on a broken checkout by design

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn pages() -> Vec<PathBuf> {
    let root = repo();
    let mut v: Vec<PathBuf> = [
        "README.md",
        "CONTRIBUTING.md",
        "ARCHITECTURE.md",
        "EXPERIMENTS.md",
    ]
    .iter()
    .map(|p| root.join(p))
    .collect();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("read docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    v.extend(docs);
    v
}

/// The text outside fenced code blocks and inline code spans, line by line (numbers kept).
fn prose(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if let Some(f) = fence {
            if t.starts_with(f) {
                fence = None;
            }
            continue;
        }
        if t.starts_with("```") {
            fence = Some("```");
            continue;
        }
        if t.starts_with("~~~") {
            fence = Some("~~~");
            continue;
        }
        // Indented code (four spaces after a blank line) is rare here and holds no links.
        let mut kept = String::new();
        let mut in_code = false;
        for ch in line.chars() {
            if ch == '`' {
                in_code = !in_code;
            } else if !in_code {
                kept.push(ch);
            }
        }
        out.push((n + 1, kept));
    }
    out
}

/// `[text](target)`, `![alt](target)` and `[label]: target` targets, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut v = Vec::new();
    for (n, line) in prose(text) {
        let b = line.as_bytes();
        let mut i = 0;
        while let Some(p) = line[i..].find("](") {
            let start = i + p + 2;
            let mut depth = 0;
            let mut end = start;
            while end < b.len() {
                match b[end] {
                    b'(' => depth += 1,
                    b')' if depth == 0 => break,
                    b')' => depth -= 1,
                    _ => {}
                }
                end += 1;
            }
            let target = line[start..end].split_whitespace().next().unwrap_or("");
            v.push((n, target.trim_matches(['<', '>']).to_string()));
            i = end.min(line.len());
        }
        let t = line.trim_start();
        if t.starts_with('[') {
            if let Some(p) = t.find("]: ") {
                let target = t[p + 3..].split_whitespace().next().unwrap_or("");
                v.push((n, target.to_string()));
            }
        }
    }
    v
}

/// GitHub's heading anchors: lower case, punctuation other than `-` and `_` dropped, spaces to
/// `-`; a repeated heading gets `-1`, `-2`, …
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    for (_, line) in prose_with_code_spans(text) {
        let t = line.trim_start();
        if !t.starts_with('#') {
            continue;
        }
        let title = t.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let slug: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut candidate = slug.clone();
        let mut k = 0;
        while seen.contains(&candidate) {
            k += 1;
            candidate = format!("{slug}-{k}");
        }
        seen.insert(candidate);
    }
    // Explicit anchors: <a id="x"></a> / <a name="x">.
    for part in text.split("<a ").skip(1) {
        for key in ["id=\"", "name=\""] {
            if let Some(p) = part.find(key) {
                if let Some(e) = part[p + key.len()..].find('"') {
                    seen.insert(part[p + key.len()..p + key.len() + e].to_string());
                }
            }
        }
    }
    seen
}

/// Lines outside fenced code blocks, code spans kept (a heading's code span is part of its
/// anchor: "## `drainwatch run`" is `#drainwatch-run`).
fn prose_with_code_spans(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((n + 1, line.to_string()));
        }
    }
    out
}

fn check_page(page: &Path, problems: &mut Vec<String>) -> usize {
    let text = std::fs::read_to_string(page).expect("read page");
    let rel = page
        .strip_prefix(repo())
        .unwrap_or(page)
        .display()
        .to_string();
    let mut checked = 0;
    for (line, target) in links(&text) {
        if target.is_empty()
            || target.contains("://")
            || target.starts_with("mailto:")
            || target.starts_with("//")
        {
            continue;
        }
        checked += 1;
        let (file, anchor) = match target.split_once('#') {
            Some((f, a)) => (f, Some(a)),
            None => (target.as_str(), None),
        };
        let resolved = if file.is_empty() {
            page.to_path_buf()
        } else {
            page.parent().expect("page has a directory").join(file)
        };
        if !resolved.exists() {
            problems.push(format!("{rel}:{line}: {target}: no such file"));
            continue;
        }
        if let Some(a) = anchor {
            if resolved.extension().is_some_and(|x| x == "md") {
                let heads = anchors(&std::fs::read_to_string(&resolved).expect("read target"));
                if !heads.contains(a) {
                    problems.push(format!("{rel}:{line}: {target}: no heading #{a} there"));
                }
            }
        }
    }
    checked
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let pages = pages();
    // README, CONTRIBUTING, ARCHITECTURE, EXPERIMENTS and the guides under docs/.
    assert!(pages.len() >= 10, "only {} pages: {pages:?}", pages.len());
    let mut problems = Vec::new();
    let mut checked = 0;
    for p in &pages {
        assert!(p.exists(), "{} is missing", p.display());
        checked += check_page(p, &mut problems);
    }
    assert!(checked >= 50, "only {checked} relative links found");
    assert!(
        problems.is_empty(),
        "{} of {checked} relative links do not resolve:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn slugs_follow_github() {
    let a = anchors(
        "# Title\n## Thresholds against a baseline\n## `drainwatch run --platform local`\n\
         ## Findings: what went wrong, why, and what to change\n## Title\n```\n# not a heading\n```\n",
    );
    for want in [
        "title",
        "title-1",
        "thresholds-against-a-baseline",
        "drainwatch-run---platform-local",
        "findings-what-went-wrong-why-and-what-to-change",
    ] {
        assert!(a.contains(want), "{want} missing from {a:?}");
    }
    assert_eq!(a.len(), 5);
    let l = links(
        "see [a](docs/x.md#y) and `[b](not/a/link.md)`\n```\n[c](in/code.md)\n```\n[d]: ../e.md\n",
    );
    assert_eq!(
        l,
        vec![(1, "docs/x.md#y".to_string()), (5, "../e.md".to_string())]
    );
}
