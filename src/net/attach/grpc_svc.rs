//! The transport tonic's gRPC client runs on: a tower `Service` that sends each call as a new
//! stream of drainwatch's own HTTP/2 connection (`h2_conn`, over the socket whose end, errno
//! and GOAWAY / RST_STREAM frames are recorded), instead of tonic's own transport, which would
//! dial and hide the socket. The HTTP status, headers and trailers the call got, and the h2
//! error that failed it, are kept in a `Seen` slot: tonic folds them into one `Status` (the h2
//! error only as text), and the verdict needs them apart (a stream never opened is retried, a
//! reset is named from the frames, a non-200 answer, a missing `grpc-status`, the endpoint's
//! instance header).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures::future::BoxFuture;
use h2::RecvStream;
use h2::client::SendRequest;
use http::HeaderMap;
use http_body::Frame;
use http_body_util::BodyExt;

use super::h2_conn::ExchangeError;

/// What the server's answer carried, as it arrived.
#[derive(Debug, Default)]
pub struct Seen {
    /// The transport's failure of the call, first one kept.
    pub transport: Option<ExchangeError>,
    /// HTTP status of the response headers.
    pub status: Option<u16>,
    /// The response headers.
    pub headers: HeaderMap,
    /// The trailers, when sent.
    pub trailers: Option<HeaderMap>,
    /// The HTTP/2 stream the call was sent on, once it was.
    pub stream_id: Option<u32>,
}

/// Where one call's `Seen` is kept.
pub type SeenCell = Arc<Mutex<Seen>>;

/// What tonic is told when the transport failed a call; the h2 error itself is in the slot.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CallError(String);

/// Keeps `e` (the first transport failure) in `seen` and gives tonic its text.
fn keep(seen: &SeenCell, e: ExchangeError) -> CallError {
    let text = match &e {
        ExchangeError::NotSent(h) => format!("stream not opened: {h}"),
        ExchangeError::Stream(h) => format!("stream failed: {h}"),
        ExchangeError::Timeout => "timeout".into(),
    };
    if let Ok(mut s) = seen.lock() {
        s.transport.get_or_insert(e);
    }
    CallError(text)
}

/// One call's transport: the connection's stream opener, the origin the call's path is put
/// under, and the slot of what came back.
#[derive(Clone)]
pub struct H2Service {
    send: SendRequest<Bytes>,
    scheme: http::uri::Scheme,
    authority: http::uri::Authority,
    seen: SeenCell,
}

impl H2Service {
    /// A transport for calls on `send` to `host:port`, over TLS when `tls`.
    pub fn new(send: SendRequest<Bytes>, host: &str, port: u16, tls: bool) -> Self {
        let scheme = if tls {
            http::uri::Scheme::HTTPS
        } else {
            http::uri::Scheme::HTTP
        };
        let authority = format!("{host}:{port}")
            .parse()
            .unwrap_or_else(|_| http::uri::Authority::from_static("localhost"));
        Self {
            send,
            scheme,
            authority,
            seen: SeenCell::default(),
        }
    }

    /// What the calls on this transport got back.
    pub fn seen(&self) -> SeenCell {
        self.seen.clone()
    }
}

impl tower_service::Service<http::Request<tonic::body::Body>> for H2Service {
    type Response = http::Response<H2Body>;
    type Error = CallError;
    type Future = BoxFuture<'static, Result<Self::Response, CallError>>;

    // Readiness is asked of h2 in `call`, so that a connection that takes no new streams is
    // told apart (NotSent) from a stream that failed.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), CallError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        let send = self.send.clone();
        let seen = self.seen.clone();
        let mut uri = http::uri::Parts::default();
        uri.scheme = Some(self.scheme.clone());
        uri.authority = Some(self.authority.clone());
        uri.path_and_query = req.uri().path_and_query().cloned();
        Box::pin(async move {
            let (mut parts, body) = req.into_parts();
            parts.uri = http::Uri::from_parts(uri).map_err(|e| CallError(e.to_string()))?;
            parts.headers.insert(
                http::header::USER_AGENT,
                http::HeaderValue::from_static("drainwatch"),
            );
            // A unary or server-streaming call's request is one message: sent whole.
            let body = body
                .collect()
                .await
                .map_err(|s| CallError(format!("request body: {s}")))?
                .to_bytes();
            let not_sent = |e: h2::Error| keep(&seen, ExchangeError::NotSent(e));
            let mut send = send.ready().await.map_err(not_sent)?;
            let req = http::Request::from_parts(parts, ());
            let (resp, mut stream) = send.send_request(req, false).map_err(not_sent)?;
            if let Ok(mut s) = seen.lock() {
                s.stream_id = Some(u32::from(resp.stream_id()));
            }
            let failed = |e: h2::Error| keep(&seen, ExchangeError::Stream(e));
            // The answer decides, as in `h2_conn::exchange`: a server may answer and close
            // its side before it has read the request message, and the message's DATA then
            // finds the stream closed (h2's "inactive stream") while the answer is there.
            let sent = stream.send_data(body, true);
            let resp = match resp.await {
                Ok(r) => r,
                Err(e) => return Err(failed(sent.err().unwrap_or(e))),
            };
            let (parts, recv) = resp.into_parts();
            if let Ok(mut s) = seen.lock() {
                s.status = Some(parts.status.as_u16());
                s.headers = parts.headers.clone();
            }
            Ok(http::Response::from_parts(
                parts,
                H2Body {
                    recv,
                    seen,
                    data_done: false,
                    done: false,
                },
            ))
        })
    }
}

/// A response's body as h2 receives it, the flow-control window returned as it is read, the
/// trailers kept in the slot.
pub struct H2Body {
    recv: RecvStream,
    seen: SeenCell,
    data_done: bool,
    done: bool,
}

impl http_body::Body for H2Body {
    type Data = Bytes;
    type Error = CallError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, CallError>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if !this.data_done {
            match ready!(this.recv.poll_data(cx)) {
                Some(Ok(b)) => {
                    // Returned at once: nothing read is kept beyond the message.
                    let _ = this.recv.flow_control().release_capacity(b.len());
                    return Poll::Ready(Some(Ok(Frame::data(b))));
                }
                Some(Err(e)) => {
                    return Poll::Ready(Some(Err(keep(&this.seen, ExchangeError::Stream(e)))));
                }
                None => this.data_done = true,
            }
        }
        let r = ready!(this.recv.poll_trailers(cx));
        this.done = true;
        match r {
            Ok(Some(t)) => {
                if let Ok(mut s) = this.seen.lock() {
                    s.trailers = Some(t.clone());
                }
                Poll::Ready(Some(Ok(Frame::trailers(t))))
            }
            Ok(None) => Poll::Ready(None),
            Err(e) => Poll::Ready(Some(Err(keep(&this.seen, ExchangeError::Stream(e))))),
        }
    }
}
