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

#[path = "common/generated.rs"]
mod generated;

use generated::splice;

const NAME: &str = "thresholds";
const END: &str = "<!-- END generated: thresholds -->";

#[test]
fn the_threshold_table_in_docs_ci_is_generated_from_the_code() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ci.md");
    generated::holds(
        &path,
        NAME,
        &markdown_table(),
        "make docs, i.e. DRAINWATCH_BLESS=1 cargo test --test threshold_doc",
    );
}

#[test]
fn every_threshold_name_the_code_knows_is_in_the_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ci.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (current, _) = splice(&doc, NAME, "");
    let predicates: Vec<&str> = predicate_names().collect();
    assert_eq!(predicates.len(), 10, "{predicates:?}");
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
    let begin = "<!-- BEGIN generated: thresholds";
    let doc = format!("a\n{begin} (x) -->\nold\n{END}\nb\n");
    let (current, rewritten) = splice(&doc, NAME, "new\n");
    assert_eq!(current, "old\n");
    assert_eq!(rewritten, format!("a\n{begin} (x) -->\nnew\n{END}\nb\n"));
}
