//! A gRPC health server that fails on purpose, for the attach client's gRPC tests on loopback.
//! It speaks gRPC over the h2 crate's server (the wire of `grpc.health.v1.Health/Check`: a
//! POST of one length-prefixed HealthCheckRequest, a HealthCheckResponse and `grpc-status` in
//! the trailers), answering SERVING until request `after` of each connection, then what the
//! test asked: UNAVAILABLE, NOT_SERVING, or gone (the socket closed under the call).
//! `GrpcServer::watching` serves `grpc.health.v1.Health/Watch` too (SERVING at once, a
//! HealthCheckResponse per message), and ends each connection's Watch as the test asked: the
//! good drain (NOT_SERVING, GOAWAY, then the Watch ended with OK and the connection closed),
//! RST_STREAM of the Watch, a reset of the connection without GOAWAY, or GOAWAY then a reset
//! with the Watch still open.

use std::time::Duration;

use bytes::Bytes;
use h2::Reason;
use h2::SendStream;
use h2::server::SendResponse;
use http::{HeaderMap, HeaderValue, Response};

use crate::ws_server::loopback_runtime;

/// What the server answers from call `after` of each connection on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Status 14 UNAVAILABLE (trailers-only).
    Unavailable,
    /// OK with the health status NOT_SERVING (2).
    NotServing,
    /// OK with the health status SERVICE_UNKNOWN (3).
    ServiceUnknown,
    /// Closes the connection with the call unanswered and no GOAWAY.
    Gone,
}

pub struct GrpcServer {
    pub port: u16,
    _rt: tokio::runtime::Runtime,
}

impl GrpcServer {
    pub fn start(fault: Fault, after: u32) -> Self {
        let (l, port, rt) = loopback_runtime();
        rt.spawn(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            while let Ok((s, _)) = l.accept().await {
                tokio::spawn(serve(s, fault, after));
            }
        });
        Self { port, _rt: rt }
    }
}

/// How each connection's Watch ends, a moment after it was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFault {
    /// NOT_SERVING on the Watch, then GOAWAY, then the Watch ended with status OK; the
    /// connection closes once its streams are done.
    Drain,
    /// RST_STREAM CANCEL of the Watch; the connection goes on.
    RstStream,
    /// The connection reset (SO_LINGER 0) with the Watch open, no GOAWAY.
    ExitRst,
    /// GOAWAY, then the connection reset with the Watch still open.
    GoawayThenRst,
}

impl GrpcServer {
    /// A server of Check (SERVING) and Watch, each connection's Watch ended as `fault` says.
    pub fn watching(fault: WatchFault) -> Self {
        let (l, port, rt) = loopback_runtime();
        rt.spawn(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            while let Ok((s, _)) = l.accept().await {
                if matches!(fault, WatchFault::ExitRst | WatchFault::GoawayThenRst) {
                    socket2::SockRef::from(&s)
                        .set_linger(Some(Duration::ZERO))
                        .unwrap();
                }
                tokio::spawn(serve_watch(s, fault));
            }
        });
        Self { port, _rt: rt }
    }
}

/// One HealthCheckResponse message with `status`.
fn message(status: u8) -> Bytes {
    Bytes::from(vec![0, 0, 0, 0, 2, 0x08, status])
}

async fn serve_watch(s: tokio::net::TcpStream, fault: WatchFault) {
    let Ok(mut conn) = h2::server::handshake(s).await else {
        return;
    };
    let mut held: Option<SendStream<Bytes>> = None;
    let mut step = 0u8;
    let act = tokio::time::sleep(Duration::from_secs(3600));
    tokio::pin!(act);
    let later = |ms: u64| tokio::time::Instant::now() + Duration::from_millis(ms);
    loop {
        let next = tokio::select! {
            next = conn.accept() => next,
            () = &mut act, if held.is_some() => {
                let Some(w) = held.as_mut() else { continue };
                step += 1;
                match (fault, step) {
                    (WatchFault::Drain, 1) => {
                        let _ = w.send_data(message(2), false);
                        act.as_mut().reset(later(150));
                    }
                    (WatchFault::Drain, 2) => {
                        conn.graceful_shutdown();
                        act.as_mut().reset(later(150));
                    }
                    // A reset discards what the client has not read yet: the GOAWAY is given
                    // time to be read first, as a server killed after its grace period gives.
                    (WatchFault::GoawayThenRst, 1) => {
                        conn.graceful_shutdown();
                        act.as_mut().reset(later(500));
                    }
                    (WatchFault::Drain, _) => {
                        let mut t = HeaderMap::new();
                        t.insert("grpc-status", HeaderValue::from_static("0"));
                        let _ = w.send_trailers(t);
                        held = None;
                    }
                    (WatchFault::RstStream, _) => {
                        w.send_reset(Reason::CANCEL);
                        held = None;
                    }
                    // Dropping the connection resets the socket (SO_LINGER 0).
                    (WatchFault::ExitRst | WatchFault::GoawayThenRst, _) => return,
                }
                continue;
            }
        };
        let Some(Ok((req, mut respond))) = next else {
            return;
        };
        if req.uri().path() != "/grpc.health.v1.Health/Watch" {
            health(respond, 1);
            continue;
        }
        // One Watch per connection is held; another is answered and ended at once.
        let Ok(mut w) = respond.send_response(head(None), false) else {
            continue;
        };
        let _ = w.send_data(message(1), false);
        if held.is_none() && step == 0 {
            held = Some(w);
            act.as_mut().reset(later(300));
        } else {
            let mut t = HeaderMap::new();
            t.insert("grpc-status", HeaderValue::from_static("0"));
            let _ = w.send_trailers(t);
        }
    }
}

fn head(grpc_status: Option<&'static str>) -> Response<()> {
    let mut b = Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .header("x-served-by", "grpc-a");
    if let Some(s) = grpc_status {
        b = b
            .header("grpc-status", s)
            .header("grpc-message", "shutting down");
    }
    b.body(()).unwrap()
}

fn health(mut r: SendResponse<Bytes>, status: u8) {
    let Ok(mut s) = r.send_response(head(None), false) else {
        return;
    };
    let _ = s.send_data(Bytes::from(vec![0, 0, 0, 0, 2, 0x08, status]), false);
    let mut t = HeaderMap::new();
    t.insert("grpc-status", HeaderValue::from_static("0"));
    let _ = s.send_trailers(t);
}

async fn serve(s: tokio::net::TcpStream, fault: Fault, after: u32) {
    let Ok(mut conn) = h2::server::handshake(s).await else {
        return;
    };
    let mut n = 0u32;
    while let Some(Ok((req, mut respond))) = conn.accept().await {
        assert_eq!(req.uri().path(), "/grpc.health.v1.Health/Check");
        n += 1;
        if n < after {
            health(respond, 1);
            continue;
        }
        match fault {
            Fault::Unavailable => {
                let _ = respond.send_response(head(Some("14")), true);
            }
            Fault::NotServing => health(respond, 2),
            Fault::ServiceUnknown => health(respond, 3),
            Fault::Gone => return,
        }
    }
}
