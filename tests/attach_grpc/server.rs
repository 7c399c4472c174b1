//! A gRPC health server that fails on purpose, for the attach client's gRPC tests on loopback.
//! It speaks gRPC over the h2 crate's server (the wire of `grpc.health.v1.Health/Check`: a
//! POST of one length-prefixed HealthCheckRequest, a HealthCheckResponse and `grpc-status` in
//! the trailers), answering SERVING until request `after` of each connection, then what the
//! test asked: UNAVAILABLE, NOT_SERVING, or gone (the socket closed under the call).

use bytes::Bytes;
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
