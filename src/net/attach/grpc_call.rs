//! gRPC's unary call on an HTTP/2 stream of drainwatch's own connection (the gRPC over HTTP/2
//! protocol: a POST of one length-prefixed message, the status in `grpc-status` of the
//! trailers, or of the headers of a trailers-only response). The only messages written or read
//! are `grpc.health.v1`'s HealthCheckRequest (field 1, `service`) and HealthCheckResponse
//! (field 1, `status`), and the empty message another named method is sent.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request};

use super::Settings;
use super::emit::Failure;
use super::h2_conn::{Answer, Failed};
use crate::evidence::attach::FailureMechanism;

/// HealthCheckResponse.ServingStatus SERVING.
const SERVING: u64 = 1;
/// HealthCheckResponse.ServingStatus NOT_SERVING: what a draining server answers on purpose.
const NOT_SERVING: u64 = 2;

/// The call's request: the method's path as `:path`, the message framed.
pub fn request(cfg: &Settings) -> (Request<()>, Option<Bytes>) {
    let g = cfg
        .grpc
        .clone()
        .unwrap_or(crate::evidence::attach::AttachGrpc {
            method: None,
            service: Some(String::new()),
        });
    let scheme = if cfg.tls.is_some() { "https" } else { "http" };
    let uri = format!("{scheme}://{}:{}{}", cfg.host, cfg.port, g.method_path());
    let mut r = Request::new(());
    *r.method_mut() = http::Method::POST;
    *r.uri_mut() = uri.parse().unwrap_or_default();
    let h = r.headers_mut();
    h.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    h.insert(http::header::TE, HeaderValue::from_static("trailers"));
    h.insert(
        http::header::USER_AGENT,
        HeaderValue::from_static("drainwatch"),
    );
    let msg = g.service.as_deref().map(health_request).unwrap_or_default();
    (r, Some(frame(&msg)))
}

/// HealthCheckRequest{service}: field 1, length-delimited; empty when the service is.
fn health_request(service: &str) -> Vec<u8> {
    if service.is_empty() {
        return Vec::new();
    }
    let mut v = vec![0x0a];
    varint(service.len() as u64, &mut v);
    v.extend_from_slice(service.as_bytes());
    v
}

fn varint(mut n: u64, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A message as gRPC frames it: uncompressed flag, big-endian length, the bytes.
fn frame(msg: &[u8]) -> Bytes {
    let mut v = Vec::with_capacity(5 + msg.len());
    v.push(0);
    v.extend_from_slice(&u32::try_from(msg.len()).unwrap_or(u32::MAX).to_be_bytes());
    v.extend_from_slice(msg);
    v.into()
}

/// The names of gRPC's status codes (0-16).
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

/// The status of a finished call: the trailers', else the headers' (trailers-only). `pub` as
/// the fuzz entry (fuzz/fuzz_targets/grpc_message.rs); the call's own path is [`judge`].
pub fn status_of(a: &Answer) -> Option<(u32, String)> {
    let get = |h: &HeaderMap, n: &str| h.get(n).and_then(|v| v.to_str().ok()).map(str::to_string);
    let from = a
        .trailers
        .as_ref()
        .filter(|t| t.contains_key("grpc-status"))
        .unwrap_or(&a.headers);
    let code = get(from, "grpc-status")?.trim().parse().ok()?;
    Some((code, get(from, "grpc-message").unwrap_or_default()))
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

/// The name of status `code`; an unknown one as its number.
pub fn code_name(code: u32) -> String {
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

/// Whether a finished call succeeded: HTTP 200, status OK, and for a health check SERVING.
pub fn judge(cfg: &Settings, a: &Answer) -> Result<(), Failed> {
    if a.status != 200 {
        let m = super::emit::status_result(a.status, 200).unwrap_or(FailureMechanism::Error);
        return Err(fail(
            m,
            format!("HTTP status {} (gRPC answers 200)", a.status),
            None,
        ));
    }
    let Some((code, message)) = status_of(a) else {
        return Err(fail(
            FailureMechanism::Error,
            "the call ended without grpc-status".into(),
            None,
        ));
    };
    if code != 0 {
        return Err(fail(
            mechanism_of(code),
            format!("{}: {message}", code_name(code)),
            Some(code_name(code)),
        ));
    }
    let health = cfg.grpc.as_ref().is_none_or(|g| g.method.is_none());
    if !health {
        return Ok(());
    }
    match serving_status(&a.body) {
        // NOT_SERVING is an answer, not a failure: a server that drains well says it on purpose
        // (its readiness) while it keeps serving, and counting it failed would fail every
        // graceful shutdown. UNKNOWN and SERVICE_UNKNOWN mean the check asks about nothing.
        Some(SERVING | NOT_SERVING) => Ok(()),
        s => Err(fail(
            FailureMechanism::GrpcNotServing,
            format!("health status {}", serving_name(s)),
            None,
        )),
    }
}

fn serving_name(s: Option<u64>) -> &'static str {
    match s {
        Some(0) | None => "UNKNOWN",
        Some(1) => "SERVING",
        Some(2) => "NOT_SERVING",
        Some(3) => "SERVICE_UNKNOWN",
        Some(_) => "an unknown value",
    }
}

/// HealthCheckResponse.status from the framed response: field 1 (varint); absent is UNKNOWN
/// (0), as protobuf's default. `pub` as the fuzz entry (fuzz/fuzz_targets/grpc_message.rs).
pub fn serving_status(body: &[u8]) -> Option<u64> {
    let msg = body.get(5..)?;
    let mut i = 0;
    let mut status = None;
    while i < msg.len() {
        let (key, n) = read_varint(&msg[i..])?;
        i += n;
        match key & 7 {
            0 => {
                let (v, n) = read_varint(&msg[i..])?;
                i += n;
                if key >> 3 == 1 {
                    status = Some(v);
                }
            }
            2 => {
                // Checked: a length near u64::MAX overflowed the offset (a panic in debug, a
                // wrap and an endless loop in release; tests/fuzz_regressions.rs). A field
                // longer than the message is a malformed message.
                let (len, n) = read_varint(&msg[i..])?;
                i = i.checked_add(n)?.checked_add(usize::try_from(len).ok()?)?;
                if i > msg.len() {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some(status.unwrap_or(0))
}

fn read_varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, byte) in b.iter().enumerate().take(10) {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_messages_are_framed_and_read() {
        assert_eq!(frame(&health_request("")).as_ref(), &[0, 0, 0, 0, 0]);
        assert_eq!(
            frame(&health_request("cart")).as_ref(),
            &[0, 0, 0, 0, 6, 0x0a, 4, b'c', b'a', b'r', b't']
        );
        assert_eq!(serving_status(&[0, 0, 0, 0, 2, 0x08, 1]), Some(SERVING));
        assert_eq!(serving_status(&[0, 0, 0, 0, 2, 0x08, 2]), Some(2));
        assert_eq!(serving_status(&[0, 0, 0, 0, 0]), Some(0));
        assert_eq!(serving_status(&[0, 0]), None);
        assert_eq!(code_name(14), "UNAVAILABLE");
        assert_eq!(code_name(99), "99");
        assert_eq!(mechanism_of(14), FailureMechanism::GrpcUnavailable);
        assert_eq!(mechanism_of(1), FailureMechanism::GrpcCancelled);
        assert_eq!(mechanism_of(4), FailureMechanism::GrpcDeadlineExceeded);
        assert_eq!(mechanism_of(13), FailureMechanism::GrpcStatus);
    }
}
