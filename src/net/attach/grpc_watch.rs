//! `--grpc-watch`: the one `grpc.health.v1.Health/Watch` a gRPC connection holds beside its
//! unary calls, made by tonic-health's `HealthClient` on a stream of drainwatch's own HTTP/2
//! connection (`grpc_svc`), as a load balancer or a mesh holds one to learn a backend's health.
//! It runs as its own task so that each status message is stamped when it arrives, not when
//! the flow next looks. It records its answer (`attach_grpc_watch_opened`) and every status
//! message (`attach_grpc_watch_status`), and returns how it ended as the wire showed it; the
//! flow (`h2_flow`), which holds the connection's GOAWAY and socket end, names a cut from them
//! and writes `attach_grpc_watch_ended`.

use std::sync::Arc;

use bytes::Bytes;
use h2::client::SendRequest;
use http::HeaderMap;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

use super::Settings;
use super::emit::{Emitter, Failure};
use super::grpc_call;
use super::grpc_svc::{H2Service, Seen};
use super::h2_conn::{self, ExchangeError, Failed};
use crate::evidence::attach::FailureMechanism;
use crate::evidence::attach::watch::{MAX_WATCH_STATUSES, ServingStatus};
use crate::evidence::event::EventName;

/// How a held Watch ended, as the wire showed it.
#[derive(Debug)]
pub enum WatchEnd {
    /// A gRPC status (in the trailers, or trailers-only headers): the server ended the call.
    Status(u32),
    /// The call ended in a way the wire names on its own: an HTTP status other than 200, an
    /// end of stream without `grpc-status`.
    Failed(Failed),
    /// The transport failed the stream (or gave no answer within the request timeout): the
    /// flow names it from the connection's frames and socket.
    Transport(ExchangeError),
}

/// A held Watch's result.
#[derive(Debug)]
pub struct Held {
    /// The HTTP/2 stream it ran on, once sent.
    pub stream_id: Option<u32>,
    /// Whether it was answered (`attach_grpc_watch_opened` written).
    pub opened: bool,
    /// How it ended.
    pub end: WatchEnd,
}

/// Where a Watch's lines go: the flow and connection generation it belongs to.
#[derive(Clone)]
pub struct WatchLines {
    /// The emitter.
    pub emit: Emitter,
    /// The flow id.
    pub flow: String,
    /// The connection generation.
    pub generation: u64,
}

impl WatchLines {
    /// A line of `event` for this Watch on `stream_id`.
    pub fn line(
        &self,
        event: EventName,
        stream_id: Option<u32>,
    ) -> crate::evidence::event::EventLine {
        let mut l = self
            .emit
            .line(event)
            .flow(self.flow.as_str())
            .seq(self.generation);
        l.stream_id = stream_id;
        l
    }
}

/// Opens the Watch on a new stream of `send` (its answer bounded by the request timeout) and
/// holds it until it ends.
pub async fn hold(send: SendRequest<Bytes>, cfg: Arc<Settings>, out: WatchLines) -> Held {
    let svc = H2Service::new(send, &cfg.host, cfg.port, cfg.tls.is_some());
    let slot = svc.seen();
    let take = || {
        slot.lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default()
    };
    let stream_id = || slot.lock().ok().and_then(|s| s.stream_id);
    let service = grpc_call::target(&cfg).watch_service().to_string();
    let mut client = HealthClient::new(svc);
    let answered = tokio::time::timeout(
        cfg.request_timeout,
        client.watch(HealthCheckRequest { service }),
    )
    .await;
    let mut stream = match answered {
        Err(_) => {
            return Held {
                stream_id: stream_id(),
                opened: false,
                end: WatchEnd::Transport(ExchangeError::Timeout),
            };
        }
        Ok(Err(_)) => {
            let seen = take();
            return Held {
                stream_id: seen.stream_id,
                opened: false,
                end: refused(seen),
            };
        }
        Ok(Ok(r)) => r.into_inner(),
    };
    let id = stream_id();
    {
        let (status, instance) = slot
            .lock()
            .map(|s| (s.status, h2_conn::instance(&s.headers)))
            .unwrap_or_default();
        let mut l = out.line(EventName::AttachGrpcWatchOpened, id);
        l.status = status;
        l.instance = instance;
        out.emit.send(l);
    }
    let mut statuses = 0usize;
    // The call ends with a status (`Ok(None)`, or a non-OK one as `Err`) or a transport
    // failure (`Err`): which one is read from the slot below, not from tonic's `Status`.
    while let Ok(Some(m)) = stream.message().await {
        statuses += 1;
        // Past the cap the call is still held, its messages not written.
        if statuses <= MAX_WATCH_STATUSES {
            let mut l = out.line(EventName::AttachGrpcWatchStatus, id);
            l.result = Some(ServingStatus::of(m.status).as_str().into());
            out.emit.send(l);
        }
    }
    let seen = take();
    Held {
        stream_id: id,
        opened: true,
        end: ended(seen),
    }
}

