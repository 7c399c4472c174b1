//! A WebSocket service for the attach examples (tokio and tokio-tungstenite, which drainwatch
//! already builds, so no heavier crate enters the image). On one port: `GET /readyz` answers
//! 200 while ready (503 once draining); any other path is a WebSocket upgrade whose handshake
//! answers `X-Served-By: $POD_NAME`, text and binary messages are echoed and pings answered.
//! What SIGTERM does is the example's point: see `Shutdown`.
//!
//! Environment: `PORT` (default 8080; 0 picks a free port), `POD_NAME` (else the hostname),
//! `DRAIN_DELAY` seconds (default 5, the graceful example only), and for TLS `TLS_PORT` (unset:
//! no TLS listener; 0 picks a free port) with `TLS_DIR` (default /tls) holding `tls.crt` and
//! `tls.key` (PEM; the examples-tls Secret mounted there). Stdout's first line is
//! `listening <port>`, then `listening-tls <port>` when TLS is on: readiness signals for tests.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

// The environment, the SO_REUSEPORT bind and the pod name, as the HTTP and gRPC examples read them.
#[path = "listen.rs"]
#[allow(dead_code)] // its own accept loop stays: the WebSocket service routes on the request head
mod listen;

/// What the service does on SIGTERM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)] // each example binary compiles this module and constructs one variant
pub enum Shutdown {
    /// Fail readiness, keep serving (and accepting) for `DRAIN_DELAY` while endpoints drain,
    /// then send a close frame 1001 (going away) on every connection, wait up to `CLOSE_WAIT`
    /// for the clients' close frames, exit 0.
    Graceful,
    /// Exit at once: every connection ends without a close frame.
    Abrupt,
}

/// Longest wait for the clients' replies to the 1001 close frames.
const CLOSE_WAIT: Duration = Duration::from_secs(5);
/// Longest wait for a request head (a client that sends none is dropped).
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

struct State {
    pod: String,
    ready: AtomicBool,
    open: AtomicUsize,
    closing: watch::Receiver<bool>,
}

fn port_env(name: &str, default: u64) -> Option<u16> {
    if default == u64::MAX && std::env::var(name).is_err() {
        return None;
    }
    Some(
        u16::try_from(listen::env_u64(name, default)).unwrap_or_else(|_| {
            eprintln!("{name} must be 0-65535");
            std::process::exit(2)
        }),
    )
}

/// A stream whose first bytes were already read (the request head, to route on): they are
/// read again before the rest, so the WebSocket handshake sees the whole request.
struct Replay<S> {
    head: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Replay<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        if me.at < me.head.len() {
            let n = (me.head.len() - me.at).min(buf.remaining());
            buf.put_slice(&me.head[me.at..me.at + n]);
            me.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut me.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Replay<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, b)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Reads up to the end of the request head; the bytes read and the request's path.
async fn read_head<S: AsyncRead + Unpin>(s: &mut S) -> io::Result<Option<(Vec<u8>, String)>> {
    let mut buf = Vec::new();
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let line = String::from_utf8_lossy(&buf[..i]).into_owned();
            let path = line.split(' ').nth(1).unwrap_or("/").to_string();
            return Ok(Some((buf, path)));
        }
        if buf.len() > 16 * 1024 {
            return Ok(None);
        }
        let mut chunk = [0u8; 2048];
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// One connection: the readiness answer, or a WebSocket held until it ends or closing begins.
async fn handle<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, st: Arc<State>) {
    let Ok(Ok(Some((head, path)))) = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut s)).await
    else {
        return;
    };
    if path == "/readyz" {
        let (status, body) = if st.ready.load(Ordering::SeqCst) {
            ("200 OK", "ok\n")
        } else {
            ("503 Service Unavailable", "draining\n")
        };
        let resp = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = s.write_all(resp.as_bytes()).await;
        let _ = s.shutdown().await;
        return;
    }
    let pod = st.pod.clone();
    // The callback's signature is the crate's, large error type included.
    #[allow(clippy::result_large_err)]
    let served_by = move |_: &Request, mut r: Response| {
        if let Ok(v) = pod.parse() {
            r.headers_mut().insert("x-served-by", v);
        }
        Ok(r)
    };
    let replay = Replay {
        head,
        at: 0,
        inner: s,
    };
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(replay, served_by).await else {
        return;
    };
    st.open.fetch_add(1, Ordering::SeqCst);
    let mut closing = st.closing.clone();
    let mut closed_by_us = *closing.borrow();
    if closed_by_us {
        let _ = ws.close(Some(going_away())).await;
    }
    loop {
        tokio::select! {
            m = ws.next() => match m {
                // Pings are answered by the crate as it reads; echo the rest.
                Some(Ok(m @ (Message::Text(_) | Message::Binary(_)))) => {
                    if ws.send(m).await.is_err() {
                        break;
                    }
                }
                Some(Ok(_)) => {}
                // The client's close (or its reply to ours), or the connection's end.
                Some(Err(_)) | None => break,
            },
            _ = closing.changed(), if !closed_by_us => {
                closed_by_us = true;
                let _ = ws.close(Some(going_away())).await;
            }
        }
    }
    st.open.fetch_sub(1, Ordering::SeqCst);
}

