//! The probe under hostile input, on loopback with real sockets and a real probe process:
//! garbage lines and a 1 MiB line on TCP flows, a slowloris on `/readyz` and `/healthz`, UDP
//! junk (empty, not a ping, oversized), and thousands of connections that never send. Through
//! all of it the well-behaved flows keep their heartbeats, the probe's memory stays bounded,
//! nothing panics, each kind of abuse is logged once per decade of its count (not per byte or
//! line), and SIGTERM still drains as usual. Every wait is a hang guard counted in events or
//! bytes, never a timing assertion.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

/// Every wait below ends by this, or the test fails: a hang guard, not a measurement.
const GUARD: Duration = Duration::from_secs(120);
/// The TCP connection cap the probe is started with.
const CAP: usize = 1000;
/// Connections that never send, on the flow port and on the health port.
const IDLE_FLOWS: usize = 2000;
const IDLE_HEALTH: usize = 500;
const GOOD_FLOWS: usize = 4;
const GARBAGE_LINES: usize = 10_000;

/// A hang guard inside a loop that does its own blocking (a read with a timeout).
fn guard(start: Instant, what: &str) {
    assert!(start.elapsed() < GUARD, "hang guard: {what}");
}

/// The probe's event lines, read as they come.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<Value>>>);

impl Log {
    fn of(&self, name: &str) -> Vec<Value> {
        let l = self.0.lock().unwrap();
        l.iter().filter(|e| e["event"] == name).cloned().collect()
    }
    fn wait_for(&self, what: &str, f: impl Fn(&[Value]) -> bool) {
        wait::until(what, GUARD, || f(&self.0.lock().unwrap()).then_some(()));
    }
}

fn vm(pid: u32, key: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = s.lines().find(|l| l.starts_with(key)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A well-behaved TCP flow: pings like the client, counts the heartbeats it reads.
struct Good {
    hb: Arc<Mutex<usize>>,
    last: Arc<Mutex<String>>,
    done: std::thread::JoinHandle<()>,
}

fn good_flow(port: u16) -> Good {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(GUARD)).unwrap();
    let (hb, last) = (Arc::new(Mutex::new(0)), Arc::new(Mutex::new(String::new())));
    let (h, l) = (hb.clone(), last.clone());
    let mut w = s.try_clone().unwrap();
    let done = std::thread::spawn(move || {
        let mut r = BufReader::new(s);
        let mut seq = 0;
        loop {
            let mut line = String::new();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line.starts_with("hb ") {
                *h.lock().unwrap() += 1;
                let _ = w.write_all(format!("ping {seq}\n").as_bytes());
                seq += 1;
            }
            *l.lock().unwrap() = line;
        }
    });
    Good { hb, last, done }
}

fn wait_heartbeats(flows: &[Good], more_than: &[usize], what: &str) {
    wait::until(what, GUARD, || {
        let all = flows
            .iter()
            .zip(more_than)
            .all(|(g, n)| *g.hb.lock().unwrap() >= n + 3);
        all.then_some(())
    });
}

/// Sends one byte of a request head every 100 ms and never its blank line; returns once the
/// probe has cut the connection. Connects before it returns, so the connection is in the
/// probe's accept queue ahead of any flood the caller starts next (the queue is first in,
/// first out): connecting in the spawned thread let a loaded machine run the health flood
/// first, fill the probe's health-connection cap and have the slowloris refused, not timed out.
fn slowloris(port: u16, path: &str) -> std::thread::JoinHandle<()> {
    let head = format!("GET {path} HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    std::thread::spawn(move || {
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let bytes = head.bytes().chain(std::iter::repeat(b'a'));
        let t = Instant::now();
        let mut buf = [0u8; 64];
        for b in bytes {
            guard(t, "the probe never cut the slowloris");
            if s.write_all(&[b]).is_err() {
                return;
            }
            match s.read(&mut buf) {
                Ok(0) => return,
                Ok(_) => panic!("the probe answered a request head that never ended"),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return,
            }
        }
    })
}

