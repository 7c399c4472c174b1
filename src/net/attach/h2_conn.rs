//! One HTTP/2 connection of the attach client on drainwatch's own socket: the h2 crate speaks
//! the protocol over `Watched` (GOAWAY and RST_STREAM as they arrived) over `Ended` (how the
//! socket itself ended: FIN, or the error with its errno) over the plain or TLS connection. One
//! exchange is one stream; its failure is named from what the wire showed, not from h2's
//! wording.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use http::{HeaderMap, Request};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

use super::emit::Failure;
use super::h2_frames::{Seen, Watched, code_name};
use super::tls::Conn;
use super::{Settings, open_conn};
use crate::evidence::attach::FailureMechanism;
use crate::evidence::event::EventLine;

/// How the socket under an HTTP/2 connection ended, as its first read that ended it saw.
#[derive(Debug, Clone)]
pub enum SocketEnd {
    /// The server's FIN (over TLS: its close_notify or a bare FIN).
    Fin,
    /// A read error: reset, timeout, …, with its mechanism and errno.
    Error(Failure),
}

/// Where the first end of a socket is kept for the flow to read.
pub type EndCell = Arc<Mutex<Option<SocketEnd>>>;

/// A connection whose first end (FIN or read error) is kept in its cell; bytes pass unchanged.
pub struct Ended<S> {
    inner: S,
    end: EndCell,
}

