//! The probe on the wire, seen by a raw socket: what bytes each SIGTERM behaviour produces,
//! and how bad configuration is refused. Real process, real signals.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

struct Probe {
    child: Child,
    done: bool,
    tcp: u16,
    ready: u16,
}

impl Probe {
    fn start(behavior: &str, extra: &[(&str, &str)]) -> Self {
        let (tcp, udp, ready) = free_ports();
        let mut cmd = Command::new(bin());
        cmd.arg("probe")
            .env("DRAIN_BEHAVIOR", behavior)
            .env("DRAIN_MAX_SECONDS", "1")
            .env("PROBE_TCP_PORT", tcp.to_string())
            .env("PROBE_UDP_PORT", udp.to_string())
            .env("PROBE_READY_PORT", ready.to_string())
            .env("POD_NAME", format!("probe-{behavior}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let child = cmd.spawn().unwrap();
        let p = Self {
            child,
            done: false,
            tcp,
            ready,
        };
        wait::until_every(
            "the probe answers /readyz",
            Duration::from_secs(10),
            Duration::from_millis(20),
            || readyz(p.ready),
        );
        p
    }

    fn signal(&self, s: Signal) {
        kill(Pid::from_raw(self.child.id() as i32), s).unwrap();
    }

    fn stdout_lines(mut self) -> (std::process::ExitStatus, Vec<serde_json::Value>) {
        self.done = true;
        let status = self.child.wait().unwrap();
        let mut text = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        let lines = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (status, lines)
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn readyz(port: u16) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        .ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    buf.split_whitespace().nth(1)?.parse().ok()
}

/// Reads `n` heartbeat lines: the connection is served.
fn heartbeats(r: &mut BufReader<TcpStream>, n: usize) -> Vec<String> {
    let mut lines = Vec::new();
    while lines.len() < n {
        let mut l = String::new();
        assert!(
            r.read_line(&mut l).unwrap() > 0,
            "EOF before {n} heartbeats"
        );
        assert!(l.starts_with("hb "), "{l:?}");
        lines.push(l);
    }
    lines
}

/// Reads lines until EOF or error, after `lines` already read; returns them all and the final
/// read result.
fn read_all(
    mut r: BufReader<TcpStream>,
    mut lines: Vec<String>,
) -> (Vec<String>, std::io::Result<()>) {
    loop {
        let mut l = String::new();
        match r.read_line(&mut l) {
            Ok(0) => return (lines, Ok(())),
            Ok(_) => lines.push(l),
            Err(e) => return (lines, Err(e)),
        }
    }
}

#[test]
fn drain_sends_bye_then_fin_and_fails_readiness() {
    let p = Probe::start("drain", &[]);
    let s = TcpStream::connect(("127.0.0.1", p.tcp)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut r = BufReader::new(s);
    let served = heartbeats(&mut r, 2);
    p.signal(Signal::SIGTERM);
    // Readiness must fail while draining: between the signal and the drain deadline (1 s),
    // after which the probe exits and readyz answers nothing.
    wait::until(
        "readyz answers 503 while draining",
        Duration::from_secs(1),
        || (readyz(p.ready) == Some(503)).then_some(()),
    );
    let (lines, end) = read_all(r, served);
    end.unwrap();
    let last = lines.last().unwrap();
    assert!(
        last.starts_with("bye ") && last.ends_with(" drain-deadline\n"),
        "{lines:?}"
    );
    assert!(
        lines[..lines.len() - 1]
            .iter()
            .all(|l| l.starts_with("hb "))
    );
    // bye carries the next heartbeat sequence number.
    let n_hb = lines.len() - 1;
    assert_eq!(last, &format!("bye {n_hb} drain-deadline\n"));
    let (status, events) = p.stdout_lines();
    assert_eq!(status.code(), Some(0));
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    let first_after_signal = names.iter().position(|n| *n == "sigterm_received").unwrap();
    assert_eq!(names[first_after_signal + 1], "readyz_now_503", "{names:?}");
    assert!(names.contains(&"drain_deadline_reached"));
    assert_eq!(names.last(), Some(&"exiting"));
    assert_eq!(events[0]["event"], "probe_started");
    assert!(
        events[0]["detail"]
            .as_str()
            .unwrap()
            .contains("probe_version=")
    );
    assert!(
        events[0]["detail"]
            .as_str()
            .unwrap()
            .ends_with("heartbeat_ms=500"),
        "the heartbeat period is recorded, the Go probe's by default"
    );
    assert!(events[0]["boot_id"].is_string());
}

#[test]
fn exit_now_resets_connections() {
    let p = Probe::start("exit-now", &[]);
    let s = TcpStream::connect(("127.0.0.1", p.tcp)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut r = BufReader::new(s);
    let served = heartbeats(&mut r, 1);
    p.signal(Signal::SIGTERM);
    let (lines, end) = read_all(r, served);
    assert!(lines.iter().all(|l| l.starts_with("hb ")));
    let err = end.unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ECONNRESET), "{err}");
    let (status, events) = p.stdout_lines();
    assert_eq!(status.code(), Some(0));
    assert!(events.iter().any(|e| e["event"] == "tcp_flow_reset_forced"));
}

#[test]
fn ignore_keeps_serving_until_sigkill() {
    let p = Probe::start("ignore", &[]);
    let s = TcpStream::connect(("127.0.0.1", p.tcp)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    p.signal(Signal::SIGTERM);
    // The scenario: a while after SIGTERM, a probe told to ignore it still answers ready.
    std::thread::sleep(Duration::from_millis(1300));
    assert_eq!(readyz(p.ready), Some(200));
    p.signal(Signal::SIGKILL);
    let (lines, end) = read_all(BufReader::new(s), Vec::new());
    end.unwrap();
    assert!(
        lines.len() >= 2,
        "heartbeats continued after SIGTERM: {lines:?}"
    );
    assert!(
        lines.iter().all(|l| l.starts_with("hb ")),
        "no bye on a killed probe"
    );
    let (status, events) = p.stdout_lines();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9));
    assert!(events.iter().any(|e| e["event"] == "sigterm_ignored"));
}

#[test]
fn invalid_environment_is_fatal_and_named() {
    for (k, v) in [
        ("DRAIN_BEHAVIOR", "graceful"),
        ("PROBE_TCP_PORT", "0"),
        ("EXIT_NOW_FORCE_RST", "maybe"),
        ("DRAIN_MAX_SECONDS", "-1"),
    ] {
        let out = Command::new(bin())
            .arg("probe")
            .env(k, v)
            .env("POD_NAME", "x")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{k}={v}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(k),
            "{k}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
