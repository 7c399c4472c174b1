//! Servers that fail on purpose, for the attach client's fault tests on loopback: one that
//! holds connections silently and can reset them all, one that resets a chosen request after
//! reading it, and a network namespace of the test's own in which packets can be made to
//! vanish without touching the host's rules.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use socket2::SockRef;

/// Accepts on a non-blocking listener until `stop`, handing each connection to `take`.
fn accept_loop(l: TcpListener, stop: Arc<AtomicBool>, take: impl Fn(TcpStream) + Send + 'static) {
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            match l.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(false).unwrap();
                    take(s);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
}

/// Closes `s` with SO_LINGER 0, so that the kernel sends RST instead of FIN.
fn reset(s: TcpStream) {
    SockRef::from(&s).set_linger(Some(Duration::ZERO)).unwrap();
    drop(s);
}

/// Holds every connection it accepts without a byte either way.
pub struct Holder {
    pub port: u16,
    held: Arc<Mutex<Vec<TcpStream>>>,
    stop: Arc<AtomicBool>,
}

impl Holder {
    pub fn start() -> Self {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let held = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let h = held.clone();
        accept_loop(l, stop.clone(), move |s| h.lock().unwrap().push(s));
        Self { port, held, stop }
    }

    pub fn held(&self) -> usize {
        self.held.lock().unwrap().len()
    }

    /// Resets every held connection; how many there were.
    pub fn reset_all(&self) -> usize {
        let v = std::mem::take(&mut *self.held.lock().unwrap());
        let n = v.len();
        v.into_iter().for_each(reset);
        n
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Answers every GET with 200 on keep-alive connections, except request number `reset_at`
/// (counted over all connections, from 1): that one is read whole, then its connection reset.
pub struct HttpResetter {
    pub port: u16,
    stop: Arc<AtomicBool>,
}

impl HttpResetter {
    pub fn start(reset_at: usize) -> Self {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicUsize::new(0));
        accept_loop(l, stop.clone(), move |s| {
            let seen = seen.clone();
            std::thread::spawn(move || serve(s, &seen, reset_at));
        });
        Self { port, stop }
    }
}

impl Drop for HttpResetter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn serve(mut s: TcpStream, seen: &AtomicUsize, reset_at: usize) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        buf.drain(..end);
        if seen.fetch_add(1, Ordering::SeqCst) + 1 == reset_at {
            reset(s);
            return;
        }
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Served-By: resetter\r\n\r\nok";
        if s.write_all(ok).is_err() {
            return;
        }
    }
}

/// Why a network namespace of the test's own cannot be had here, if it cannot.
pub fn netns_unavailable() -> Option<String> {
    // /proc/self belongs to the effective uid.
    let euid = std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(u32::MAX);
    if euid != 0 {
        return Some(format!(
            "not root (euid {euid}): creating a network namespace and adding iptables rules in it needs root"
        ));
    }
    for (tool, arg) in [("ip", "-V"), ("iptables", "--version")] {
        let ok = Command::new(tool)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            return Some(format!("{tool} is not installed"));
        }
    }
    None
}

/// Runs `f` on a thread moved into a new network namespace (unshare(CLONE_NEWNET), what
/// `unshare -n` does) with its loopback up. The processes `f` spawns start in it, and the
/// iptables rules it adds exist only there; the namespace goes when its last socket and
/// process do. A panic in `f` is the caller's.
pub fn in_new_netns<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let h = std::thread::spawn(move || {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)
            .expect("unshare(CLONE_NEWNET) as root");
        run_ok("ip", &["link", "set", "lo", "up"]);
        f()
    });
    match h.join() {
        Ok(v) => v,
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// Runs `cmd args` from the calling thread (so, in its namespace); panics unless it succeeds.
pub fn run_ok(cmd: &str, args: &[&str]) {
    let o = Command::new(cmd).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}
