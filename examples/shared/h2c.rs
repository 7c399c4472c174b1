//! h2c (HTTP/2 over cleartext with prior knowledge, RFC 9113 §3.3) beside HTTP/1.1 on the
//! service's one port: a connection whose first bytes are the HTTP/2 connection preface is
//! served by the h2 crate's server, every other one by the HTTP/1.1 loop as before. Closing a
//! connection gracefully is h2's `graceful_shutdown`: a GOAWAY with the highest stream id and a
//! PING, then the final GOAWAY with the last stream taken, in-flight streams finishing, then
//! the close: the HTTP/2 counterpart of `Connection: close` on the next response.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// The client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Which protocol a connection's first bytes ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniffed {
    Http2,
    Http1,
}

/// Reads into `buf` until its bytes either are the preface or stop being a prefix of it (an
/// HTTP/1.1 request line differs at its first or second byte); `None` when the connection
/// ends first. Nothing is lost: the bytes read stay in `buf` for whichever server takes over.
/// Cancel-safe: a read either lands in `buf` or did not happen.
pub async fn sniff(s: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<Option<Sniffed>> {
    loop {
        let n = buf.len().min(PREFACE.len());
        if buf[..n] != PREFACE[..n] {
            return Ok(Some(Sniffed::Http1));
        }
        if n == PREFACE.len() {
            return Ok(Some(Sniffed::Http2));
        }
        let mut chunk = [0u8; 4096];
        let k = s.read(&mut chunk).await?;
        if k == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..k]);
    }
}

/// The connection with the sniffed bytes put back in front: h2 reads the preface itself.
pub struct Rewind {
    pre: Vec<u8>,
    pos: usize,
    inner: TcpStream,
}

impl Rewind {
    pub fn new(pre: Vec<u8>, inner: TcpStream) -> Self {
        Self { pre, pos: 0, inner }
    }
}

impl AsyncRead for Rewind {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.pos < this.pre.len() {
            let n = (this.pre.len() - this.pos).min(out.remaining());
            out.put_slice(&this.pre[this.pos..this.pos + n]);
            this.pos += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, out)
    }
}

impl AsyncWrite for Rewind {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Serves one h2c connection until it ends: every request is answered at once with
/// `answer(path)` (status, body) and `x-served-by: pod`. Once `closing` turns true (or already
/// is) the connection is shut down gracefully; h2 then ends it when its streams are done.
pub async fn serve<F>(io: Rewind, pod: &str, mut closing: watch::Receiver<bool>, answer: F)
where
    F: Fn(&str) -> (u16, String),
{
    let mut conn = match h2::server::handshake(io).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("h2 handshake failed: {e}");
            return;
        }
    };
    let mut goaway = false;
    loop {
        if !goaway && *closing.borrow() {
            conn.graceful_shutdown();
            goaway = true;
        }
        tokio::select! {
            next = conn.accept() => match next {
                Some(Ok((req, respond))) => {
                    let (status, body) = answer(req.uri().path());
                    reply(respond, status, body, pod);
                }
                // The client went away or broke the protocol: nothing left to serve.
                Some(Err(_)) | None => break,
            },
            _ = closing.changed(), if !goaway => {}
        }
    }
}

/// Sends one complete response; a stream the client already reset is no error of ours.
fn reply(mut respond: h2::server::SendResponse<Bytes>, status: u16, body: String, pod: &str) {
    let Ok(head) = http::Response::builder()
        .status(status)
        .header("content-type", "text/plain")
        .header("content-length", body.len())
        .header("x-served-by", pod)
        .body(())
    else {
        return;
    };
    if let Ok(mut stream) = respond.send_response(head, false) {
        let _ = stream.send_data(Bytes::from(body), true);
    }
}