impl<S> Ended<S> {
    fn keep(&self, e: SocketEnd) {
        if let Ok(mut g) = self.end.lock() {
            g.get_or_insert(e);
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Ended<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let room = buf.remaining() > 0;
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &r {
            Poll::Ready(Ok(())) if room && buf.filled().len() == before => {
                self.keep(SocketEnd::Fin);
            }
            Poll::Ready(Err(e)) => self.keep(SocketEnd::Error(Failure::io("socket read", e))),
            _ => {}
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Ended<S> {
    // A reset can show first on a write (EPIPE, ECONNRESET): kept as the end too.
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        b: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, b);
        if let Poll::Ready(Err(e)) = &r {
            self.keep(SocketEnd::Error(Failure::io("socket write", e)));
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// An open HTTP/2 connection.
pub struct H2 {
    /// Where new streams are opened.
    pub send: SendRequest<Bytes>,
    /// The server's GOAWAY and RST_STREAM frames, with their arrival times.
    pub frames: UnboundedReceiver<Seen>,
    /// How the socket ended, once it has.
    pub end: EndCell,
    /// The connection's driver: ends when the connection does.
    pub driver: JoinHandle<Result<(), h2::Error>>,
}

/// Dials `addr` (TLS with ALPN h2 when asked for) and completes the HTTP/2 preface.
pub async fn open(addr: SocketAddr, cfg: &Settings) -> Result<H2, Failure> {
    let conn: Conn = open_conn(addr, cfg).await?;
    let end: EndCell = Arc::default();
    let (io, frames) = Watched::new(Ended {
        inner: conn,
        end: end.clone(),
    });
    let (send, connection) =
        match tokio::time::timeout(cfg.request_timeout, h2::client::handshake(io)).await {
            Ok(Ok(h)) => h,
            Ok(Err(e)) => return Err(failure_of(&e, &end, false).failure),
            Err(_) => {
                return Err(Failure::timeout(
                    "HTTP/2 handshake",
                    cfg.request_timeout.as_millis(),
                ));
            }
        };
    let driver = tokio::spawn(connection);
    Ok(H2 {
        send,
        frames,
        end,
        driver,
    })
}

/// A failed stream or connection: the failure, and the HTTP/2 or gRPC code that caused it.
#[derive(Debug, Clone)]
pub struct Failed {
    /// Mechanism, errno, detail.
    pub failure: Failure,
    /// The RFC 9113 name of the RST_STREAM's or GOAWAY's error code.
    pub h2_code: Option<String>,
    /// The gRPC status code's name.
    pub grpc_code: Option<String>,
}

impl Failed {
    /// A failure with no HTTP/2 or gRPC code.
    pub fn plain(failure: Failure) -> Self {
        Self {
            failure,
            h2_code: None,
            grpc_code: None,
        }
    }

    /// Sets the failure and its codes on `l`.
    pub fn fill(&self, l: &mut EventLine) {
        self.failure.fill(l);
        l.h2_code.clone_from(&self.h2_code);
        l.grpc_code.clone_from(&self.grpc_code);
    }
}

fn failed(
    mechanism: FailureMechanism,
    errno: Option<String>,
    detail: String,
    code: Option<String>,
) -> Failed {
    Failed {
        failure: Failure {
            mechanism,
            errno,
            detail,
        },
        h2_code: code,
        grpc_code: None,
    }
}

/// What a stream's h2 error means, given whether a GOAWAY had arrived on its connection and
/// how the socket ended: RST_STREAM (`rst-stream`, or `goaway-then-reset` after a GOAWAY), a
/// stream refused by GOAWAY (`goaway-then-reset`, or `goaway-error` for a GOAWAY with an
/// error), the connection's end under it (`no-goaway` by FIN or RST without a GOAWAY, errno
/// saying which; `timeout` when the kernel gave up), anything else `error`.
pub fn failure_of(e: &h2::Error, end: &EndCell, after_goaway: bool) -> Failed {
    let code = e.reason().map(|r| code_name(u32::from(r)));
    if e.is_reset() && e.is_remote() {
        let m = if after_goaway {
            FailureMechanism::GoawayThenReset
        } else {
            FailureMechanism::RstStream
        };
        return failed(m, None, format!("stream reset by the server: {e}"), code);
    }
    if e.is_go_away() && e.is_remote() {
        let m = if e.reason() == Some(h2::Reason::NO_ERROR) {
            FailureMechanism::GoawayThenReset
        } else {
            FailureMechanism::GoawayError
        };
        return failed(
            m,
            None,
            format!("stream refused by the server's GOAWAY: {e}"),
            code,
        );
    }
    if e.is_io() {
        let sock = end.lock().ok().and_then(|g| g.clone());
        let (errno, how, timeout) = match &sock {
            Some(SocketEnd::Error(f)) => (
                f.errno.clone(),
                f.detail.clone(),
                f.mechanism == FailureMechanism::Timeout,
            ),
            Some(SocketEnd::Fin) => (None, "the server's FIN".to_string(), false),
            None => {
                let f = e.get_io().map(|io| Failure::io("socket", io));
                let errno = f.as_ref().and_then(|f| f.errno.clone());
                let t = f
                    .as_ref()
                    .is_some_and(|f| f.mechanism == FailureMechanism::Timeout);
                (errno, e.to_string(), t)
            }
        };
        let m = if timeout {
            FailureMechanism::Timeout
        } else if after_goaway {
            FailureMechanism::GoawayThenReset
        } else {
            FailureMechanism::NoGoaway
        };
        return failed(
            m,
            errno,
            format!("the connection ended under the stream: {how}"),
            None,
        );
    }
    failed(FailureMechanism::Error, None, format!("HTTP/2: {e}"), code)
}

/// A response as far as the flows need it.
#[derive(Debug)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// The response's headers.
    pub headers: HeaderMap,
    /// The body, whole.
    pub body: Bytes,
    /// The trailers, when sent.
    pub trailers: Option<HeaderMap>,
}

/// An answered exchange (an HTTP/2 request or a gRPC call), judged.
#[derive(Debug)]
pub struct Called {
    /// HTTP status of the answer; `None`: no response headers arrived.
    pub status: Option<u16>,
    /// The response's headers.
    pub headers: HeaderMap,
    /// Whether the answer is a success, else its failure.
    pub verdict: Result<(), Failed>,
}

/// Why an exchange did not get an answer.
#[derive(Debug)]
pub enum ExchangeError {
    /// The stream could not be opened: the connection no longer takes new streams (a GOAWAY
    /// arrived, or it ended); the server never saw the request.
    NotSent(h2::Error),
    /// The stream failed.
    Stream(h2::Error),
    /// No answer within the bound.
    Timeout,
}

/// One request on a new stream of `send`, its body `body` (none: end of stream with the
/// headers), read whole within `timeout`.
pub async fn exchange(
    send: SendRequest<Bytes>,
    req: Request<()>,
    body: Option<Bytes>,
    timeout: Duration,
) -> Result<Answer, ExchangeError> {
    let mut send = send.ready().await.map_err(ExchangeError::NotSent)?;
    let (resp, mut stream) = send
        .send_request(req, body.is_none())
        .map_err(ExchangeError::NotSent)?;
    // A server may answer, and close its side, before it has read the request's body (a
    // trailers-only status from a load shedder; the loopback test servers answer on the
    // HEADERS): the body then finds the stream closed (h2's "inactive stream") while the
    // answer is there to read. The answer decides; the send's error stands only when none came.
    let sent = body.map_or(Ok(()), |b| stream.send_data(b, true));
    let read = async {
        let resp = match resp.await {
            Ok(r) => r,
            Err(e) => return Err(sent.err().unwrap_or(e)),
        };
        let (parts, mut recv) = resp.into_parts();
        let mut body = Vec::new();
        while let Some(chunk) = recv.data().await {
            let chunk = chunk?;
            // Returned at once: the flow keeps nothing it reads beyond the answer.
            let _ = recv.flow_control().release_capacity(chunk.len());
            body.extend_from_slice(&chunk);
        }
        let trailers = recv.trailers().await?;
        Ok::<_, h2::Error>(Answer {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: body.into(),
            trailers,
        })
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(Ok(a)) => Ok(a),
        Ok(Err(e)) => Err(ExchangeError::Stream(e)),
        Err(_) => Err(ExchangeError::Timeout),
    }
}

/// The endpoint that answered, as the response names it (the headers HTTP/1.1 reads).
pub fn instance(h: &HeaderMap) -> Option<String> {
    super::http::INSTANCE_HEADERS
        .iter()
        .find_map(|n| h.get(*n))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}
