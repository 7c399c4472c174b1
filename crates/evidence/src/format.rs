//! Cell and column formatting shared by the text renderers (the table, its ATTACH section and
//! the gate's JUnit output). A leaf: it imports nothing of the core, so every renderer can use
//! it without the renderers importing each other.

use std::fmt::{Display, Write};

/// An error and its sources, `: `-joined, for messages that must name the root cause. Pure:
/// it only reads the error's Display and source chain.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// Columns padded to the widest cell plus two, as Go's tabwriter with padding 2 does.
pub fn tabulate(rows: &[Vec<String>], indent: &str) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; cols];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let mut line = String::from(indent);
        for (i, c) in r.iter().enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                let pad = widths[i] + 2 - c.chars().count();
                line.push_str(c);
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Wraps text at `width` columns, each line prefixed by `indent`.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            let _ = writeln!(out, "{indent}{line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        let _ = writeln!(out, "{indent}{line}");
    }
    out
}

/// A header row from its column names.
pub fn header(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// A value, or `not-measured` when there is none.
pub fn or_nm<T: Display>(v: Option<T>) -> String {
    v.map_or_else(|| "not-measured".to_string(), |v| v.to_string())
}

/// Milliseconds with their unit, or `not-measured`.
pub fn ms<T: Display>(v: Option<T>) -> String {
    v.map_or_else(|| "not-measured".to_string(), |n| format!("{n} ms"))
}

/// A closed-set value as its serde (kebab-case) name; empty if it is not a string.
pub fn kebab<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tabulate_pads_like_tabwriter() {
        let rows = vec![
            vec!["ID".to_string(), "PROTO".into(), "X".into()],
            vec!["tcp-0001".to_string(), "tcp".into(), "".into()],
        ];
        assert_eq!(
            tabulate(&rows, "  "),
            "  ID        PROTO  X\n  tcp-0001  tcp\n"
        );
    }

    #[test]
    fn wrap_respects_width() {
        let w = wrap("aaa bbb ccc", 7, "> ");
        assert_eq!(w, "> aaa bbb\n> ccc\n");
    }

    #[test]
    fn absent_values_are_not_measured() {
        assert_eq!(ms(None::<i64>), "not-measured");
        assert_eq!(ms(Some(1.5)), "1.5 ms");
        assert_eq!(or_nm(None::<&str>), "not-measured");
        assert_eq!(or_nm(Some(3)), "3");
    }
}
