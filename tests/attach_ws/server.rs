//! A WebSocket server that fails on purpose, for the attach client's WebSocket tests on
//! loopback: it completes every handshake (tokio-tungstenite), answers pings, and after a
//! number of pings on a connection does what the test asked: a close frame, a FIN without
//! one, a reset, or silence.

use std::net::TcpListener;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use socket2::SockRef;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

/// What the server does after `after` pings on a connection.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// A close frame with this code and the reason `restarting`.
    Close(u16),
    /// FIN (shutdown of its write side) without a close frame.
    Fin,
    /// RST (SO_LINGER 0).
    Reset,
    /// Holds the connection and reads nothing more, so no pong is sent.
    Silent,
}

/// The running server; dropping it stops it.
pub struct WsServer {
    pub port: u16,
    _rt: tokio::runtime::Runtime,
}

/// The TCP socket under a stream, for SO_LINGER.
pub trait Socket {
    fn tcp(&self) -> &TcpStream;
}

impl Socket for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Socket for tokio_rustls::server::TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref().0
    }
}

/// A loopback listener on a free port (the test's own, so port 0 and keeping the socket is
/// safe), ready for tokio, and the one-thread runtime a test server runs on.
pub fn loopback_runtime() -> (TcpListener, u16, tokio::runtime::Runtime) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    (l, port, rt)
}

impl WsServer {
    pub fn start(fault: Fault, after: u32) -> Self {
        Self::start_with(fault, after, None)
    }

    /// The same over TLS: `acceptor`'s handshake first (a failed one ends the connection).
    pub fn start_with(fault: Fault, after: u32, acceptor: Option<TlsAcceptor>) -> Self {
        let (l, port, rt) = loopback_runtime();
        rt.spawn(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            while let Ok((s, _)) = l.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    match acceptor {
                        None => serve(s, fault, after).await,
                        Some(a) => {
                            if let Ok(t) = a.accept(s).await {
                                serve(t, fault, after).await;
                            }
                        }
                    }
                });
            }
        });
        Self { port, _rt: rt }
    }
}

async fn serve<S: AsyncRead + AsyncWrite + Socket + Unpin>(s: S, fault: Fault, after: u32) {
    // The callback's signature is the crate's, large error type included.
    #[allow(clippy::result_large_err)]
    let name = |_: &Request, mut r: Response| {
        r.headers_mut()
            .insert("x-served-by", "ws-test".parse().unwrap());
        Ok(r)
    };
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(s, name).await else {
        return;
    };
    let mut pings = 0;
    while pings < after {
        match ws.next().await {
            Some(Ok(Message::Ping(_))) => pings += 1,
            Some(Ok(_)) => {}
            _ => return,
        }
    }
    // The last ping's pong is queued by the crate; flushing sends it before the fault.
    let _ = ws.flush().await;
    match fault {
        Fault::Close(code) => {
            let frame = CloseFrame {
                code: CloseCode::from(code),
                reason: "restarting".into(),
            };
            let _ = ws.close(Some(frame)).await;
            // Read the client's reply to complete the closing handshake.
            while let Some(Ok(_)) = ws.next().await {}
        }
        Fault::Fin => {
            let _ = ws.get_mut().shutdown().await;
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
        Fault::Reset => {
            SockRef::from(ws.get_ref().tcp())
                .set_linger(Some(Duration::ZERO))
                .unwrap();
            drop(ws);
        }
        Fault::Silent => tokio::time::sleep(Duration::from_secs(30)).await,
    }
}
