//! What the gRPC arm reads of a finished call: the HealthCheckResponse (protobuf, hand-read)
//! and the status of the trailers or headers. Easy to drop should grpc_call.rs go to tonic.
//! Properties: no panic, no hang.
#![no_main]

use bytes::Bytes;
use drainwatch::net::attach::grpc_call::{code_name, serving_status, status_of};
use drainwatch::net::attach::h2_conn::Answer;
use http::{HeaderMap, HeaderValue};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    body: &'a [u8],
    status: &'a [u8],
    message: &'a [u8],
    in_trailers: bool,
}

fuzz_target!(|i: Input<'_>| {
    let _ = serving_status(i.body);
    let mut h = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_bytes(i.status) {
        h.insert("grpc-status", v);
    }
    if let Ok(v) = HeaderValue::from_bytes(i.message) {
        h.insert("grpc-message", v);
    }
    let (headers, trailers) = if i.in_trailers {
        (HeaderMap::new(), Some(h))
    } else {
        (h, None)
    };
    let a = Answer {
        status: 200,
        headers,
        body: Bytes::copy_from_slice(i.body),
        trailers,
    };
    if let Some((code, _)) = status_of(&a) {
        let _ = code_name(code);
    }
});
