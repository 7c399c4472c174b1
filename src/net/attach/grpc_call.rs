//! gRPC's unary call, made by tonic's client on a new stream of drainwatch's own HTTP/2
//! connection (`grpc_svc`): `grpc.health.v1.Health/Check` through tonic-health's generated
//! client, or the method named by `--grpc-method`, sent an empty message through a codec of
//! raw bytes (any service can be gated without its protos). The verdict is read from what the
//! wire showed (the slot `grpc_svc` keeps), not from tonic's folding of it into one `Status`.

use bytes::{Buf, BufMut, Bytes};
use h2::client::SendRequest;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

use super::Settings;
use super::emit::Failure;
use super::grpc_svc::{H2Service, Seen};
use super::h2_conn::{Called, ExchangeError, Failed};
use crate::evidence::attach::{AttachGrpc, FailureMechanism};

/// HealthCheckResponse.ServingStatus SERVING.
const SERVING: i32 = 1;
/// HealthCheckResponse.ServingStatus NOT_SERVING: what a draining server answers on purpose.
const NOT_SERVING: i32 = 2;

/// What the arm calls: the flags', else the whole server's health check.
pub fn target(cfg: &Settings) -> AttachGrpc {
    cfg.grpc.clone().unwrap_or(AttachGrpc {
        method: None,
        service: Some(String::new()),
        watch: false,
    })
}

/// One call on a new stream of `send`, bounded by the request timeout: its answer judged, or
/// why the transport gave none.
pub async fn call(send: SendRequest<Bytes>, cfg: &Settings) -> Result<Called, ExchangeError> {
    let svc = H2Service::new(send, &cfg.host, cfg.port, cfg.tls.is_some());
    let seen = svc.seen();
    let g = target(cfg);
    let health = g.method.is_none();
    let made = async move {
        match g.method {
            None => HealthClient::new(svc)
                .check(HealthCheckRequest {
                    service: g.service.unwrap_or_default(),
                })
                .await
                .map(|r| Some(r.into_inner().status)),
            Some(m) => {
                let path = http::uri::PathAndQuery::try_from(m.as_str())
                    .map_err(|e| Status::internal(format!("--grpc-method {m}: {e}")))?;
                let mut grpc = tonic::client::Grpc::new(svc);
                grpc.unary(tonic::Request::new(Bytes::new()), path, Raw)
                    .await
                    .map(|_| None)
            }
        }
    };
    let r = tokio::time::timeout(cfg.request_timeout, made).await;
    let seen = seen
        .lock()
        .map(|mut s| std::mem::take(&mut *s))
        .unwrap_or_default();
    match r {
        Err(_) => Err(ExchangeError::Timeout),
        Ok(r) => verdict(r, seen, health),
    }
}

/// The call's verdict: the transport's failure first (the flow names it from the frames and
/// the socket), then HTTP 200, then `grpc-status` (present, OK), then for a health check its
/// serving status.
fn verdict(
    r: Result<Option<i32>, Status>,
    seen: Seen,
    health: bool,
) -> Result<Called, ExchangeError> {
    if let Some(e) = seen.transport {
        return Err(e);
    }
    let verdict = match seen.status {
        None => Err(fail(
            FailureMechanism::Error,
            format!(
                "no answer: {}",
                r.err().map(|s| s.message().to_string()).unwrap_or_default()
            ),
            None,
        )),
        Some(200) => judge(r, &seen, health),
        Some(s) => Err(fail(
            super::emit::status_result(s, 200).unwrap_or(FailureMechanism::Error),
            format!("HTTP status {s} (gRPC answers 200)"),
            None,
        )),
    };
    Ok(Called {
        status: seen.status,
        headers: seen.headers,
        verdict,
    })
}

fn judge(r: Result<Option<i32>, Status>, seen: &Seen, health: bool) -> Result<(), Failed> {
    let has_status = seen
        .trailers
        .as_ref()
        .is_some_and(|t| t.contains_key("grpc-status"))
        || seen.headers.contains_key("grpc-status");
    let serving = match r {
        Err(_) if !has_status => {
            return Err(fail(
                FailureMechanism::Error,
                "the call ended without grpc-status".into(),
                None,
            ));
        }
        Err(st) => {
            let code = u32::try_from(st.code() as i32).unwrap_or(u32::MAX);
            return Err(fail(
                mechanism_of(code),
                format!("{}: {}", code_name(code), st.message()),
                Some(code_name(code)),
            ));
        }
        Ok(s) => s,
    };
    match serving {
        // NOT_SERVING is an answer, not a failure: a server that drains well says it on purpose
        // (its readiness) while it keeps serving, and counting it failed would fail every
        // graceful shutdown. UNKNOWN and SERVICE_UNKNOWN mean the check asks about nothing.
        Some(SERVING | NOT_SERVING) => Ok(()),
        None if !health => Ok(()),
        s => Err(fail(
            FailureMechanism::GrpcNotServing,
            format!("health status {}", serving_name(s)),
            None,
        )),
    }
}

