//! `drainwatch client --attach` against the example services as real processes on loopback,
//! with a real SIGTERM to the server: a good shutdown fails nothing, a bad one is recorded with
//! its mechanisms.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

/// The example binary `name`, built on demand when the test was run without the examples.
fn example(name: &str) -> PathBuf {
    let p = bin().parent().unwrap().join("examples").join(name);
    if !p.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(cargo)
            .args(["build", "--example", name])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(st.success(), "building example {name} failed");
    }
    assert!(p.exists(), "{} was not built", p.display());
    p
}

/// A running example service and the port it listens on.
struct Service {
    child: Reaped,
}

impl Service {
    /// Starts example `name` as pod `pod` on `port` (0: a free one) and waits for its
    /// `listening` line.
    fn start(name: &str, pod: &str, port: u16, drain_delay: u32) -> (Self, u16) {
        let mut child = Command::new(example(name))
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

    fn sigterm(&self) {
        kill(Pid::from_raw(self.child.0.id() as i32), Signal::SIGTERM).unwrap();
    }

    /// Waits for the exit; its code.
    fn wait(&mut self, within: Duration) -> Option<i32> {
        let t = Instant::now();
        loop {
            if let Some(st) = self.child.0.try_wait().unwrap() {
                return st.code();
            }
            assert!(
                t.elapsed() < within,
                "the service did not exit within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn client(port: u16, protocol: &str, flows: u32, duration: &str, dir: &Path) -> Child {
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
            "--dial-rate",
            "20",
            "--request-timeout",
            "1s",
            "--duration",
            duration,
            "--events",
            dir.join("stream.jsonl").to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until the client's event stream holds `n` lines that contain every one of `needles`.
fn wait_for_events(dir: &Path, needles: &[&str], n: usize) {
    let t = Instant::now();
    loop {
        let text = std::fs::read_to_string(dir.join("stream.jsonl")).unwrap_or_default();
        let hits = text
            .lines()
            .filter(|l| needles.iter().all(|x| l.contains(x)))
            .count();
        if hits >= n {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the client never recorded {n} lines with {needles:?}:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for the client; its report, after checking the exit code, the schema and the replay.
fn finish(c: Child, dir: &Path) -> Value {
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

fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

#[test]
fn a_good_shutdown_fails_no_request_and_closes_gracefully() {
    let dir = temp_dir("attach-good");
    let (mut a, port) = Service::start("good-shutdown", "good-a", 0, 1);
    let c = client(port, "http", 4, "5s", &dir);
    // Every held connection is on replica a before replica b exists.
    wait_for_events(&dir, &["attach_request", "\"result\":\"ok\"", "good-a"], 8);
    let (_b, port_b) = Service::start("good-shutdown", "good-b", port, 1);
    assert_eq!(port_b, port);
    a.sigterm();
    assert_eq!(a.wait(Duration::from_secs(15)), Some(0));
    let r = finish(c, &dir);
    let at = &r["trial"]["attach"];
    let req = &at["requests"];
    assert_eq!(count(req, "failed"), 0, "{at:#}");
    assert!(count(req, "ok") > 20, "{at:#}");
    let conns = &at["connections"];
    assert_eq!(count(conns, "severed"), 0, "{at:#}");
    assert!(count(conns, "graceful_close") >= 4, "{at:#}");
    assert!(count(conns, "reopened") >= 4, "{at:#}");
    let dials = &at["dials"];
    assert_eq!(count(dials, "failed"), 0, "{at:#}");
    assert!(count(dials, "served") > 20, "{at:#}");
    assert!(count(&dials["served_by_instance"], "good-b") > 0, "{at:#}");
    assert_eq!(at["longest_failure_window"], Value::Null);
    assert!(at["failures"].as_array().unwrap().is_empty());
    // Closed by Connection: close after the drain delay (or FIN while idle), never severed.
    let records = at["connection_records"].as_array().unwrap();
    assert!(
        records.iter().any(|c| c["result"] == "connection-close"),
        "{at:#}"
    );
    assert_eq!(r["trial"]["status"], "completed");
    assert!(r["trial"]["flows"].as_array().unwrap().is_empty());
}

#[test]
fn a_bad_shutdown_is_recorded_with_mechanisms() {
    let dir = temp_dir("attach-bad");
    let (mut a, port) = Service::start("bad-shutdown", "bad-a", 0, 0);
    let c = client(port, "http", 3, "3s", &dir);
    wait_for_events(&dir, &["attach_request", "\"result\":\"ok\"", "bad-a"], 6);
    a.sigterm();
    assert_eq!(a.wait(Duration::from_secs(5)), Some(0));
    let r = finish(c, &dir);
    let at = &r["trial"]["attach"];
    let req = &at["requests"];
    assert!(count(req, "failed") > 0, "{at:#}");
    assert!(count(&req["failed_by_mechanism"], "refused") > 0, "{at:#}");
    let dials = &at["dials"];
    assert!(count(&dials["failed_by_result"], "refused") > 0, "{at:#}");
    let w = &at["longest_failure_window"];
    assert!(count(w, "failures") > 1, "{at:#}");
    assert!(w["duration_ms"].as_i64().unwrap() > 500, "{at:#}");
    // No control plane here: every failure is unattributed, said so, never guessed.
    let failures = at["failures"].as_array().unwrap();
    assert!(
        failures
            .iter()
            .all(|f| f["phase"] == "unattributed" && f["pod"].is_null())
    );
    assert!(
        failures
            .iter()
            .any(|f| f["kind"] == "dial" && f["mechanism"] == "refused")
    );
    assert!(
        failures
            .iter()
            .any(|f| f["kind"] == "request" && f["errno"] == "ECONNREFUSED"),
        "{at:#}"
    );
}

#[test]
fn held_tcp_connections_record_how_they_end() {
    let dir = temp_dir("attach-tcp");
    let (mut a, port) = Service::start("bad-shutdown", "bad-tcp", 0, 0);
    let c = client(port, "tcp", 3, "2s", &dir);
    wait_for_events(&dir, &["attach_conn_opened"], 3);
    wait_for_events(&dir, &["attach_dial", "\"result\":\"served\""], 2);
    a.sigterm();
    assert_eq!(a.wait(Duration::from_secs(5)), Some(0));
    let r = finish(c, &dir);
    let at = &r["trial"]["attach"];
    assert_eq!(at["requests"], Value::Null, "a TCP arm sends no requests");
    let conns = &at["connections"];
    assert_eq!(count(conns, "total"), 3, "{at:#}");
    // An exiting process closes sockets with nothing unread with FIN.
    assert_eq!(count(conns, "graceful_close"), 3, "{at:#}");
    let records = at["connection_records"].as_array().unwrap();
    assert!(
        records
            .iter()
            .all(|c| c["result"] == "fin" && c["ended_t_ms"].is_i64())
    );
    assert!(
        count(&at["dials"]["failed_by_result"], "refused") > 0,
        "{at:#}"
    );
}

#[test]
fn attach_flags_are_checked_before_anything_runs() {
    let out = run(&[
        "client",
        "--attach",
        "--port",
        "1",
        "--tcp-flows",
        "0",
        "--dial-rate",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at least one flow"), "{err}");
    let out = run(&["client", "--attach"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--port"));
}
