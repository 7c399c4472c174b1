//! A tiny HTTP/1.1 and h2c service for the attach examples, on tokio (and the h2 crate for
//! HTTP/2) alone so it builds static with musl into a FROM scratch image. `GET /readyz` answers
//! 200 while ready (503 once draining); any other GET answers 200 with `X-Served-By: $POD_NAME`.
//! A connection that opens with the HTTP/2 preface is served as h2c (`h2c.rs`), any other as
//! HTTP/1.1, on the same port. What SIGTERM does is the example's point: see `Shutdown`.
//!
//! Environment: `PORT` (default 8080; 0 picks a free port), `POD_NAME` (else the hostname),
//! `DRAIN_DELAY` seconds (default 5, the graceful example only). The first stdout line is
//! `listening <port>`, a readiness signal for tests. The port is bound with SO_REUSEPORT, so
//! several replicas on one host share it. Closing one replica's listener resets the dials still
//! in its accept queue unless `net.ipv4.tcp_migrate_req` is 1, which hands them to another
//! replica of the group: the tests that share a port set it in a network namespace of theirs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

#[path = "h2c.rs"]
mod h2c;
#[path = "listen.rs"]
mod listen;

/// What the service does on SIGTERM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)] // each example binary compiles this module and constructs one variant
pub enum Shutdown {
    /// Fail readiness, keep serving for `DRAIN_DELAY` while endpoints drain, stop accepting
    /// once the accept queue is drained (`listen::accept_loop`), then close keep-alive
    /// connections (`Connection: close` on the next response, FIN if idle; on HTTP/2 a
    /// graceful GOAWAY), finish in-flight requests, exit 0.
    Graceful,
    /// Exit at once: every connection is closed under its clients' feet (no GOAWAY on HTTP/2).
    Abrupt,
    /// Stop calling accept() but keep the listening socket open, its backlog cut to
    /// `STUCK_BACKLOG`, and stay alive until SIGKILL (the end of the grace period), as a
    /// service whose accept loop is wedged does. The kernel completes a handshake or two into
    /// the queue nobody reads and then drops every new SYN: dials time out, none is refused.
    /// Connections accepted before SIGTERM go on being served.
    Stuck,
}

/// The accept backlog once stuck: `listen(0)` lets one completed handshake wait in the queue;
/// past it the kernel drops SYNs (it never answers a full accept queue with a reset).
const STUCK_BACKLOG: i32 = 0;

/// How long a keep-alive connection may stay idle once closing began before it gets a FIN:
/// long enough that a client sending every few hundred ms gets `Connection: close` instead.
const IDLE_CLOSE: Duration = Duration::from_secs(1);
/// Longest wait for in-flight requests after closing began.
const FINISH: Duration = Duration::from_secs(10);

struct State {
    pod: String,
    ready: AtomicBool,
    open: AtomicUsize,
    closing: watch::Receiver<bool>,
}

/// One request head: the path and whether the client asked to close.
struct Request {
    path: String,
    close: bool,
}