/// The codec of `--grpc-method`: the message as raw bytes, so no proto is needed (the request
/// is empty, the answer is read and dropped).
#[derive(Debug, Clone, Copy, Default)]
struct Raw;

impl Codec for Raw {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        buf.put(item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(buf.copy_to_bytes(buf.remaining())))
    }
}

/// The mechanism of a non-OK status `code`.
pub fn mechanism_of(code: u32) -> FailureMechanism {
    match code {
        1 => FailureMechanism::GrpcCancelled,
        4 => FailureMechanism::GrpcDeadlineExceeded,
        14 => FailureMechanism::GrpcUnavailable,
        _ => FailureMechanism::GrpcStatus,
    }
}

/// The name of status `code` as the gRPC spec spells it; an unknown one as its number.
pub fn code_name(code: u32) -> String {
    const CODES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    usize::try_from(code)
        .ok()
        .and_then(|i| CODES.get(i))
        .map_or_else(|| code.to_string(), |n| (*n).to_string())
}

fn fail(m: FailureMechanism, detail: String, grpc: Option<String>) -> Failed {
    Failed {
        failure: Failure {
            mechanism: m,
            errno: None,
            detail,
        },
        h2_code: None,
        grpc_code: grpc,
    }
}

fn serving_name(s: Option<i32>) -> &'static str {
    match s {
        Some(0) | None => "UNKNOWN",
        Some(1) => "SERVING",
        Some(2) => "NOT_SERVING",
        Some(3) => "SERVICE_UNKNOWN",
        Some(_) => "an unknown value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(trailers: Option<(&'static str, &'static str)>) -> Seen {
        let mut s = Seen {
            status: Some(200),
            ..Seen::default()
        };
        s.trailers = trailers.map(|(k, v)| {
            let mut h = http::HeaderMap::new();
            h.insert(k, http::HeaderValue::from_static(v));
            h
        });
        s
    }

    #[test]
    fn codes_and_mechanisms_are_named() {
        assert_eq!(code_name(14), "UNAVAILABLE");
        assert_eq!(code_name(99), "99");
        assert_eq!(mechanism_of(14), FailureMechanism::GrpcUnavailable);
        assert_eq!(mechanism_of(1), FailureMechanism::GrpcCancelled);
        assert_eq!(mechanism_of(4), FailureMechanism::GrpcDeadlineExceeded);
        assert_eq!(mechanism_of(13), FailureMechanism::GrpcStatus);
    }

    #[test]
    fn the_verdict_reads_the_wire_not_tonics_folding() {
        let ok = seen(Some(("grpc-status", "0")));
        assert!(judge(Ok(Some(SERVING)), &ok, true).is_ok());
        assert!(judge(Ok(Some(NOT_SERVING)), &ok, true).is_ok());
        let e = judge(Ok(Some(3)), &ok, true).unwrap_err();
        assert_eq!(e.failure.mechanism, FailureMechanism::GrpcNotServing);
        assert!(judge(Ok(None), &ok, false).is_ok());
        let unavailable = seen(Some(("grpc-status", "14")));
        let e = judge(Err(Status::unavailable("draining")), &unavailable, true).unwrap_err();
        assert_eq!(e.failure.mechanism, FailureMechanism::GrpcUnavailable);
        assert_eq!(e.grpc_code.as_deref(), Some("UNAVAILABLE"));
        let e = judge(Err(Status::unknown("no status")), &seen(None), true).unwrap_err();
        assert_eq!(e.failure.mechanism, FailureMechanism::Error);
        let mut not_ok = seen(None);
        not_ok.status = Some(503);
        let c = verdict(Err(Status::unavailable("503")), not_ok, true).unwrap();
        assert_eq!(c.status, Some(503));
        assert!(c.verdict.is_err());
    }
}
