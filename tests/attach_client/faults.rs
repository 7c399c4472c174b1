//! Servers that fail on purpose, for the attach client's fault tests on loopback: one that
//! holds connections silently and can reset them all, one that resets a chosen request after
//! reading it, and a network namespace of the test's own in which packets can be made to
//! vanish, and sysctls set, without touching the host's rules or settings.

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

/// Reads the next request head from `s` into `buf` and takes it off; false at the
/// connection's end.
fn next_request(s: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    buf.drain(..end);
    true
}

fn serve(mut s: TcpStream, seen: &AtomicUsize, reset_at: usize) {
    let mut buf = Vec::new();
    while next_request(&mut s, &mut buf) {
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

/// What a failing netns test tells a reader who ran it where it cannot run.
const HOW: &str = "run the tests as root (as .ci/run does), or leave these tests out with \
                   `cargo test -- --skip netns::`";

/// Panics, saying why and what to do, unless this process can make a network namespace of its
/// own and set it up: root, `ip`, `iptables`. Never a skip: a test that did not run must not
/// count as passed.
pub fn require_netns() {
    // /proc/self belongs to the effective uid.
    let euid = std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(u32::MAX);
    assert!(
        euid == 0,
        "this test needs root (euid is {euid}): it makes a network namespace of its own and \
         sets sysctls and iptables rules in it; {HOW}"
    );
    for (tool, arg) in [
        ("ip", "-V"),
        ("iptables", "--version"),
        ("sysctl", "--version"),
    ] {
        let ok = Command::new(tool)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "this test needs `{tool}`, which does not run here; {HOW}"
        );
    }
}

/// Runs `f` on a thread moved into a new network namespace (unshare(CLONE_NEWNET), what
/// `unshare -n` does) with its loopback up; panics first, saying why, where that cannot be. The processes `f` spawns start in it, and the
/// iptables rules it adds exist only there; the namespace goes when its last socket and
/// process do. A panic in `f` is the caller's.
pub fn in_new_netns<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    require_netns();
    let h = std::thread::spawn(move || {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)
            .unwrap_or_else(|e| panic!("unshare(CLONE_NEWNET) failed as root: {e}; {HOW}"));
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

/// Sets the network sysctl `name` (`net.…`) to `value` in the calling thread's namespace and
/// checks that it took. Only for a thread `in_new_netns` made: the host's settings stay as
/// they are.
pub fn sysctl(name: &str, value: &str) {
    let path = format!("/proc/sys/{}", name.replace('.', "/"));
    assert!(
        std::path::Path::new(&path).exists(),
        "{path} does not exist: this kernel has no {name}"
    );
    run_ok("sysctl", &["-q", "-w", &format!("{name}={value}")]);
    let o = Command::new("sysctl").args(["-n", name]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), value, "{name}");
}

/// The host's value of the network sysctl `name`, read from a thread in the host's namespace.
pub fn host_sysctl(name: &str) -> String {
    let path = format!("/proc/sys/{}", name.replace('.', "/"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .trim()
        .to_string()
}

/// Answers every GET with an interim `103 Early Hints` head first, then the final `200`
/// (`final_answer`), or nothing more, closing the connection after the hint.
pub struct HttpHinter {
    pub port: u16,
    stop: Arc<AtomicBool>,
}

impl HttpHinter {
    pub fn start(final_answer: bool) -> Self {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        accept_loop(l, stop.clone(), move |s| {
            std::thread::spawn(move || hint(s, final_answer));
        });
        Self { port, stop }
    }
}

impl Drop for HttpHinter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn hint(mut s: TcpStream, final_answer: bool) {
    let mut buf = Vec::new();
    while next_request(&mut s, &mut buf) {
        let early = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";
        if s.write_all(early).is_err() {
            return;
        }
        if !final_answer {
            return;
        }
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Served-By: hinter\r\n\r\nok";
        if s.write_all(ok).is_err() {
            return;
        }
    }
}
