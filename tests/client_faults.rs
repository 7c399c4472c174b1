//! The client against a probe that is killed, stopped, or replaced by a second instance on the
//! same port: real processes, real signals, and the outcome each one must produce.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Starts a probe and returns once it has bound every socket (its `listening` line).
fn probe(name: &str, tcp: u16, udp: u16, ready: u16) -> Reaped {
    let mut c = Command::new(bin())
        .arg("probe")
        .env("DRAIN_BEHAVIOR", "ignore")
        .env("PROBE_TCP_PORT", tcp.to_string())
        .env("PROBE_UDP_PORT", udp.to_string())
        .env("PROBE_READY_PORT", ready.to_string())
        .env("POD_NAME", name)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = c.stdout.take().unwrap();
    let c = Reaped(c);
    let (listening, heard) = mpsc::channel();
    // Drained to its end, so the probe never blocks on a full pipe.
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("\"event\":\"listening\"") {
                let _ = listening.send(());
            }
        }
    });
    heard
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("probe {name} never listened"));
    c
}

fn signal(c: &Reaped, s: Signal) {
    kill(Pid::from_raw(c.0.id() as i32), s).unwrap();
}

/// Starts `drainwatch client` in the background with fast timings.
fn client(
    tcp: u16,
    udp: u16,
    tcp_flows: &str,
    udp_flows: &str,
    dir: &std::path::Path,
    duration: &str,
) -> Client {
    let mut child = Command::new(bin())
        .args([
            "client",
            "--host",
            "127.0.0.1",
            "--tcp-port",
            &tcp.to_string(),
            "--udp-port",
            &udp.to_string(),
            "--tcp-flows",
            tcp_flows,
            "--udp-flows",
            udp_flows,
            "--interval",
            "100ms",
            "--flow-timeout",
            "2s",
            "--udp-silence-datagrams",
            "4",
            "--duration",
            duration,
            "--out",
            dir.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let err = Arc::new(Mutex::new(String::new()));
    let e = err.clone();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            e.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    Client { child, err, reader }
}

/// A client in the background, its stderr collected as it is written.
struct Client {
    child: Child,
    err: Arc<Mutex<String>>,
    reader: JoinHandle<()>,
}

impl Client {
    /// Returns once every flow has carried data (the client says so on stderr).
    fn carrying(&self) {
        wait::until(
            wait::with_output("every flow carries data", &self.err),
            Duration::from_secs(30),
            || {
                let err = self.err.lock().unwrap();
                err.contains("every flow carries data").then_some(())
            },
        );
    }
}

fn finish(c: Client, dir: &std::path::Path) -> serde_json::Value {
    let out = c.child.wait_with_output().unwrap();
    c.reader.join().unwrap();
    assert!(
        out.status.success(),
        "client failed: {}",
        c.err.lock().unwrap()
    );
    let r = json(&dir.join("report.json"));
    assert_valid_report(&r);
    assert_replay_identical(dir, Some(&String::from_utf8_lossy(&out.stdout)));
    r
}

#[test]
fn a_second_instance_on_the_same_udp_port_rehomes_the_flows() {
    let (tcp_a, udp, ready_a) = free_ports();
    let (tcp_b, _, ready_b) = free_ports();
    let mut a = probe("probe-a", tcp_a, udp, ready_a);
    let dir = temp_dir("rehome");
    let c = client(tcp_a, udp, "0", "4", &dir, "8s");
    c.carrying();
    // Both bind the port with SO_REUSEPORT; once A is gone every datagram reaches B.
    let mut b = probe("probe-b", tcp_b, udp, ready_b);
    signal(&a, Signal::SIGKILL);
    let r = finish(c, &dir);
    let _ = a.0.wait();
    signal(&b, Signal::SIGKILL);
    let _ = b.0.wait();
    let udp = flows_of(&r, "udp");
    assert_eq!(udp.len(), 4);
    for f in udp {
        assert_eq!(f["outcome"], "severed", "{f}");
        assert_eq!(f["mechanism"], "rehomed", "{f}");
        assert_eq!(f["instance"], "probe-a");
        let rh = &f["rehomed"];
        assert_eq!(rh["from_instance"], "probe-a");
        assert_eq!(rh["to_instance"], "probe-b");
        let last = rh["last_original_reply_t_ms"].as_i64().unwrap();
        let first = rh["first_new_reply_t_ms"].as_i64().unwrap();
        assert!(last <= first, "{rh}");
        assert_eq!(f["t_terminal_ms"].as_i64().unwrap(), first);
        assert_eq!(
            f["detail"],
            "answered by probe instance probe-b, was probe-a"
        );
    }
}

#[test]
fn a_killed_probe_is_icmp_unreachable_for_udp() {
    let (tcp, udp, ready) = free_ports();
    let mut p = probe("probe-k", tcp, udp, ready);
    let dir = temp_dir("killed");
    let c = client(tcp, udp, "2", "3", &dir, "8s");
    c.carrying();
    signal(&p, Signal::SIGKILL);
    let _ = p.0.wait();
    let r = finish(c, &dir);
    let (tcp, udp) = (flows_of(&r, "tcp"), flows_of(&r, "udp"));
    assert_eq!((tcp.len(), udp.len()), (2, 3));
    for f in udp {
        assert_eq!(f["outcome"], "severed", "{f}");
        assert_eq!(f["mechanism"], "icmp-unreachable", "{f}");
        assert_eq!(f["detail"], "econnrefused (icmp port unreachable)");
    }
    for f in tcp {
        assert_eq!(f["outcome"], "severed", "{f}");
        // The kernel closes a killed process's sockets: a FIN with no bye when its receive
        // buffer was empty, a RST when a heartbeat had arrived but was still unread (RFC 2525
        // 2.17; under load the killed probe often had one queued). Which one is a race between
        // the client's 100 ms heartbeats and the kill, not a property of the classifier.
        let m = f["mechanism"].as_str().unwrap();
        assert!(["fin-unannounced", "rst"].contains(&m), "{f}");
    }
}

#[test]
fn a_stopped_probe_is_udp_silence_and_tcp_read_timeout() {
    let (tcp, udp, ready) = free_ports();
    let mut p = probe("probe-s", tcp, udp, ready);
    let dir = temp_dir("silence");
    let c = client(tcp, udp, "1", "3", &dir, "10s");
    c.carrying();
    // SIGSTOP: sockets stay bound (no ICMP, no FIN) but nothing answers.
    signal(&p, Signal::SIGSTOP);
    let r = finish(c, &dir);
    signal(&p, Signal::SIGKILL);
    signal(&p, Signal::SIGCONT);
    let _ = p.0.wait();
    let (tcp, udp) = (flows_of(&r, "tcp"), flows_of(&r, "udp"));
    assert_eq!((tcp.len(), udp.len()), (1, 3));
    for f in udp {
        assert_eq!(f["outcome"], "severed", "{f}");
        assert_eq!(f["mechanism"], "udp-silence", "{f}");
        assert_eq!(f["detail"], "udp-silence-4-datagrams");
    }
    for f in tcp {
        assert_eq!(f["outcome"], "read-timeout", "{f}");
        assert_eq!(f["mechanism"], "read-timeout");
    }
}

#[test]
fn survivors_of_the_window_have_no_terminal_time() {
    let (tcp, udp, ready) = free_ports();
    let mut p = probe("probe-w", tcp, udp, ready);
    let dir = temp_dir("window");
    let r = finish(client(tcp, udp, "2", "2", &dir, "1s"), &dir);
    signal(&p, Signal::SIGKILL);
    let _ = p.0.wait();
    let all = flows(&r);
    assert_eq!(all.len(), 2 + 2, "2 TCP and 2 UDP flows");
    for f in all {
        assert_eq!(f["outcome"], "survived-observation-window", "{f}");
        assert!(f["t_terminal_ms"].is_null());
        assert!(f["connected_t_ms"].is_i64());
    }
    assert_eq!(r["trial"]["summary"]["tcp"]["survived_window"], 2);
}
