//! Every committed `events.jsonl` under `results/` replays, with this build's `drainwatch
//! report`, to the `report.json` beside it — by one rule that later schema versions extend:
//! every key the committed report has exists in the new one with an equal value (objects: subset
//! by key, arrays: same length and element-wise, scalars: equal); new keys may be added and the
//! top-level `schema_version` may differ. A result that a later change made wrong on purpose
//! carries a `SUPERSEDED` file (in its directory or a parent below `results/`) whose first word
//! is the commit that changed it; only those are skipped. The rule is in `results/README.md`.
//! Every replayed report must also hold `findings` equal to those computed from it without
//! them (schema 3.1): findings are a fixed point of replay.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use drainwatch::evidence::findings::findings;
use drainwatch::evidence::report::Report;
use serde_json::Value;

/// How many replay units (directories with an events.jsonl) results/ held when this test was
/// written, and how many of them were not superseded: a floor, so the test cannot pass by
/// finding nothing. Lower it only when results are removed or superseded on purpose.
const UNITS_AT_LEAST: usize = 101;
const REPLAYED_AT_LEAST: usize = 100;

/// Differing paths shown per directory in a failure.
const SHOWN: usize = 10;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn results() -> PathBuf {
    repo().join("results")
}

/// A path relative to the repository, for messages.
fn shown(p: &Path) -> String {
    p.strip_prefix(repo()).unwrap_or(p).display().to_string()
}

/// Every directory below `root` (itself included), sorted, depth first.
fn dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_path_buf()];
    let mut children: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    children.sort();
    for c in children {
        out.extend(dirs(&c));
    }
    out
}

/// The directories a report was built from: each holds the trial's events.jsonl (a multi-trial
/// run keeps one per `trial-NNN/`, beside that trial's report.json), or, for a large one,
/// events.jsonl.zst.
fn units() -> Vec<PathBuf> {
    dirs(&results())
        .into_iter()
        .filter(|d| events(d).is_some())
        .collect()
}

/// The unit's recorded events: events.jsonl, or events.jsonl.zst.
fn events(unit: &Path) -> Option<PathBuf> {
    ["events.jsonl", "events.jsonl.zst"]
        .iter()
        .map(|f| unit.join(f))
        .find(|p| p.is_file())
}

/// The SUPERSEDED file covering `unit`: in it or in a parent below results/.
fn superseded(unit: &Path) -> Option<PathBuf> {
    let root = results();
    unit.ancestors()
        .take_while(|d| *d != root && d.starts_with(&root))
        .map(|d| d.join("SUPERSEDED"))
        .find(|f| f.is_file())
}

/// Whether git can say which commits exist: a full (not shallow) clone with git installed.
fn git_knows_history() -> bool {
    Command::new("git")
        .arg("-C")
        .arg(repo())
        .args(["rev-parse", "--is-shallow-repository"])
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "false")
}