/// The `grpc-status` the server sent: in the trailers, else in trailers-only headers.
fn grpc_status(trailers: Option<&HeaderMap>, headers: &HeaderMap) -> Option<u32> {
    trailers
        .and_then(|t| t.get("grpc-status"))
        .or_else(|| headers.get("grpc-status"))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

/// A Watch refused before its answer: the transport's failure first, then a status other
/// than 200, then a trailers-only status (UNIMPLEMENTED from a server without Watch, …).
fn refused(seen: Seen) -> WatchEnd {
    if let Some(e) = seen.transport {
        return WatchEnd::Transport(e);
    }
    match seen.status {
        Some(200) | None => ended(seen),
        Some(s) => WatchEnd::Failed(Failed::plain(Failure {
            mechanism: super::emit::status_result(s, 200).unwrap_or(FailureMechanism::Error),
            errno: None,
            detail: format!("Watch answered with HTTP status {s} (gRPC answers 200)"),
        })),
    }
}

/// How an answered Watch ended: the transport's failure, else its status, else a failure for
/// an end without `grpc-status`.
fn ended(seen: Seen) -> WatchEnd {
    if let Some(e) = seen.transport {
        return WatchEnd::Transport(e);
    }
    match grpc_status(seen.trailers.as_ref(), &seen.headers) {
        Some(code) => WatchEnd::Status(code),
        None => WatchEnd::Failed(Failed::plain(Failure {
            mechanism: FailureMechanism::Error,
            errno: None,
            detail: "the Watch ended without grpc-status".into(),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(k: &'static str, v: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(k, HeaderValue::from_static(v));
        h
    }

    #[test]
    fn the_status_is_read_from_the_trailers_then_the_headers() {
        let t = headers("grpc-status", "14");
        assert_eq!(grpc_status(Some(&t), &HeaderMap::new()), Some(14));
        assert_eq!(grpc_status(None, &headers("grpc-status", "12")), Some(12));
        assert_eq!(grpc_status(None, &HeaderMap::new()), None);
        let ok = Seen {
            status: Some(200),
            trailers: Some(headers("grpc-status", "0")),
            ..Seen::default()
        };
        assert!(matches!(ended(ok), WatchEnd::Status(0)));
        let bare = Seen {
            status: Some(200),
            ..Seen::default()
        };
        match ended(bare) {
            WatchEnd::Failed(f) => assert_eq!(f.failure.mechanism, FailureMechanism::Error),
            e => panic!("{e:?}"),
        }
        let gateway = Seen {
            status: Some(503),
            ..Seen::default()
        };
        match refused(gateway) {
            WatchEnd::Failed(f) => assert_eq!(f.failure.mechanism, FailureMechanism::Status5xx),
            e => panic!("{e:?}"),
        }
    }
}
