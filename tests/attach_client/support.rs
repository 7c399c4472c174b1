//! The attach client tests' harness: the example services as child processes, the client
//! with its event stream, and what a finished run wrote.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use crate::common::*;

/// A running example service and the port it listens on.
pub struct Service {
    child: Reaped,
}

impl Service {
    /// Starts example `name` as pod `pod` on `port` (0: a free one) and waits for its
    /// `listening` line.
    pub fn start(name: &str, pod: &str, port: u16, drain_delay: u32) -> (Self, u16) {
        let mut child = Command::new(example_bin(name))
            .env("PORT", port.to_string())
            .env("POD_NAME", pod)
            .env("DRAIN_DELAY", drain_delay.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port: u16 = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .parse()
            .unwrap();
        (
            Self {
                child: Reaped(child),
            },
            port,
        )
    }

    pub fn sigterm(&self) {
        kill(Pid::from_raw(self.child.0.id() as i32), Signal::SIGTERM).unwrap();
    }

    /// Waits for the exit; its code.
    pub fn wait(&mut self, within: Duration) -> Option<i32> {
        let child = &mut self.child.0;
        wait::until_every(
            "the service exits",
            within,
            Duration::from_millis(20),
            || child.try_wait().unwrap(),
        )
        .code()
    }
}

pub fn client(port: u16, protocol: &str, flows: u32, duration: &str, dir: &Path) -> Child {
    client_with(port, protocol, flows, duration, dir, &["--dial-rate", "20"])
}

/// The attach client on 127.0.0.1:`port`; `extra` adds flags (the prober's rate among them).
pub fn client_with(
    port: u16,
    protocol: &str,
    flows: u32,
    duration: &str,
    dir: &Path,
    extra: &[&str],
) -> Child {
    Command::new(bin())
        .args([
            "client",
            "--attach",
            "--protocol",
            protocol,
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--tcp-flows",
            &flows.to_string(),
            "--interval",
            "100ms",
            "--request-timeout",
            "1s",
            "--duration",
            duration,
            "--events",
            dir.join("stream.jsonl").to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until the client's event stream holds `n` lines that contain every one of `needles`.
#[track_caller]
pub fn wait_for_events(dir: &Path, needles: &[&str], n: usize) {
    let stream = dir.join("stream.jsonl");
    let what = format!("the client records {n} lines with {needles:?}");
    wait::until_every(
        wait::with_file(&what, &stream),
        Duration::from_secs(20),
        Duration::from_millis(20),
        || {
            let text = std::fs::read_to_string(&stream).unwrap_or_default();
            let hits = text
                .lines()
                .filter(|l| needles.iter().all(|x| l.contains(x)))
                .count();
            (hits >= n).then_some(())
        },
    );
}

/// Waits for the client; its report, after checking the exit code, the schema and the replay.
pub fn finish(c: Child, dir: &Path) -> Value {
    let out = c.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&dir.join("report.json"));
    assert_valid_report(&report);
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(table.contains("ATTACH ("), "{table}");
    assert_replay_identical(dir, Some(&table));
    // The streamed events are the recorded ones, with a line counter.
    let streamed = std::fs::read_to_string(dir.join("stream.jsonl")).unwrap();
    let recorded = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert_eq!(streamed.lines().count(), recorded.lines().count());
    report
}

pub fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// The recorded lines of `event` in a finished client's `events.jsonl`.
pub fn recorded(dir: &Path, event: &str) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["event"] == event)
        .collect()
}

/// CLOCK_MONOTONIC, the clock the client stamps `mono_ns` with.
pub fn mono_ns() -> i64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
    ts.tv_sec() * 1_000_000_000 + ts.tv_nsec()
}
