//! Generated parts of the docs: the text between a `<!-- BEGIN generated: NAME … -->` line and
//! its `<!-- END generated: NAME -->` is what the code renders. A test compares the two and fails
//! with the rows that differ; with `DRAINWATCH_BLESS=1` (`make docs`) it rewrites the part.

use std::path::Path;

/// The text between the markers named `name` (after the BEGIN line, before the END line), and
/// the document with `part` put there instead.
pub fn splice(doc: &str, name: &str, part: &str) -> (String, String) {
    let begin_marker = format!("<!-- BEGIN generated: {name}");
    let end_marker = format!("<!-- END generated: {name} -->");
    let begin = doc
        .find(&begin_marker)
        .unwrap_or_else(|| panic!("no {begin_marker} marker"));
    let body = begin
        + doc[begin..]
            .find('\n')
            .expect("the BEGIN marker ends its line")
        + 1;
    let end = doc
        .find(&end_marker)
        .unwrap_or_else(|| panic!("no {end_marker} marker"));
    assert!(end >= body, "END comes after BEGIN");
    let current = doc[body..end].to_string();
    let mut rewritten = doc[..body].to_string();
    rewritten.push_str(part);
    rewritten.push_str(&doc[end..]);
    (current, rewritten)
}

/// Lines that differ, numbered, for a failure message that points at the row.
pub fn diff(current: &str, generated: &str) -> String {
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

/// The part `name` of the document at `path` is `part`; rewritten instead under
/// DRAINWATCH_BLESS=1. `bless` names the command that rewrites it, for the failure message.
pub fn holds(path: &Path, name: &str, part: &str, bless: &str) {
    let doc = std::fs::read_to_string(path).unwrap();
    let (current, rewritten) = splice(&doc, name, part);
    if std::env::var("DRAINWATCH_BLESS").is_ok_and(|v| v == "1") {
        if rewritten != doc {
            std::fs::write(path, &rewritten).unwrap();
            eprintln!("rewrote the part {name} of {}", path.display());
        }
        return;
    }
    assert!(
        current == part,
        "{}'s part {name} differs from what the code renders (rewrite it with `{bless}`):\n{}",
        path.display(),
        diff(&current, part)
    );
}
