//! The architecture, checked on the sources (ARCHITECTURE.md is the map these tests hold):
//!
//! - the evidence core imports nothing of the edges, no I/O and no clock;
//! - the top-level modules import downward only, through the layers of `LAYERS`, with the
//!   few same-layer edges of `SAME_LAYER` (each with its reason);
//! - inside every module, its children import each other without a cycle (a module's own
//!   `mod.rs` is its face: it and its children may use each other);
//! - ARCHITECTURE.md names what exists, and every top-level module and module of the core
//!   (`architecture/map.rs`).
//!
//! The sources are parsed with `syn`, so comments and string literals never count and code
//! after a `"http://"` literal is read like any other; macro bodies are read token by token.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;
#[path = "architecture/graph.rs"]
mod graph;
#[path = "architecture/map.rs"]
mod map;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use graph::{Crate, Module};

/// The layers, top to bottom: a module may import any module of a lower layer.
const LAYERS: &[&[&str]] = &[
    &["main"],
    &["cmd"],
    &["cli", "gate"],
    &["trial"],
    &["platform"],
    &["k8s", "net", "probe", "github"],
    &["recorder", "preflight", "host", "wire"],
    &["console"],
    &["evidence"],
];

/// The edges allowed inside one layer, and why. They must not form a cycle either.
const SAME_LAYER: &[(&str, &str, &str)] = &[
    (
        "k8s",
        "probe",
        "the probe's manifests render the probe's own configuration (ports, env)",
    ),
    (
        "probe",
        "net",
        "the probe checks the open-file limit with the client's net::limits",
    ),
    (
        "recorder",
        "host",
        "the recorder stamps orchestrator lines with the host's clocks",
    ),
];

/// What the core may not name: runtimes, sockets, cluster and GitHub clients, processes,
/// files, the environment, clocks; and every edge module of this crate.
const CORE_FORBIDDEN_CRATES: &[&str] = &[
    "tokio",
    "tokio_util",
    "kube",
    "kube_runtime",
    "k8s_openapi",
    "octocrab",
    "socket2",
    "nix",
    "libc",
    "futures",
    "junit_report",
    "clap",
];
const CORE_FORBIDDEN_STD: &[&str] = &["net", "fs", "process", "thread", "env", "io"];
const CORE_FORBIDDEN_IDENTS: &[&str] = &[
    "SystemTime",
    "Instant",
    "now_utc",
    "now_local",
    "UNIX_EPOCH",
];

/// The drainwatch crate with the core (crates/evidence, re-exported as `evidence`) in place.
fn the_crate() -> Crate {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut c = Crate::read(&root.join("src"));
    c.mount(
        &root.join("crates/evidence/src"),
        "evidence",
        "crates/evidence/src",
    );
    c
}

fn layer_of(top: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| l.contains(&top))
        .unwrap_or_else(|| panic!("top-level module {top} is in no layer of LAYERS"))
}

/// The violations of the core's purity in `m` (one line each).
fn impurities(m: &Module) -> Vec<String> {
    let mut v = Vec::new();
    for p in &m.paths {
        let segs: Vec<&str> = p.segments.iter().map(String::as_str).collect();
        let first = segs[0];
        let bad = if CORE_FORBIDDEN_CRATES.contains(&first) {
            Some(format!("names the crate {first}"))
        } else if first == "std" && segs.get(1).is_some_and(|s| CORE_FORBIDDEN_STD.contains(s)) {
            Some(format!("names std::{}", segs[1]))
        } else if first == "crate" && segs.get(1).is_some_and(|s| *s != "evidence") {
            Some(format!("imports crate::{}", segs[1]))
        } else {
            segs.iter()
                .find(|s| CORE_FORBIDDEN_IDENTS.contains(s))
                .map(|s| format!("names {s}"))
        };
        if let Some(why) = bad {
            v.push(format!(
                "{}:{}: {why} ({})",
                m.file,
                p.line,
                segs.join("::")
            ));
        }
    }
    v
}