/// The commit a SUPERSEDED file names (its first word), or why it names none.
fn named_commit(file: &Path, check_git: bool) -> Result<String, String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let word = text.split_whitespace().next().unwrap_or("").to_string();
    let hex = (7..=40).contains(&word.len()) && word.bytes().all(|b| b.is_ascii_hexdigit());
    if !hex {
        return Err(format!(
            "first word {word:?} is not a commit hash (7-40 hex digits)"
        ));
    }
    if check_git {
        let known = Command::new("git")
            .arg("-C")
            .arg(repo())
            .args(["cat-file", "-e", &format!("{word}^{{commit}}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !known {
            return Err(format!("{word} is not a commit git knows"));
        }
    }
    Ok(word)
}

/// One place where the new report breaks the rule.
#[derive(Debug, PartialEq)]
struct Difference {
    path: String,
    committed: String,
    new: String,
}

fn brief(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(100) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// Appends every place below `path` where `new` does not hold what `committed` holds.
fn differences(committed: &Value, new: &Value, path: &str, out: &mut Vec<Difference>) {
    let differ = |out: &mut Vec<Difference>, committed: String, new: String| {
        out.push(Difference {
            path: if path.is_empty() {
                "/".into()
            } else {
                path.into()
            },
            committed,
            new,
        })
    };
    match (committed, new) {
        (Value::Object(c), Value::Object(n)) => {
            for (key, cv) in c {
                if path.is_empty() && key == "schema_version" {
                    continue;
                }
                let at = format!("{path}/{key}");
                match n.get(key) {
                    Some(nv) => differences(cv, nv, &at, out),
                    None => out.push(Difference {
                        path: at,
                        committed: brief(cv),
                        new: "<absent>".into(),
                    }),
                }
            }
        }
        (Value::Array(c), Value::Array(n)) if c.len() != n.len() => differ(
            out,
            format!("array of {}", c.len()),
            format!("array of {}", n.len()),
        ),
        (Value::Array(c), Value::Array(n)) => {
            for (i, (cv, nv)) in c.iter().zip(n).enumerate() {
                differences(cv, nv, &format!("{path}/{i}"), out);
            }
        }
        (c, n) if c == n => {}
        (c, n) => differ(out, brief(c), brief(n)),
    }
}

/// The report this build's `drainwatch report` makes of `unit/events.jsonl`, or why none.
fn replay(unit: &Path) -> Result<Value, String> {
    let out_dir = common::temp_dir("replay-results");
    let out = common::run(&[
        "report",
        "--events",
        events(unit).unwrap().to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    if !out.status.success() {
        return Err(format!(
            "drainwatch report failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = std::fs::read_to_string(out_dir.join("report.json")).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&out_dir);
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// The findings stored in a replayed report must be those computed from it without them:
/// replay is a fixed point of findings too. None when they are.
fn findings_are_a_fixed_point(new: &Value) -> Option<Difference> {
    let mut report: Report = match serde_json::from_value(new.clone()) {
        Ok(r) => r,
        Err(e) => {
            return Some(Difference {
                path: "/".into(),
                committed: "a report".into(),
                new: format!("not a Report: {e}"),
            });
        }
    };
    let stored = report.findings.take();
    let computed = findings(&report);
    match stored {
        Some(s) if s == computed => None,
        s => Some(Difference {
            path: "/findings".into(),
            committed: format!("recomputed {}", brief(&serde_json::json!(computed))),
            new: format!("stored {}", brief(&serde_json::json!(s))),
        }),
    }
}

/// What is wrong with one unit's replay; empty when it holds.
fn check(unit: &Path) -> Vec<String> {
    let committed = unit.join("report.json");
    if !committed.is_file() {
        return vec!["no report.json beside events.jsonl".into()];
    }
    let new = match replay(unit) {
        Ok(v) => v,
        Err(e) => return vec![e],
    };
    let mut found = Vec::new();
    differences(&common::json(&committed), &new, "", &mut found);
    if let Some(problem) = findings_are_a_fixed_point(&new) {
        found.push(problem);
    }
    let total = found.len();
    let mut lines: Vec<String> = found
        .into_iter()
        .take(SHOWN)
        .map(|d| format!("{}: committed {}, new {}", d.path, d.committed, d.new))
        .collect();
    if total > SHOWN {
        lines.push(format!("… {} more differing paths", total - SHOWN));
    }
    lines
}

#[test]
fn every_committed_events_file_replays_to_its_committed_report() {
    let units = units();
    println!(
        "{} directories under results/ hold an events.jsonl",
        units.len()
    );
    assert!(
        units.len() >= UNITS_AT_LEAST,
        "found {} events.jsonl under results/, expected at least {UNITS_AT_LEAST}",
        units.len()
    );

    let mut replayed = 0;
    let mut failures = Vec::new();
    for unit in &units {
        if let Some(file) = superseded(unit) {
            println!("skipped {} (superseded: {})", shown(unit), shown(&file));
            continue;
        }
        replayed += 1;
        let problems = check(unit);
        if !problems.is_empty() {
            failures.push(format!("{}:\n    {}", shown(unit), problems.join("\n    ")));
        }
    }
    for d in dirs(&results()) {
        if d.join("report.json").is_file() && events(&d).is_none() {
            println!(
                "not replayable (report.json without events.jsonl): {}",
                shown(&d)
            );
        }
    }
    println!("replayed {replayed} of {} directories", units.len());

    assert!(
        failures.is_empty(),
        "{} of {replayed} replayed results no longer hold their committed report.json \
         (regenerate it or add a SUPERSEDED file naming the commit that changed it; see \
         results/README.md):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        replayed >= REPLAYED_AT_LEAST,
        "replayed {replayed} directories, expected at least {REPLAYED_AT_LEAST}"
    );
}

#[test]
fn every_superseded_file_names_a_commit_and_covers_a_result() {
    let files: Vec<PathBuf> = dirs(&results())
        .into_iter()
        .map(|d| d.join("SUPERSEDED"))
        .filter(|f| f.is_file())
        .collect();
    let units = units();
    let check_git = git_knows_history();
    if !check_git {
        println!("git history unavailable (no git or a shallow clone): hash format checked only");
    }
    println!("{} SUPERSEDED files under results/", files.len());

    let mut problems = Vec::new();
    for f in &files {
        let dir = f.parent().unwrap();
        if dir == results() {
            problems.push(format!("{}: would supersede every result", shown(f)));
        }
        if !units.iter().any(|u| u.starts_with(dir)) {
            problems.push(format!("{}: covers no events.jsonl", shown(f)));
        }
        match named_commit(f, check_git) {
            Ok(commit) => println!("{} names {commit}", shown(f)),
            Err(e) => problems.push(format!("{}: {e}", shown(f))),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_rule_accepts_added_keys_and_another_schema_version() {
    let committed = serde_json::json!({"schema_version": "1.0", "a": {"b": [1, {"c": null}]}});
    let new = serde_json::json!({
        "schema_version": "1.2",
        "a": {"b": [1, {"c": null, "d": 2}], "e": true},
        "f": []
    });
    let mut found = Vec::new();
    differences(&committed, &new, "", &mut found);
    assert_eq!(found, vec![]);
}

#[test]
fn the_rule_names_each_changed_value_absent_key_and_array_length() {
    let committed = serde_json::json!({
        "a": {"n": 13, "s": "x", "gone": null},
        "list": [1, 2],
        "rows": [{"k": 1}],
        "inner": {"schema_version": "1.0"}
    });
    let new = serde_json::json!({
        "a": {"n": 11, "s": "x"},
        "list": [1],
        "rows": [{"k": "1"}],
        "inner": {"schema_version": "1.2"}
    });
    let mut found = Vec::new();
    differences(&committed, &new, "", &mut found);
    // Key order depends on serde_json's features; the rule does not.
    found.sort_by(|x, y| x.path.cmp(&y.path));
    let paths: Vec<&str> = found.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/a/gone",
            "/a/n",
            "/inner/schema_version",
            "/list",
            "/rows/0/k"
        ]
    );
    assert_eq!(
        found[1],
        Difference {
            path: "/a/n".into(),
            committed: "13".into(),
            new: "11".into()
        }
    );
    assert_eq!(found[0].new, "<absent>");
    assert_eq!(
        (found[3].committed.as_str(), found[3].new.as_str()),
        ("array of 2", "array of 1")
    );
}
