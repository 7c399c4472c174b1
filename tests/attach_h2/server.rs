//! An HTTP/2 server that fails on purpose (the h2 crate's server), for the attach client's
//! HTTP/2 tests on loopback: it answers GETs with 200 and `x-served-by`, and on every
//! connection, at request number `after`, does what the test asked: a graceful shutdown
//! (GOAWAY NO_ERROR, the open streams answered, then the end), a GOAWAY followed by a reset of
//! the stream it holds, an RST_STREAM of that one request, or an exit without GOAWAY (FIN or
//! RST under the held stream).

use std::time::Duration;

use bytes::Bytes;
use h2::Reason;
use h2::server::SendResponse;
use http::{Response, StatusCode};
use tokio::io::{AsyncRead, AsyncWrite};

use tokio_rustls::TlsAcceptor;

use crate::ws_server::loopback_runtime;

/// What the server does at request `after` of each connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `graceful_shutdown`: GOAWAY NO_ERROR (h2's two-step: 2^31-1, a PING, then the last
    /// stream), request `after` still answered, then the connection's end.
    Graceful,
    /// GOAWAY NO_ERROR naming request `after`'s stream as processed, then RST_STREAM CANCEL
    /// of it.
    GoawayThenReset,
    /// RST_STREAM INTERNAL_ERROR of request `after` only; the connection goes on.
    RstStream,
    /// Closes the socket (FIN) with request `after` unanswered and no GOAWAY.
    ExitFin,
    /// Resets the socket (RST, SO_LINGER 0) with request `after` unanswered and no GOAWAY.
    ExitRst,
}

/// The running server; dropping it stops it.
pub struct H2Server {
    pub port: u16,
    _rt: tokio::runtime::Runtime,
}

impl H2Server {
    pub fn start(fault: Fault, after: u32) -> Self {
        Self::start_with(fault, after, None)
    }

    /// The same over TLS: `acceptor`'s handshake first.
    pub fn start_with(fault: Fault, after: u32, acceptor: Option<TlsAcceptor>) -> Self {
        let (l, port, rt) = loopback_runtime();
        rt.spawn(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            while let Ok((s, _)) = l.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    if fault == Fault::ExitRst {
                        socket2::SockRef::from(&s)
                            .set_linger(Some(Duration::ZERO))
                            .unwrap();
                    }
                    match acceptor {
                        Some(a) => {
                            if let Ok(t) = a.accept(s).await {
                                serve(t, fault, after).await;
                            }
                        }
                        None => serve(s, fault, after).await,
                    }
                });
            }
        });
        Self { port, _rt: rt }
    }
}

fn ok() -> Response<()> {
    Response::builder()
        .status(StatusCode::OK)
        .header("x-served-by", "h2-a")
        .body(())
        .unwrap()
}

async fn answer(mut r: SendResponse<Bytes>) {
    if let Ok(mut s) = r.send_response(ok(), false) {
        let _ = s.send_data(Bytes::from_static(b"ok\n"), true);
    }
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(io: S, fault: Fault, after: u32) {
    let Ok(mut conn) = h2::server::handshake(io).await else {
        return;
    };
    let mut n = 0u32;
    let mut held: Option<SendResponse<Bytes>> = None;
    let act = tokio::time::sleep(Duration::from_secs(3600));
    tokio::pin!(act);
    loop {
        let next = tokio::select! {
            next = conn.accept() => next,
            () = &mut act, if held.is_some() => {
                let Some(mut r) = held.take() else { continue };
                match fault {
                    Fault::GoawayThenReset => r.send_reset(Reason::CANCEL),
                    // Dropping the connection closes the socket: FIN, or RST with SO_LINGER 0.
                    _ => return,
                }
                continue;
            }
        };
        let Some(Ok((_req, respond))) = next else {
            return;
        };
        n += 1;
        if n != after {
            tokio::spawn(answer(respond));
            continue;
        }
        match fault {
            Fault::Graceful => {
                conn.graceful_shutdown();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    answer(respond).await;
                });
            }
            Fault::RstStream => {
                let mut r = respond;
                r.send_reset(Reason::INTERNAL_ERROR);
            }
            Fault::GoawayThenReset | Fault::ExitFin | Fault::ExitRst => {
                if fault == Fault::GoawayThenReset {
                    conn.graceful_shutdown();
                }
                held = Some(respond);
                act.as_mut()
                    .reset(tokio::time::Instant::now() + Duration::from_millis(200));
            }
        }
    }
}
