//! The gRPC examples' one unary method, `drainwatch.example.Echo/Say`, written against tonic's
//! codegen API by hand (what tonic-build would generate from the proto below), so that the
//! examples need neither protoc nor a build script:
//!
//! ```proto
//! package drainwatch.example;
//! service Echo { rpc Say(SayRequest) returns (SayReply); }
//! message SayRequest { string message = 1; uint32 delay_ms = 2; }
//! message SayReply { string message = 1; string served_by = 2; }
//! ```
//!
//! `delay_ms` holds the call open that long before it is answered (at most `MAX_DELAY`): an
//! in-flight call for the shutdown tests.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tonic::codegen::{BoxFuture, Service, StdError, http};
use tonic::metadata::MetadataValue;
use tonic::server::{Grpc, NamedService, UnaryService};
use tonic::{Request, Response, Status};

/// The service's full name, also known to the health service.
pub const SERVICE: &str = "drainwatch.example.Echo";
/// The method's path.
const SAY: &str = "/drainwatch.example.Echo/Say";
/// Longest a call may ask to be held.
const MAX_DELAY: Duration = Duration::from_secs(30);

#[derive(Clone, PartialEq, prost::Message)]
pub struct SayRequest {
    #[prost(string, tag = "1")]
    pub message: String,
    #[prost(uint32, tag = "2")]
    pub delay_ms: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SayReply {
    #[prost(string, tag = "1")]
    pub message: String,
    #[prost(string, tag = "2")]
    pub served_by: String,
}

/// `response` with `x-served-by: pod` in its initial metadata, as the HTTP examples name the
/// pod that answered in a header.
pub fn served_by<T>(mut response: Response<T>, pod: &str) -> Response<T> {
    if let Ok(v) = MetadataValue::try_from(pod) {
        response.metadata_mut().insert("x-served-by", v);
    }
    response
}

/// The Echo service as tonic's router takes it.
#[derive(Clone)]
pub struct EchoServer {
    pod: Arc<str>,
}

impl EchoServer {
    pub fn new(pod: Arc<str>) -> Self {
        Self { pod }
    }
}

impl NamedService for EchoServer {
    const NAME: &'static str = SERVICE;
}

struct Say(Arc<str>);

impl UnaryService<SayRequest> for Say {
    type Response = SayReply;
    type Future = BoxFuture<Response<SayReply>, Status>;

    fn call(&mut self, request: Request<SayRequest>) -> Self::Future {
        let pod = self.0.clone();
        Box::pin(async move {
            let req = request.into_inner();
            let delay = Duration::from_millis(u64::from(req.delay_ms)).min(MAX_DELAY);
            tokio::time::sleep(delay).await;
            let reply = SayReply {
                message: req.message,
                served_by: pod.to_string(),
            };
            Ok(served_by(Response::new(reply), &pod))
        })
    }
}

impl<B> Service<http::Request<B>> for EchoServer
where
    B: tonic::codegen::Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if req.uri().path() == SAY {
            let method = Say(self.pod.clone());
            return Box::pin(async move {
                let mut grpc = Grpc::new(tonic_prost::ProstCodec::default());
                Ok(grpc.unary(method, req).await)
            });
        }
        Box::pin(async move { Ok(Status::unimplemented("no such method").into_http()) })
    }
}
