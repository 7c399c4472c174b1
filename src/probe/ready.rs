//! `/readyz` (200 until the drain flips it to 503) and `/healthz` (always 200), over a tiny
//! HTTP/1.1 responder: the kubelet needs nothing more.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Serves readiness and health until the process exits.
pub async fn serve(listener: TcpListener, draining: Arc<AtomicBool>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let draining = draining.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(5), answer(stream, draining)).await;
        });
    }
}

async fn answer(mut s: TcpStream, draining: Arc<AtomicBool>) -> std::io::Result<()> {
    let mut req = Vec::with_capacity(256);
    let mut buf = [0u8; 256];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 4096 {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        req.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&req);
    let path = text.split_whitespace().nth(1).unwrap_or("");
    let (status, body) = match path {
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
    s.shutdown().await
}
