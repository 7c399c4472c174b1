//! Every event name in `src/` goes through the registry, `evidence::event::EventName`.
//!
//! The constructors of event lines take an `EventName`, so the compiler already rejects a
//! producer that passes a bare string. What it cannot see is a name written as a string where
//! no constructor is involved: compared against `as_str()`, looked up in raw JSON, or parsed
//! back with `EventName::parse`. This test reads the sources and fails on any string literal
//! that spells a registered name outside the registry itself.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use drainwatch::evidence::event::EventName;

const REGISTRY: &str = "crates/evidence/src/event/name.rs";

/// The contents of every ordinary string literal on `line` (not raw strings: those hold JSON
/// or YAML documents, where a name is data rather than a name the code matches on).
fn literals(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = line.char_indices().peekable();
    let mut prev = ' ';
    while let Some((_, c)) = chars.next() {
        if c == '/' && chars.peek().is_some_and(|&(_, n)| n == '/') {
            break;
        }
        if c == '\'' {
            // A char literal ('"') or a lifetime; skip a quoted char.
            let rest: String = chars.clone().take(3).map(|(_, c)| c).collect();
            if rest.starts_with("\"'") || rest.starts_with("\\\"'") {
                for _ in 0..rest.find('\'').unwrap_or(0) + 1 {
                    chars.next();
                }
            }
            prev = c;
            continue;
        }
        if c == '"' && (prev == 'r' || prev == '#') {
            break;
        }
        if c == '"' {
            let mut s = String::new();
            while let Some((_, c)) = chars.next() {
                match c {
                    '\\' => {
                        chars.next();
                    }
                    '"' => break,
                    c => s.push(c),
                }
            }
            out.push(s);
            prev = '"';
            continue;
        }
        prev = c;
    }
    out
}

#[test]
fn no_source_file_spells_a_registered_name_as_a_string() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let names: BTreeSet<&str> = EventName::ALL.iter().map(EventName::as_str).collect();
    assert!(names.len() > 100, "the registry lists every event name");
    let files = common::rust_files(&root.join("src"));
    assert!(
        files.len() > 100,
        "found the sources under {}",
        root.display()
    );
    let mut found = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(root).unwrap().to_string_lossy().to_string();
        if rel == REGISTRY {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let mut in_raw = false;
        for (n, line) in text.lines().enumerate() {
            // Raw strings (`r#"…"#`) may span lines; their contents are documents, not code.
            let opens = line.matches("r#\"").count();
            let closes = line.matches("\"#").count();
            if in_raw || opens > 0 {
                in_raw = (in_raw || opens > closes) && !(in_raw && closes > opens);
                continue;
            }
            for lit in literals(line) {
                if names.contains(lit.as_str()) {
                    found.push(format!("{rel}:{}: \"{lit}\"", n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "event names written as strings instead of EventName variants:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scanner_sees_the_literals_it_must_catch() {
    assert_eq!(
        literals(r#"rec.line("flow_eof", at); // "flow_gap""#),
        ["flow_eof"]
    );
    assert_eq!(
        literals(r#"if c == '"' { f("trial_started", "x\"y") }"#),
        ["trial_started", "xy"]
    );
    assert!(literals(r##"let j = r#"{"event":"flow_eof"}"#;"##).is_empty());
}
