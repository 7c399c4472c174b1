//! docs/bounds.md stays true: every constant its tables name exists, as a `const`, in the
//! file the same row names. A renamed or removed bound fails here instead of leaving the
//! table to rot.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

use std::path::Path;

/// (constant, file) of every table row that names a constant.
fn rows(doc: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in doc.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | what | bound | `CONST` | `file` | at the bound |
        if cells.len() < 6 {
            continue;
        }
        let (c, f) = (cells[3], cells[4]);
        let tick = |s: &str| {
            s.strip_prefix('`')
                .and_then(|s| s.strip_suffix('`'))
                .map(str::to_string)
        };
        if let (Some(c), Some(f)) = (tick(c), tick(f)) {
            out.push((c, f));
        }
    }
    out
}

#[test]
fn every_constant_in_docs_bounds_exists_where_the_table_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/bounds.md")).unwrap();
    let rows = rows(&doc);
    assert!(
        rows.len() >= 25,
        "the tables name their constants: {rows:?}"
    );
    for (name, file) in &rows {
        let text = std::fs::read_to_string(root.join(file))
            .unwrap_or_else(|e| panic!("docs/bounds.md names {file}: {e}"));
        assert!(
            text.contains(&format!("const {name}:")),
            "docs/bounds.md says {name} is a constant in {file}; it is not there"
        );
    }
}

#[test]
fn the_row_reader_sees_constants_and_skips_the_rest() {
    let doc = "| What | Bound | Constant | File | At |\n|---|---|---|---|---|\n| a | 1 | `X` | `src/x.rs` | y |\n| b | none | — | — | z |";
    assert_eq!(rows(doc), vec![("X".to_string(), "src/x.rs".to_string())]);
}
