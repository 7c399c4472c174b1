//! What every example service shares: its environment (`PORT`-style numbers, `POD_NAME`), its
//! listening socket (SO_REUSEPORT, so several replicas on one host share a port: a local
//! stand-in for a Service, used by the tests) and how accepting ends without resetting a dial.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;

/// Once accepting stops, the listener is closed only after its accept queue has stayed empty
/// this long: a dial the kernel completed before then (routed here just before the endpoint
/// went, or its handshake still in flight) is accepted and served, never reset by the close.
/// Longer than a handshake takes inside a cluster, short enough to be found between the dials
/// of a replica that is still being routed to.
const BACKLOG_QUIET: Duration = Duration::from_millis(50);
/// How long the queue is drained at most: a replica still routed to after `DRAIN_DELAY` has a
/// drain delay too short for its endpoints, which no wait here can mend.
const BACKLOG_MAX: Duration = Duration::from_secs(1);

/// The whole number in `name`, `default` when unset; a malformed one ends the process (2).
pub fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| {
            eprintln!("{name}={v:?} is not a whole number");
            std::process::exit(2)
        }),
        Err(_) => default,
    }
}

/// The port in `name` (0 picks a free one), `default` when unset.
pub fn env_port(name: &str, default: u16) -> u16 {
    u16::try_from(env_u64(name, u64::from(default))).unwrap_or_else(|_| {
        eprintln!("{name} must be 0-65535");
        std::process::exit(2)
    })
}

/// `POD_NAME`, else the hostname.
pub fn pod_name() -> String {
    std::env::var("POD_NAME")
        .ok()
        .filter(|p| !p.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// A listener on all IPv4 addresses at `port`, shareable with SO_REUSEPORT.
pub fn bind(port: u16) -> std::io::Result<TcpListener> {
    let sock = TcpSocket::new_v4()?;
    sock.set_reuseaddr(true)?;
    sock.set_reuseport(true)?;
    sock.bind(SocketAddr::from(([0, 0, 0, 0], port)))?;
    sock.listen(1024)
}

/// Accepts into `admit` until `stop`; returns the listener, still listening.
pub async fn accept_until<F>(
    listener: TcpListener,
    mut stop: watch::Receiver<bool>,
    admit: &mut F,
) -> TcpListener
where
    F: FnMut(std::io::Result<(TcpStream, SocketAddr)>),
{
    loop {
        tokio::select! {
            r = listener.accept() => admit(r),
            _ = stop.changed() => break,
        }
    }
    listener
}

/// Accepts into `admit` until `stop`, then drains the accept queue (until it stays empty for
/// `BACKLOG_QUIET`, at most `BACKLOG_MAX`) and only then drops the listener: closing a
/// listener resets every connection still queued on it.
pub async fn accept_loop<F>(listener: TcpListener, stop: watch::Receiver<bool>, mut admit: F)
where
    F: FnMut(std::io::Result<(TcpStream, SocketAddr)>),
{
    let listener = accept_until(listener, stop, &mut admit).await;
    let deadline = tokio::time::Instant::now() + BACKLOG_MAX;
    let mut drained = 0usize;
    loop {
        let now = tokio::time::Instant::now();
        if now >= deadline {
            eprintln!("still routed to after {BACKLOG_MAX:?}: closing the listener anyway");
            break;
        }
        let quiet_until = deadline.min(now + BACKLOG_QUIET);
        match tokio::time::timeout_at(quiet_until, listener.accept()).await {
            Ok(r) => {
                admit(r);
                drained += 1;
            }
            Err(_) => break,
        }
    }
    eprintln!("accept queue drained ({drained} accepted after accepting stopped)");
}