/// Reads one request head (and skips a body); `None` at a clean end of the connection.
async fn read_request(s: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<Option<Request>> {
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).into_owned();
            buf.drain(..i + 4);
            let mut lines = head.split("\r\n");
            let path = lines
                .next()
                .and_then(|l| l.split(' ').nth(1))
                .unwrap_or("/")
                .to_string();
            let mut close = head.starts_with("HTTP/1.0");
            let mut body = 0usize;
            for l in lines {
                let Some((k, v)) = l.split_once(':') else {
                    continue;
                };
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_ascii_lowercase());
                if k == "connection" {
                    close = v.contains("close");
                } else if k == "content-length" {
                    body = v.parse().unwrap_or(0);
                }
            }
            while buf.len() < body {
                let mut chunk = [0u8; 4096];
                let n = s.read(&mut chunk).await?;
                if n == 0 {
                    return Ok(None);
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            buf.drain(..body);
            return Ok(Some(Request { path, close }));
        }
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// What a request for `path` is answered: status code, reason phrase, body.
fn answer(st: &State, path: &str) -> (u16, &'static str, String) {
    if path == "/readyz" {
        if st.ready.load(Ordering::SeqCst) {
            (200, "OK", "ok\n".to_string())
        } else {
            (503, "Service Unavailable", "draining\n".to_string())
        }
    } else {
        (200, "OK", format!("hello from {}\n", st.pod))
    }
}

async fn handle(mut s: TcpStream, st: Arc<State>) {
    let mut buf = Vec::new();
    let mut closing = st.closing.clone();
    // The first bytes decide the protocol, under the same idle rule as a keep-alive
    // connection: a connection that never speaks is closed IDLE_CLOSE after closing began.
    let sniffed = loop {
        let next = if *closing.borrow() {
            match tokio::time::timeout(IDLE_CLOSE, h2c::sniff(&mut s, &mut buf)).await {
                Ok(r) => r,
                Err(_) => break None,
            }
        } else {
            tokio::select! {
                r = h2c::sniff(&mut s, &mut buf) => r,
                _ = closing.changed() => continue,
            }
        };
        break next.ok().flatten();
    };
    match sniffed {
        Some(h2c::Sniffed::Http2) => {
            let io = h2c::Rewind::new(buf, s);
            h2c::serve(io, &st.pod, closing, |path| {
                let (status, _, body) = answer(&st, path);
                (status, body)
            })
            .await;
        }
        Some(h2c::Sniffed::Http1) => http1(s, buf, &st, closing).await,
        None => {
            let _ = s.shutdown().await;
        }
    }
    st.open.fetch_sub(1, Ordering::SeqCst);
}

/// Serves HTTP/1.1 keep-alive requests; `buf` holds the bytes already read.
async fn http1(mut s: TcpStream, mut buf: Vec<u8>, st: &State, mut closing: watch::Receiver<bool>) {
    loop {
        // Idle: wait for the next request; once closing began, only for IDLE_CLOSE.
        let next = if *closing.borrow() {
            match tokio::time::timeout(IDLE_CLOSE, read_request(&mut s, &mut buf)).await {
                Ok(r) => r,
                Err(_) => break,
            }
        } else {
            tokio::select! {
                r = read_request(&mut s, &mut buf) => r,
                _ = closing.changed() => continue,
            }
        };
        let req = match next {
            Ok(Some(r)) => r,
            Ok(None) | Err(_) => break,
        };
        let (code, reason, body) = answer(st, &req.path);
        let close = req.close || *closing.borrow();
        let resp = format!(
            "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nX-Served-By: {}\r\nConnection: {}\r\n\r\n{body}",
            body.len(),
            st.pod,
            if close { "close" } else { "keep-alive" }
        );
        if s.write_all(resp.as_bytes()).await.is_err() || close {
            break;
        }
    }
    // FIN, not RST: the client has read every response it was sent.
    let _ = s.shutdown().await;
}

fn admit(accepted: std::io::Result<(TcpStream, std::net::SocketAddr)>, st: &Arc<State>) {
    match accepted {
        Ok((s, _)) => {
            st.open.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(handle(s, st.clone()));
        }
        Err(e) => eprintln!("accept failed: {e}"),
    }
}

async fn run(mode: Shutdown) -> std::io::Result<()> {
    let port = listen::env_port("PORT", 8080);
    let drain = Duration::from_secs(listen::env_u64("DRAIN_DELAY", 5));
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let listener = listen::bind(port)?;
    let (close_tx, close_rx) = watch::channel(false);
    let st = Arc::new(State {
        pod: listen::pod_name(),
        ready: AtomicBool::new(true),
        open: AtomicUsize::new(0),
        closing: close_rx.clone(),
    });
    println!("listening {}", listener.local_addr()?.port());
    let (stop_tx, stop_rx) = watch::channel(false);
    let admitting = st.clone();
    if mode == Shutdown::Stuck {
        return stuck(listener, stop_rx, stop_tx, admitting, term, int).await;
    }
    let acceptor = tokio::spawn(listen::accept_loop(listener, stop_rx, move |r| {
        admit(r, &admitting)
    }));
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    if mode == Shutdown::Abrupt {
        eprintln!("SIGTERM: exiting at once");
        std::process::exit(0);
    }
    eprintln!("SIGTERM: readiness 503, serving for {drain:?} while endpoints drain");
    st.ready.store(false, Ordering::SeqCst);
    tokio::time::sleep(drain).await;
    eprintln!("draining the accept queue, then closing the listener");
    let _ = stop_tx.send(true);
    let _ = acceptor.await;
    eprintln!("closing keep-alive connections");
    let _ = close_tx.send(true);
    let deadline = tokio::time::Instant::now() + FINISH;
    while st.open.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "exiting with {} connections open",
        st.open.load(Ordering::SeqCst)
    );
    Ok(())
}

/// `Shutdown::Stuck`: accepts until SIGTERM, then never again, with the listener kept open and
/// its backlog cut; the connections it has go on being served until the process is killed.
async fn stuck(
    listener: tokio::net::TcpListener,
    stop_rx: watch::Receiver<bool>,
    stop_tx: watch::Sender<bool>,
    st: Arc<State>,
    mut term: tokio::signal::unix::Signal,
    mut int: tokio::signal::unix::Signal,
) -> std::io::Result<()> {
    let acceptor = tokio::spawn(async move {
        let mut admitting = |r| admit(r, &st);
        listen::accept_until(listener, stop_rx, &mut admitting).await
    });
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    let _ = stop_tx.send(true);
    let listener = acceptor.await.map_err(std::io::Error::other)?;
    socket2::SockRef::from(&listener).listen(STUCK_BACKLOG)?;
    eprintln!(
        "SIGTERM: no longer accepting; the listener stays open with backlog {STUCK_BACKLOG}, so new dials time out; waiting for SIGKILL"
    );
    // Held until the process is killed: the open listener is the point.
    let _listener = listener;
    std::future::pending::<()>().await;
    Ok(())
}

/// Runs the service until SIGTERM does what `mode` says.
pub fn main_with(mode: Shutdown) {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("failed to start the runtime: {e}");
            std::process::exit(2)
        }
    };
    if let Err(e) = rt.block_on(run(mode)) {
        eprintln!("service failed: {e}");
        std::process::exit(2)
    }
}
