//! ARCHITECTURE.md stays true: every module path, item and file it names exists, and it names
//! every top-level module and every module of the evidence core.
//!
//! A module path is a code span like `evidence::attach::lanes::split` or
//! `k8s::trigger::{delete, evict}` whose first segment is a top-level module or a module of the
//! core (the map writes `findings::render` for `evidence::findings::render`); its last segment
//! may be an item (a fn, type, trait, const or module) defined in the module before it. A file
//! is a code span or a link target under one of the repository's folders.

use std::path::{Path, PathBuf};

/// The core's sources: the drainwatch-evidence crate, `drainwatch::evidence`.
const CORE_SRC: &str = "crates/evidence/src";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn map() -> String {
    std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap()
}

/// The text of every `code span` of `doc`.
fn code_spans(doc: &str) -> Vec<String> {
    doc.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

/// The targets of `[text](target)` links.
fn link_targets(doc: &str) -> Vec<String> {
    doc.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(|t| t.split('#').next().unwrap_or_default().to_string())
        .filter(|t| !t.is_empty() && !t.contains("://"))
        .collect()
}

/// The modules directly under `dir` (`x.rs` or `x/`), without `mod`, `lib` and the test-only
/// fixtures.
fn child_modules(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            if p.is_dir() {
                p.file_name().map(|n| n.to_string_lossy().into_owned())
            } else if p.extension().is_some_and(|e| e == "rs") {
                p.file_stem().map(|n| n.to_string_lossy().into_owned())
            } else {
                None
            }
        })
        .filter(|n| !matches!(n.as_str(), "mod" | "lib" | "test_fixtures"))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Where the module `segs` lives without its extension: `src/a/b`, or for the core (the
/// drainwatch-evidence crate, re-exported as `evidence`) `crates/evidence/src/b`.
fn module_base(segs: &[&str]) -> PathBuf {
    match segs.split_first() {
        Some((&"evidence", rest)) => rest.iter().fold(root().join(CORE_SRC), |p, s| p.join(s)),
        _ => segs.iter().fold(root().join("src"), |p, s| p.join(s)),
    }
}

/// The file of the module `segs` (`src/a/b.rs` or `src/a/b/mod.rs`), when it is one.
fn module_file(segs: &[&str]) -> Option<PathBuf> {
    if segs == ["evidence"] {
        return Some(root().join(CORE_SRC).join("lib.rs"));
    }
    let base = module_base(segs);
    [base.with_extension("rs"), base.join("mod.rs")]
        .into_iter()
        .find(|p| p.is_file())
}

/// The module's file and, for a module with a folder, every file under it.
fn module_sources(segs: &[&str]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = module_file(segs).into_iter().collect();
    let dir = module_base(segs);
    if dir.is_dir() {
        out.extend(super::common::rust_files(&dir));
    }
    out
}

/// Whether `source` defines `name` (a fn, type, trait, const, static, module or macro).
fn defines(source: &str, name: &str) -> bool {
    [
        "fn", "struct", "enum", "trait", "type", "const", "static", "mod",
    ]
    .iter()
    .any(|kw| {
        let needle = format!("{kw} {name}");
        source.match_indices(&needle).any(|(i, _)| {
            let before = source[..i].chars().last();
            let after = source[i + needle.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    }) || source.contains(&format!("macro_rules! {name}"))
}

/// `a::b::{c, d}` as `a::b::c` and `a::b::d`.
fn expand(path: &str) -> Vec<String> {
    match (path.find('{'), path.rfind('}')) {
        (Some(open), Some(close)) if close > open => path[open + 1..close]
            .split(',')
            .map(|s| format!("{}{}", &path[..open], s.trim()))
            .collect(),
        _ => vec![path.to_string()],
    }
}

/// Whether `path` names a module, or an item of a module, from the crate root or from the core.
fn resolves(path: &str) -> bool {
    let segs: Vec<&str> = path.split("::").collect();
    [vec![], vec!["evidence"]].iter().any(|prefix| {
        let full: Vec<&str> = prefix.iter().copied().chain(segs.iter().copied()).collect();
        if module_file(&full).is_some() {
            return true;
        }
        let (name, parent) = full.split_last().unwrap();
        module_file(parent).is_some()
            && module_sources(parent)
                .iter()
                .any(|f| defines(&std::fs::read_to_string(f).unwrap(), name))
    })
}

/// The code spans that are module paths of this crate.
fn module_paths(doc: &str) -> Vec<String> {
    let mut firsts = child_modules(&root().join("src"));
    firsts.push("evidence".into());
    firsts.extend(child_modules(&root().join(CORE_SRC)));
    code_spans(doc)
        .into_iter()
        .filter(|s| s.contains("::"))
        .filter(|s| {
            s.chars()
                .all(|c| c.is_alphanumeric() || "_:{}, ".contains(c))
        })
        .filter(|s| firsts.iter().any(|f| s.split("::").next() == Some(f)))
        .collect()
}

#[test]
fn every_module_path_the_map_names_exists() {
    let paths = module_paths(&map());
    assert!(paths.len() > 40, "the map names its modules: {paths:?}");
    let missing: Vec<String> = paths
        .iter()
        .flat_map(|p| expand(p))
        .filter(|p| !resolves(p))
        .collect();
    assert_eq!(
        missing,
        Vec::<String>::new(),
        "named in ARCHITECTURE.md, not in src/"
    );
}

#[test]
fn every_file_the_map_names_exists() {
    let doc = map();
    let dirs = [
        "src/",
        "tests/",
        "docs/",
        "deploy/",
        "scripts/",
        "examples/",
        "schema/",
        "results/",
        "mk/",
        "setup/",
        "fuzz/",
    ];
    let files: Vec<String> = code_spans(&doc)
        .into_iter()
        .chain(link_targets(&doc))
        .filter(|s| dirs.iter().any(|d| s.starts_with(d)))
        .filter(|s| !s.contains(['*', '<', ' ']))
        .collect();
    assert!(files.len() > 10, "the map names its files: {files:?}");
    let missing: Vec<&String> = files.iter().filter(|f| !root().join(f).exists()).collect();
    assert_eq!(
        missing,
        Vec::<&String>::new(),
        "named in ARCHITECTURE.md, not in the repository"
    );
}

#[test]
fn the_map_names_every_top_level_module_and_every_module_of_the_core() {
    let doc = map();
    let spans = code_spans(&doc);
    let named = |prefix: &str, m: &str| {
        spans.iter().any(|s| {
            s == m
                || s.starts_with(&format!("{prefix}{m}::"))
                || s == &format!("{prefix}{m}")
                || s.split([',', ' ', '{', '}'])
                    .any(|w| w == format!("{prefix}{m}"))
        })
    };
    let mut top = child_modules(&root().join("src"));
    top.extend(["main".into(), "evidence".into()]);
    let core = child_modules(&root().join(CORE_SRC));
    assert!(top.len() > 10 && core.len() > 20, "{top:?} {core:?}");
    let unnamed: Vec<String> = top
        .iter()
        .filter(|m| !named("", m))
        .cloned()
        .chain(
            core.iter()
                .filter(|m| !named("evidence::", m) && !named("", m))
                .map(|m| format!("evidence::{m}")),
        )
        .collect();
    assert_eq!(
        unnamed,
        Vec::<String>::new(),
        "modules ARCHITECTURE.md does not name"
    );
}

#[test]
fn the_checks_see_what_is_missing() {
    assert!(resolves("evidence::attach::lanes::split"));
    assert!(resolves("findings::render"));
    assert!(!resolves("evidence::attach::no_such_module"));
    assert!(!resolves("k8s::trigger::no_such_fn"));
    assert_eq!(
        expand("k8s::trigger::{delete, evict}"),
        ["k8s::trigger::delete", "k8s::trigger::evict"]
    );
    assert!(defines("pub fn split(x: u8)", "split"));
    assert!(!defines("pub fn splitter(x: u8)", "split"));
    assert_eq!(
        link_targets("see [a](docs/a.md#x) and [b](https://x.y)"),
        ["docs/a.md"]
    );
}