#[test]
fn the_core_imports_nothing_of_the_edges_and_reads_no_clock() {
    let c = the_crate();
    let core: Vec<&Module> = c
        .modules
        .values()
        .filter(|m| m.path.first().is_some_and(|p| p == "evidence"))
        .collect();
    assert!(
        core.len() >= 40,
        "expected the core's files, found {}",
        core.len()
    );
    for f in [
        "attach::build",
        "attach::render",
        "flow",
        "classify",
        "assemble",
        "plan",
    ] {
        assert!(
            core.iter()
                .any(|m| m.path.join("::") == format!("evidence::{f}")),
            "the purity check no longer sees evidence::{f}"
        );
    }
    let bad: Vec<String> = core.iter().flat_map(|m| impurities(m)).collect();
    assert!(
        bad.is_empty(),
        "the evidence core must stay pure:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_purity_check_sees_through_strings_comments_and_macros() {
    let m = Module::parse(
        &["evidence".into(), "x".into()],
        "evidence/x.rs",
        r#"
        // tokio::spawn in a comment does not count
        fn f() -> String {
            let url = "http://example"; let t = std::time::Instant::now();
            format!("{url}{:?}", std::env::var("X"))
        }
        fn g() { let _ = crate::k8s::DEFAULT_IMAGE; let _ = time::OffsetDateTime::now_utc(); }
        "#,
    );
    let bad = impurities(&m);
    assert_eq!(bad.len(), 4, "{bad:#?}");
    for want in [
        "names Instant",
        "names std::env",
        "imports crate::k8s",
        "names now_utc",
    ] {
        assert!(
            bad.iter().any(|b| b.contains(want)),
            "{want} not found in {bad:#?}"
        );
    }
}

/// Top-level edges (from, to) with the file and line of one import that makes each.
fn top_edges(c: &Crate) -> BTreeMap<(String, String), String> {
    let mut edges = BTreeMap::new();
    for (from, to, at) in c.edges() {
        if from[0] != to[0] {
            edges.entry((from[0].clone(), to[0].clone())).or_insert(at);
        }
    }
    edges
}

#[test]
fn top_level_modules_import_downward_only() {
    let c = the_crate();
    let edges = top_edges(&c);
    assert!(edges.len() >= 20, "too few edges found: {edges:?}");
    // The graph itself, for `cargo test --test architecture -- --nocapture`.
    for ((from, to), at) in &edges {
        println!("{from} -> {to} (e.g. {at})");
    }
    let mut bad = Vec::new();
    for ((from, to), at) in &edges {
        let (lf, lt) = (layer_of(from), layer_of(to));
        let listed = SAME_LAYER.iter().any(|(a, b, _)| a == from && b == to);
        if lf > lt || (lf == lt && !listed) {
            bad.push(format!("{from} -> {to} ({at})"));
        }
    }
    assert!(
        bad.is_empty(),
        "imports against the layers (ARCHITECTURE.md):\n{}",
        bad.join("\n")
    );
    // Every listed same-layer edge is real, so the list cannot rot into a blanket permission.
    for (a, b, why) in SAME_LAYER {
        assert!(
            edges.contains_key(&(a.to_string(), b.to_string())),
            "SAME_LAYER lists {a} -> {b} ({why}), which no longer exists: remove it"
        );
        assert_eq!(
            layer_of(a),
            layer_of(b),
            "{a} -> {b} is not inside one layer"
        );
    }
}

#[test]
fn no_cycle_between_the_children_of_any_module() {
    let c = the_crate();
    assert!(c.modules.len() >= 120, "found {} files", c.modules.len());
    let cycles = c.sibling_cycles();
    assert!(
        cycles.is_empty(),
        "import cycles between sibling modules:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    let mut c = Crate::default();
    for (path, src) in [
        (vec!["a", "x"], "use super::y::Y; pub struct X;"),
        (vec!["a", "y"], "pub struct Y(crate::a::x::X);"),
        (vec!["a", "z"], "use super::x::X;"),
        (vec!["a"], "mod x; mod y; mod z; use x::X;"),
    ] {
        let path: Vec<String> = path.into_iter().map(String::from).collect();
        let m = Module::parse(&path, &path.join("/"), src);
        c.modules.insert(path, m);
    }
    let cycles = c.sibling_cycles();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(
        cycles[0].contains("a::x") && cycles[0].contains("a::y"),
        "{cycles:?}"
    );
    let tops: BTreeSet<_> = c
        .edges()
        .map(|(f, t, _)| (f.join("::"), t.join("::")))
        .collect();
    assert!(tops.contains(&("a::z".into(), "a::x".into())), "{tops:?}");
    // The parent's own use of a child is inside the module's face, not a sibling edge.
    assert!(tops.contains(&("a".into(), "a::x".into())), "{tops:?}");
}

/// One output voice: what the user reads on stderr goes through `console`, so `--quiet` and
/// the colour rule hold for every line. A machine-read stderr line says so on the line above.
#[test]
fn stderr_is_written_only_by_the_console() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = common::rust_files(&src);
    assert!(files.len() > 100, "{} files under src", files.len());
    let mut bare = Vec::new();
    for f in files {
        if f.ends_with("console.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            let machine_read = i > 0 && lines[i - 1].contains("Machine-read");
            if l.contains("eprintln!") && !machine_read {
                bare.push(format!("{}:{}: {}", f.display(), i + 1, l.trim()));
            }
        }
    }
    assert!(
        bare.is_empty(),
        "bare eprintln! outside console:\n{}",
        bare.join("\n")
    );
}