/// Sends `batch` datagrams of `junk`, then a ping, and waits for its ack: the socket's queue
/// is first in, first out, so the junk before it has been read. Returns the acks.
fn udp_junk(port: u16, junk: &[u8], batches: usize, batch: usize) -> usize {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s.connect(("127.0.0.1", port)).unwrap();
    let mut acks = 0;
    let t = Instant::now();
    for i in 0..batches {
        for _ in 0..batch {
            s.send(junk).unwrap();
        }
        let ping = format!("ping {i}\n");
        let mut buf = [0u8; 256];
        loop {
            guard(t, "no ack after udp junk");
            s.send(ping.as_bytes()).unwrap();
            if let Ok(n) = s.recv(&mut buf) {
                assert!(buf[..n].starts_with(format!("ack {i} ").as_bytes()));
                acks += 1;
                break;
            }
        }
    }
    acks
}

fn readyz(port: u16) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        .ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    buf.split_whitespace().nth(1)?.parse().ok()
}

fn wait_ready(port: u16, what: &str) {
    wait::until(what, GUARD, || (readyz(port) == Some(200)).then_some(()));
}

fn start(tcp: u16, udp: u16, ready: u16) -> (Child, Log, std::thread::JoinHandle<String>) {
    let mut child = Command::new(bin())
        .arg("probe")
        .env("DRAIN_BEHAVIOR", "drain")
        .env("DRAIN_MAX_SECONDS", "1")
        .env("PROBE_TCP_PORT", tcp.to_string())
        .env("PROBE_UDP_PORT", udp.to_string())
        .env("PROBE_READY_PORT", ready.to_string())
        .env("PROBE_UDP_SOCKETS", "2")
        .env("PROBE_MAX_CONNECTIONS", CAP.to_string())
        .env("POD_NAME", "probe-hostile")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = Log::default();
    let (out, l) = (child.stdout.take().unwrap(), log.clone());
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
            l.0.lock().unwrap().push(v);
        }
    });
    let mut e = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = e.read_to_string(&mut s);
        s
    });
    (child, log, err)
}

/// Opens `n` connections that never send; with `read`, waits for each to be either served
/// (a heartbeat arrives) or refused (a reset): returns how many were refused. A refusal can
/// arrive before `connect` returns (seen under load: the probe's reset beat the connecting
/// thread back to user space), so a connect that fails with ECONNRESET is one refused too.
fn idle(port: u16, n: usize, read: bool) -> (Vec<TcpStream>, usize) {
    let mut conns = Vec::with_capacity(n);
    let mut refused = 0;
    for _ in 0..n {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(c) => conns.push(c),
            Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => refused += 1,
            Err(e) => panic!("connect: {e}"),
        }
    }
    if read {
        for c in &conns {
            c.set_read_timeout(Some(GUARD)).unwrap();
            let mut b = [0u8; 1];
            match (&*c).read(&mut b) {
                Ok(1) => {}
                Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => refused += 1,
                other => panic!("neither served nor refused: {other:?}"),
            }
        }
    }
    (conns, refused)
}

