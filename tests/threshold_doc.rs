//! docs/ci.md's threshold table is the code's: the rows between its `BEGIN generated:
//! thresholds` and `END generated: thresholds` markers are exactly what
//! `threshold::reference::markdown_table` renders from the closed set of threshold kinds, and
//! every threshold name the parser knows appears in them. A difference fails with both texts;
//! `make docs` (`DRAINWATCH_BLESS=1 cargo test --test threshold_doc`) rewrites the table.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

use std::path::Path;

use drainwatch::evidence::classify::Outcome;
use drainwatch::evidence::policy::threshold::reference::{Kind, markdown_table};
use drainwatch::evidence::policy::threshold::{Interval, predicate_names};

const BEGIN: &str = "<!-- BEGIN generated: thresholds";
const END: &str = "<!-- END generated: thresholds -->";

/// The text between the markers (after the BEGIN line, before the END line), and the document
/// with `table` put there instead.
fn splice(doc: &str, table: &str) -> (String, String) {
    let begin = doc.find(BEGIN).expect("docs/ci.md has the BEGIN marker");
    let body = begin
        + doc[begin..]
            .find('\n')
            .expect("the BEGIN marker ends its line")
        + 1;
    let end = doc.find(END).expect("docs/ci.md has the END marker");
    assert!(end >= body, "END comes after BEGIN");
    let current = doc[body..end].to_string();
    let mut rewritten = doc[..body].to_string();
    rewritten.push_str(table);
    rewritten.push_str(&doc[end..]);
    (current, rewritten)
}

/// Lines that differ, numbered, for a failure message that points at the row.
fn diff(current: &str, generated: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (current.lines().collect(), generated.lines().collect());
    let mut out = String::new();
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i), b.get(i));
        if x != y {
            out.push_str(&format!(
                "row {i}:\n  docs: {}\n  code: {}\n",
                x.unwrap_or(&"(none)"),
                y.unwrap_or(&"(none)")
            ));
        }
    }
    out
}

#[test]
fn the_threshold_table_in_docs_ci_is_generated_from_the_code() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ci.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let table = markdown_table();
    let (current, rewritten) = splice(&doc, &table);
    if std::env::var("DRAINWATCH_BLESS").is_ok_and(|v| v == "1") {
        if rewritten != doc {
            std::fs::write(&path, &rewritten).unwrap();
            eprintln!("rewrote the threshold table of {}", path.display());
        }
        return;
    }
    assert!(
        current == table,
        "docs/ci.md's threshold table differs from the code (rewrite it with `make docs`, i.e. DRAINWATCH_BLESS=1 cargo test --test threshold_doc):\n{}",
        diff(&current, &table)
    );
}

#[test]
fn every_threshold_name_the_code_knows_is_in_the_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ci.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (current, _) = splice(&doc, "");
    let predicates: Vec<&str> = predicate_names().collect();
    assert_eq!(predicates.len(), 9, "{predicates:?}");
    for name in &predicates {
        assert!(
            current.contains(&format!("| `{name}` |")),
            "docs/ci.md's threshold table has no row for {name}"
        );
    }
    assert_eq!(
        current.lines().count(),
        2 + Kind::ALL.len(),
        "a header and one row per kind"
    );
    // The words the forms take are listed right below the table.
    let below = &doc[doc.find(END).unwrap()..];
    for o in Outcome::ALL {
        assert!(below.contains(&format!("`{}`", o.as_str())), "{o}");
    }
    for i in Interval::ALL {
        assert!(
            below.contains(&format!("`{}`", i.as_str())),
            "{}",
            i.as_str()
        );
    }
}

#[test]
fn splice_puts_the_table_between_the_markers_only() {
    let doc = format!("a\n{BEGIN} (x) -->\nold\n{END}\nb\n");
    let (current, rewritten) = splice(&doc, "new\n");
    assert_eq!(current, "old\n");
    assert_eq!(rewritten, format!("a\n{BEGIN} (x) -->\nnew\n{END}\nb\n"));
}
