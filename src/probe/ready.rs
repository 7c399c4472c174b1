//! `/readyz` (200 until the drain flips it to 503) and `/healthz` (always 200), over a tiny
//! HTTP/1.1 responder: the kubelet needs nothing more. Anything that can reach the port can
//! hold a connection, so each has a deadline and a size cap, and only so many are served at
//! once: a slowloris costs a few descriptors for a few seconds, never the flows' descriptors.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use socket2::SockRef;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use super::abuse::{Abuse, Refusals};
use crate::host;

/// The whole exchange (request head in, answer out) must fit in this; the kubelet's own probe
/// timeout defaults to 1 s.
pub const HEALTH_REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// The most request-head bytes read; a kubelet's request is about 100.
pub const MAX_HEALTH_REQUEST_BYTES: usize = 4096;
/// Health connections served at once; past it a connection is reset at once and counted.
pub const MAX_HEALTH_CONNECTIONS: usize = 64;

/// Serves readiness and health until the process exits, on a thread and runtime of its own:
/// the answer reflects the drain, never how long the flows' runtime takes to get to it. With
/// tens of thousands of flows starting at once a shared runtime answered the kubelet after its
/// timeout, and the endpoint left the Service before the trial began.
pub fn serve_apart(
    listener: std::net::TcpListener,
    draining: Arc<AtomicBool>,
    refusals: Arc<Refusals>,
) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    // Registered with this runtime's reactor, which only exists inside it.
    let listener = {
        let _inside = rt.enter();
        TcpListener::from_std(listener)?
    };
    std::thread::Builder::new()
        .name("readyz".into())
        .spawn(move || rt.block_on(serve(listener, draining, refusals)))?;
    Ok(())
}

/// Serves readiness and health until the process exits, on the runtime [`serve_apart`] gives
/// it.
async fn serve(listener: TcpListener, draining: Arc<AtomicBool>, refusals: Arc<Refusals>) {
    let slots = Arc::new(Semaphore::new(MAX_HEALTH_CONNECTIONS));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                refusals.note(Abuse::AcceptFailed, host::errno_name(&e), || {
                    format!("readyz: {e}")
                });
                tokio::time::sleep(super::tcp::ACCEPT_RETRY_AFTER).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            let _ = SockRef::from(&stream).set_linger(Some(Duration::ZERO));
            drop(stream);
            refusals.note(Abuse::HealthRefused, None, || {
                format!("{peer}: {MAX_HEALTH_CONNECTIONS} health connections already open")
            });
            continue;
        };
        let draining = draining.clone();
        let refusals = refusals.clone();
        tokio::spawn(async move {
            let answered =
                tokio::time::timeout(HEALTH_REQUEST_DEADLINE, answer(stream, draining)).await;
            match answered {
                Err(_) => refusals.note(Abuse::HealthTimeout, None, || {
                    format!(
                        "{peer}: no complete request within {}s",
                        HEALTH_REQUEST_DEADLINE.as_secs()
                    )
                }),
                Ok(Ok(Head::TooLarge)) => refusals.note(Abuse::HealthTooLarge, None, || {
                    format!(
                        "{peer}: no end of the request head in {MAX_HEALTH_REQUEST_BYTES} bytes"
                    )
                }),
                Ok(_) => {}
            }
            drop(slot);
        });
    }
}

/// How the request head ended.
enum Head {
    /// Complete, or the peer closed: answered.
    Answered,
    /// Past [`MAX_HEALTH_REQUEST_BYTES`]: answered 431.
    TooLarge,
}

/// Reads the request head: until its blank line or the peer's close (true), or the cap (false).
async fn read_head(s: &mut TcpStream) -> std::io::Result<(Vec<u8>, bool)> {
    let mut req = Vec::with_capacity(256);
    let mut buf = [0u8; 256];
    while req.len() < MAX_HEALTH_REQUEST_BYTES {
        let room = (MAX_HEALTH_REQUEST_BYTES - req.len()).min(buf.len());
        let n = s.read(&mut buf[..room]).await?;
        if n == 0 {
            return Ok((req, true));
        }
        // Only the bytes just read, and the three before them, can complete the blank line:
        // a byte-at-a-time sender costs one short scan per byte, not a rescan of the head.
        let scan_from = req.len().saturating_sub(3);
        req.extend_from_slice(&buf[..n]);
        if req[scan_from..].windows(4).any(|w| w == b"\r\n\r\n") {
            return Ok((req, true));
        }
    }
    Ok((req, false))
}

async fn answer(mut s: TcpStream, draining: Arc<AtomicBool>) -> std::io::Result<Head> {
    let (req, complete) = read_head(&mut s).await?;
    let text = String::from_utf8_lossy(&req);
    let path = text.split_whitespace().nth(1).unwrap_or("");
    let (status, body) = match path {
        _ if !complete => (
            "431 Request Header Fields Too Large",
            "request head too large",
        ),
        "/readyz" if draining.load(Ordering::SeqCst) => ("503 Service Unavailable", "draining"),
        "/readyz" => ("200 OK", "ready"),
        "/healthz" => ("200 OK", "ok"),
        _ => ("404 Not Found", "not found"),
    };
    let resp = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(resp.as_bytes()).await?;
    s.shutdown().await?;
    Ok(if complete {
        Head::Answered
    } else {
        Head::TooLarge
    })
}
