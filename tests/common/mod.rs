//! Helpers shared by the integration tests: the real binary, ports for probes (`ports`), the
//! schema, and a run in the background.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
// Test support: a failed setup step should panic with its error, which is what unwrap does.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

mod cluster;
mod ports;
mod process;
pub mod wait;
// Every test binary compiles this module whole but uses only some of it.
#[allow(unused_imports)]
pub use cluster::{cleanup_run, cluster, delete_identity, e2e_image, kubectl};
#[allow(unused_imports)]
pub use ports::free_ports;
#[allow(unused_imports)]
pub use process::{Logged, Reaper, spawn_cmd_until_trigger, spawn_until_trigger, wait_for_trigger};

/// The drainwatch binary cargo built for these tests.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_drainwatch"))
}

/// The example binary `name`, built by `cargo build --example` once per test process. Always
/// built, never only when missing: `cargo test` compiles the examples without refreshing
/// `target/debug/examples/NAME`, so a binary found there may be from an older checkout (cargo
/// makes the build a no-op when it is current).
pub fn example_bin(name: &str) -> PathBuf {
    // One cell per name: a test that needs an example already built never waits behind another
    // test's build of a different one (which waits for cargo's lock on the target dir, minutes
    // while another build holds it; a service started that late once outlived a client's
    // observation window).
    type Cells = std::collections::BTreeMap<String, Arc<OnceLock<()>>>;
    static BUILT: Mutex<Cells> = Mutex::new(Cells::new());
    let cell = BUILT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(name.to_string())
        .or_default()
        .clone();
    cell.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(cargo)
            .args(["build", "--quiet", "--example", name])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(st.success(), "building example {name} failed");
    });
    let p = bin().parent().unwrap().join("examples").join(name);
    assert!(p.exists(), "{} was not built", p.display());
    p
}

/// A fresh temporary directory under the cargo target dir, unique within this test process.
pub fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicU16 = AtomicU16::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Copies the directory tree `from` into `to` (created when missing).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// Runs the binary with `args`; returns its output.
pub fn run(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().unwrap()
}

/// Parses a JSON file.
pub fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The hand-written report schema.
pub fn schema() -> serde_json::Value {
    json(&Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/report.schema.json"))
}

/// Panics with every schema violation when `report` does not validate.
pub fn assert_valid_report(report: &serde_json::Value) {
    let schema = schema();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(report)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "report violates the schema:\n{}",
        errors.join("\n")
    );
}

/// Whether `value` validates against the report schema.
pub fn report_is_valid(value: &serde_json::Value) -> bool {
    let schema = schema();
    jsonschema::validator_for(&schema).unwrap().is_valid(value)
}

/// Replays `dir/events.jsonl` with `drainwatch report` and asserts that report.json and the
/// printed table come out byte for byte as the live run wrote and printed them.
pub fn assert_replay_identical(dir: &Path, live_table: Option<&str>) {
    let replay_dir = dir.join("replay");
    let out = run(&[
        "report",
        "--events",
        dir.join("events.jsonl").to_str().unwrap(),
        "--out",
        replay_dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "replay failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let live = std::fs::read(dir.join("report.json")).unwrap();
    let again = std::fs::read(replay_dir.join("report.json")).unwrap();
    assert!(
        live == again,
        "replayed report.json differs from the live one in {}",
        dir.display()
    );
    if let Some(t) = live_table {
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            t.trim(),
            "replayed table differs"
        );
    }
}

/// The flows of a report.
pub fn flows(report: &serde_json::Value) -> Vec<serde_json::Value> {
    report["trial"]["flows"].as_array().unwrap().clone()
}

/// Flows of one protocol.
pub fn flows_of(report: &serde_json::Value, proto: &str) -> Vec<serde_json::Value> {
    flows(report)
        .into_iter()
        .filter(|f| f["proto"] == proto)
        .collect()
}

/// A child process killed when the test ends, pass or panic, so no probe outlives its test.
pub struct Reaped(pub std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every `.rs` file below `dir`, for the tests that read the sources.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}