fn going_away() -> CloseFrame {
    CloseFrame {
        code: CloseCode::Away,
        reason: "going away".into(),
    }
}

/// Accepts until `stop`; with `tls`, each connection's TLS handshake first.
async fn accept_loop(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    st: Arc<State>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let (s, _) = tokio::select! {
            r = listener.accept() => match r {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("accept failed: {e}");
                    continue;
                }
            },
            _ = stop.changed() => return,
        };
        let (st, tls) = (st.clone(), tls.clone());
        tokio::spawn(async move {
            match tls {
                None => handle(s, st).await,
                Some(a) => match tokio::time::timeout(HEAD_TIMEOUT, a.accept(s)).await {
                    Ok(Ok(t)) => handle(t, st).await,
                    Ok(Err(e)) => eprintln!("TLS handshake failed: {e}"),
                    Err(_) => eprintln!("TLS handshake timed out"),
                },
            }
        });
    }
}

/// The TLS acceptor of `TLS_DIR`'s `tls.crt` and `tls.key`.
fn acceptor() -> Result<TlsAcceptor, String> {
    let dir = std::env::var("TLS_DIR").unwrap_or_else(|_| "/tls".into());
    let crt = format!("{dir}/tls.crt");
    let key = format!("{dir}/tls.key");
    let certs = CertificateDer::pem_file_iter(&crt)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{crt}: {e}"))?;
    let key = PrivateKeyDer::from_pem_file(&key).map_err(|e| format!("{key}: {e}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
        .map_err(|e| format!("TLS configuration: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

async fn run(mode: Shutdown) -> io::Result<()> {
    let port = port_env("PORT", 8080).unwrap_or(8080);
    let tls_port = port_env("TLS_PORT", u64::MAX);
    let drain = Duration::from_secs(listen::env_u64("DRAIN_DELAY", 5));
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let listener = listen::bind(port)?;
    let (close_tx, close_rx) = watch::channel(false);
    let st = Arc::new(State {
        pod: listen::pod_name(),
        ready: AtomicBool::new(true),
        open: AtomicUsize::new(0),
        closing: close_rx,
    });
    println!("listening {}", listener.local_addr()?.port());
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut acceptors = vec![tokio::spawn(accept_loop(
        listener,
        None,
        st.clone(),
        stop_rx.clone(),
    ))];
    if let Some(tls_port) = tls_port {
        let a = acceptor().map_err(io::Error::other)?;
        let l = listen::bind(tls_port)?;
        println!("listening-tls {}", l.local_addr()?.port());
        acceptors.push(tokio::spawn(accept_loop(l, Some(a), st.clone(), stop_rx)));
    }
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
    let _ = stop_tx.send(true);
    for a in acceptors {
        let _ = a.await;
    }
    eprintln!(
        "sending close 1001 on {} connections",
        st.open.load(Ordering::SeqCst)
    );
    let _ = close_tx.send(true);
    let deadline = tokio::time::Instant::now() + CLOSE_WAIT;
    while st.open.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "exiting with {} connections open",
        st.open.load(Ordering::SeqCst)
    );
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