#[test]
fn hostile_input_leaves_the_good_flows_their_heartbeats() {
    drainwatch::net::limits::raise_nofile_to_hard().unwrap();
    let (tcp, udp, ready) = free_ports();
    let (mut child, log, stderr) = start(tcp, udp, ready);
    let pid = child.id();
    wait_ready(ready, "the probe never became ready");

    let good: Vec<Good> = (0..GOOD_FLOWS).map(|_| good_flow(tcp)).collect();
    wait_heartbeats(&good, &[0; GOOD_FLOWS], "good flows never heartbeat");
    let udp_before = udp_junk(udp, b"ping warm-up", 1, 0);
    assert_eq!(udp_before, 1);
    let rss_before = vm(pid, "VmRSS:");

    // Garbage lines and a 1 MiB line without a newline, each on a flow of its own.
    let mut garbage = TcpStream::connect(("127.0.0.1", tcp)).unwrap();
    let lines = "garbage that is not a ping\n".repeat(GARBAGE_LINES);
    garbage.write_all(lines.as_bytes()).unwrap();
    let mut long = TcpStream::connect(("127.0.0.1", tcp)).unwrap();
    long.write_all(&vec![b'x'; 1 << 20]).unwrap();

    // A slowloris on each health path, while thousands of idle connections arrive.
    let lorises = [slowloris(ready, "/readyz"), slowloris(ready, "/healthz")];
    let (idle_health, _) = idle(ready, IDLE_HEALTH, false);
    let (idle_flows, refused) = idle(tcp, IDLE_FLOWS, true);
    let held_before = GOOD_FLOWS + 2;
    assert_eq!(
        refused,
        IDLE_FLOWS - (CAP - held_before),
        "refused past the cap"
    );

    // UDP junk: empty, not a ping, oversized; 20 per batch so the socket buffer holds them.
    let big = format!("ping {}", "9".repeat(600));
    assert_eq!(udp_junk(udp, b"", 50, 20), 50);
    assert_eq!(udp_junk(udp, b"hello there", 50, 20), 50);
    assert_eq!(udp_junk(udp, big.as_bytes(), 50, 20), 50);

    // The garbage has been read when its 10,000th line is logged.
    log.wait_for("the garbage lines were never all counted", |l| {
        l.iter().any(|e| {
            e["event"] == "tcp_input_unrecognised"
                && e["detail"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("count={GARBAGE_LINES} "))
        })
    });
    log.wait_for("the 1 MiB line was never counted", |l| {
        l.iter().any(|e| e["event"] == "tcp_input_line_too_long")
    });
    for l in lorises {
        l.join().unwrap();
    }

    // Through it all: the good flows heartbeat on, and so do the abusers' own flows.
    let counts: Vec<usize> = good.iter().map(|g| *g.hb.lock().unwrap()).collect();
    wait_heartbeats(
        &good,
        &counts,
        "good flows stopped heartbeating after the abuse",
    );
    let mut hb = [0u8; 3];
    garbage.set_read_timeout(Some(GUARD)).unwrap();
    garbage.read_exact(&mut hb).unwrap();
    assert_eq!(&hb, b"hb ", "a flow that sent garbage keeps its heartbeats");
    drop(idle_health);
    wait_ready(ready, "readiness never came back after the health flood");
    assert_eq!(udp_junk(udp, b"ping after", 1, 0), 1);

    let (rss_after, hwm) = (vm(pid, "VmRSS:"), vm(pid, "VmHWM:"));
    eprintln!("probe memory: VmRSS {rss_before} kB before, {rss_after} kB after, VmHWM {hwm} kB");
    assert!(
        hwm.saturating_sub(rss_before) < 64 * 1024,
        "memory grew by {} kB",
        hwm - rss_before
    );

    // SIGTERM drains as usual: bye to every good flow, exit 0.
    kill(Pid::from_raw(pid as i32), Signal::SIGTERM).unwrap();
    let status = wait::until("the probe exits after SIGTERM", GUARD, || {
        child.try_wait().unwrap()
    });
    assert_eq!(status.code(), Some(0));
    for g in good {
        g.done.join().unwrap();
        let last = g.last.lock().unwrap().clone();
        assert!(
            last.starts_with("bye ") && last.ends_with(" drain-deadline\n"),
            "{last:?}"
        );
    }
    drop(idle_flows);
    log.wait_for("the log never reached its exiting line", |l| {
        l.last().is_some_and(|e| e["event"] == "exiting")
    });
    // The pipe closed with the process: no panic message, nothing at all on stderr.
    let err = stderr.join().unwrap();
    assert!(err.is_empty(), "the probe wrote to stderr: {err}");

    assert!(log.of("drain_deadline_reached").len() == 1);
    let totals = log.of("probe_input_totals");
    assert_eq!(totals.len(), 1, "one totals line");
    let totals: BTreeMap<String, u64> = totals[0]["detail"]
        .as_str()
        .unwrap()
        .split(' ')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect();
    let exact = [
        ("tcp_input_unrecognised", GARBAGE_LINES as u64),
        ("tcp_input_line_too_long", 1),
        ("tcp_connection_refused", refused as u64),
        ("udp_datagram_unrecognised", 2 * 50 * 20),
        ("udp_datagram_oversized", 50 * 20),
    ];
    for (k, n) in exact {
        assert_eq!(totals.get(k), Some(&n), "{k}: {totals:?}");
    }
    assert!(totals["health_request_timeout"] >= 2, "{totals:?}");
    assert!(totals["health_connection_refused"] >= 1, "{totals:?}");
    // Logged once per decade of the count: 1, 10, 100, …, never per line or datagram.
    assert_eq!(totals.len(), 7, "{totals:?}");
    for (k, n) in &totals {
        let decades = n.to_string().len();
        assert_eq!(
            log.of(k).len(),
            decades,
            "{k} (count {n}) logged once per decade"
        );
    }
    // Absent from a clean run, nothing else was refused.
    assert!(log.of("probe_events_dropped").is_empty());
}
