//! A minimal HTTP/1.1 client exchange on a tokio stream: write one GET, read one response
//! (Content-Length, chunked, or delimited by close). Only what drainwatch needs to tell a good
//! response from a failed one; the body is read and discarded.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::evidence::request_id::{self, RequestId, Spelling};

/// Largest response head accepted; a longer one is a protocol error, not a hang.
const MAX_HEAD: usize = 64 * 1024;

/// Headers that name the endpoint that answered, in order of preference.
pub(super) const INSTANCE_HEADERS: [&str; 3] = ["x-served-by", "x-pod-name", "server"];

/// A complete response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// The endpoint that answered, as the response named it.
    pub instance: Option<String>,
    /// The server will close the connection after this response.
    pub closes: bool,
}

/// Why an exchange did not produce a complete response.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// A socket operation failed.
    #[error("socket {op} failed")]
    Io {
        /// read or write.
        op: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The connection ended before the response was complete; `received` bytes had arrived.
    #[error("the connection ended after {received} bytes of the response")]
    Eof {
        /// Response bytes received before the end.
        received: usize,
    },
    /// The bytes were not an HTTP/1.x response.
    #[error("the response is not valid HTTP/1.1: {0}")]
    Malformed(String),
}

/// The request line and headers of a GET to `authority` (the `Host` header); `close` asks the
/// server to close afterwards. `id` goes out in `X-Drainwatch-Request`, so a proxy's access log
/// names the request.
pub fn request(
    authority: &str,
    path: &str,
    close: bool,
    (ids, id): (&Spelling, &RequestId),
) -> Vec<u8> {
    let conn = if close { "close" } else { "keep-alive" };
    let id = ids.value(id);
    format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: drainwatch/{}\r\nAccept: */*\r\n{}: {id}\r\nConnection: {conn}\r\n\r\n",
        crate::host::VERSION,
        request_id::HEADER,
    )
    .into_bytes()
}

/// Writes `req` and reads one response.
pub async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    req: &[u8],
) -> Result<Response, ExchangeError> {
    s.write_all(req).await.map_err(|source| ExchangeError::Io {
        op: "write",
        source,
    })?;
    read_response(s).await
}

struct Head {
    status: u16,
    instance: Option<String>,
    closes: bool,
    length: Option<usize>,
    chunked: bool,
}

/// Headers read from one response head, at most; more is a protocol error, not a hang.
const MAX_HEADERS: usize = 256;

/// Interim (1xx) heads skipped before the final one, at most: a server that sends them without
/// end is answering nothing.
const MAX_INTERIM: usize = 16;

/// Parses one response head (status line and headers, through the final empty line) with
/// httparse; what drainwatch reads of it is the status, the endpoint's name and the framing.
fn parse_head(head: &[u8]) -> Result<Head, ExchangeError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut res = httparse::Response::new(&mut headers);
    match res.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => {
            return Err(ExchangeError::Malformed(
                "the response head is incomplete".into(),
            ));
        }
        Err(e) => return Err(ExchangeError::Malformed(format!("response head: {e}"))),
    }
    let status = res
        .code
        .filter(|s| (100..=599).contains(s))
        .ok_or_else(|| ExchangeError::Malformed(format!("status code {:?}", res.code)))?;
    let http10 = res.version == Some(0);
    let get = |name: &str| {
        res.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
    };
    let connection = get("connection").map(|c| c.to_ascii_lowercase());
    let closes = match connection.as_deref() {
        Some(c) if c.contains("close") => true,
        Some(c) if c.contains("keep-alive") => false,
        _ => http10,
    };
    let chunked =
        get("transfer-encoding").is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
    let length = match get("content-length") {
        Some(v) => Some(
            v.parse::<usize>()
                .map_err(|_| ExchangeError::Malformed(format!("content-length {v:?}")))?,
        ),
        None => None,
    };
    Ok(Head {
        status,
        instance: INSTANCE_HEADERS.iter().find_map(|h| get(h)),
        closes,
        length,
        chunked,
    })
}

/// Whether `status` is an interim response (100 Continue, 103 Early Hints, …): another head
/// follows on the same connection, and the request is answered by the final one. 101 Switching
/// Protocols ends HTTP/1.1 on the connection, so it is final.
fn interim(status: u16) -> bool {
    (100..200).contains(&status) && status != 101
}

/// Buffered reads that remember how many bytes the response has had so far.
struct Reader<'a, S> {
    s: &'a mut S,
    buf: Vec<u8>,
    pos: usize,
    received: usize,
}

impl<S: AsyncRead + Unpin> Reader<'_, S> {
    /// Reads more bytes; `Ok(false)` at EOF.
    async fn fill(&mut self) -> Result<bool, ExchangeError> {
        let mut chunk = [0u8; 8192];
        let n = self
            .s
            .read(&mut chunk)
            .await
            .map_err(|source| ExchangeError::Io { op: "read", source })?;
        self.buf.extend_from_slice(&chunk[..n]);
        self.received += n;
        Ok(n > 0)
    }

    fn eof(&self) -> ExchangeError {
        ExchangeError::Eof {
            received: self.received,
        }
    }

    /// The next response head from `pos`; `pos` then points past its empty line.
    async fn head(&mut self) -> Result<Head, ExchangeError> {
        loop {
            let rest = &self.buf[self.pos..];
            if let Some(i) = rest.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = parse_head(&rest[..i + 4])?;
                self.pos += i + 4;
                return Ok(head);
            }
            if rest.len() > MAX_HEAD {
                return Err(ExchangeError::Malformed(
                    "the response head is too long".into(),
                ));
            }
            if !self.fill().await? {
                return Err(self.eof());
            }
        }
    }

    async fn line(&mut self) -> Result<String, ExchangeError> {
        loop {
            if let Some(i) = self.buf[self.pos..].windows(2).position(|w| w == b"\r\n") {
                let l = String::from_utf8_lossy(&self.buf[self.pos..self.pos + i]).into_owned();
                self.pos += i + 2;
                return Ok(l);
            }
            if self.buf.len() - self.pos > MAX_HEAD {
                return Err(ExchangeError::Malformed("a chunk line is too long".into()));
            }
            if !self.fill().await? {
                return Err(self.eof());
            }
        }
    }

    async fn skip(&mut self, mut n: usize) -> Result<(), ExchangeError> {
        loop {
            let have = self.buf.len() - self.pos;
            if have >= n {
                self.pos += n;
                return Ok(());
            }
            n -= have;
            self.buf.clear();
            self.pos = 0;
            if !self.fill().await? {
                return Err(self.eof());
            }
        }
    }
}

/// Reads one response; the body is consumed so the connection can carry the next request.
pub async fn read_response<S: AsyncRead + Unpin>(s: &mut S) -> Result<Response, ExchangeError> {
    let mut r = Reader {
        s,
        buf: Vec::with_capacity(1024),
        pos: 0,
        received: 0,
    };
    // Interim 1xx heads are skipped: the request's answer is the final head after them.
    let mut interims = 0;
    let head = loop {
        let head = r.head().await?;
        if !interim(head.status) {
            break head;
        }
        interims += 1;
        if interims > MAX_INTERIM {
            return Err(ExchangeError::Malformed(format!(
                "more than {MAX_INTERIM} interim (1xx) responses and no final one"
            )));
        }
    };
    // 101, 204 and 304 carry no body.
    let bodiless = head.status < 200 || head.status == 204 || head.status == 304;
    let mut closes = head.closes;
    match (bodiless, head.chunked, head.length) {
        (true, _, _) => {}
        (false, true, _) => loop {
            let line = r.line().await?;
            let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| ExchangeError::Malformed(format!("chunk size {line:?}")))?;
            if size == 0 {
                // Trailers, then the empty line.
                while !r.line().await?.is_empty() {}
                break;
            }
            r.skip(size).await?;
            if !r.line().await?.is_empty() {
                return Err(ExchangeError::Malformed(
                    "a chunk is longer than its size".into(),
                ));
            }
        },
        (false, false, Some(n)) => r.skip(n).await?,
        (false, false, None) => {
            // Delimited by close: the body ends at EOF, and the connection with it.
            while r.fill().await? {
                r.buf.clear();
                r.pos = 0;
            }
            closes = true;
        }
    }
    Ok(Response {
        status: head.status,
        instance: head.instance,
        closes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn parse(bytes: &[u8]) -> Result<Response, ExchangeError> {
        let mut s: &[u8] = bytes;
        read_response(&mut s).await
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn content_length_chunked_and_close_delimited() {
        rt().block_on(async {
            let r = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-Served-By: pod-a\r\nServer: x\r\n\r\nabc")
                .await
                .unwrap();
            assert_eq!((r.status, r.instance.as_deref(), r.closes), (200, Some("pod-a"), false));
            let r = parse(b"HTTP/1.1 503 No\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
                .await
                .unwrap();
            assert_eq!((r.status, r.instance, r.closes), (503, None, true));
            let r = parse(b"HTTP/1.1 200 OK\r\nServer: nginx\r\n\r\nuntil close").await.unwrap();
            assert_eq!((r.instance.as_deref(), r.closes), (Some("nginx"), true));
            let r = parse(b"HTTP/1.0 204 No Content\r\n\r\n").await.unwrap();
            assert!(r.closes);
        });
    }

    #[test]
    fn interim_responses_are_not_the_answer() {
        rt().block_on(async {
            // 103 Early Hints, then the final 200: the answer is 200, its body read.
            let r = parse(b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Served-By: pod-a\r\n\r\nok")
                .await
                .unwrap();
            assert_eq!((r.status, r.instance.as_deref(), r.closes), (200, Some("pod-a"), false));
            // 100 Continue then a 503 that closes: the 503 is the answer.
            let r = parse(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .await
                .unwrap();
            assert_eq!((r.status, r.closes), (503, true));
            // An interim head and then the end of the connection: no answer came.
            assert!(matches!(
                parse(b"HTTP/1.1 103 Early Hints\r\n\r\n").await,
                Err(ExchangeError::Eof { received: 28 })
            ));
            // Interim heads without end: malformed, not a hang.
            let endless = b"HTTP/1.1 103 Early Hints\r\n\r\n".repeat(MAX_INTERIM + 1);
            assert!(matches!(
                parse(&endless).await,
                Err(ExchangeError::Malformed(_))
            ));
            // 101 ends HTTP/1.1 on the connection: final.
            let r = parse(b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n\r\n")
                .await
                .unwrap();
            assert_eq!(r.status, 101);
        });
    }

    #[test]
    fn truncation_and_garbage_are_told_apart() {
        rt().block_on(async {
            assert!(matches!(
                parse(b"").await,
                Err(ExchangeError::Eof { received: 0 })
            ));
            assert!(matches!(
                parse(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc").await,
                Err(ExchangeError::Eof { received: 42 })
            ));
            assert!(matches!(
                parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab").await,
                Err(ExchangeError::Eof { .. })
            ));
            assert!(matches!(
                parse(b"SSH-2.0-OpenSSH\r\n\r\n").await,
                Err(ExchangeError::Malformed(_))
            ));
        });
    }

    #[test]
    fn requests_name_host_id_and_connection() {
        let id = RequestId::request("http-0002", 9);
        let bare = Spelling::default();
        let r = String::from_utf8(request("svc:80", "/healthz", true, (&bare, &id))).unwrap();
        assert!(
            r.starts_with("GET /healthz HTTP/1.1\r\nHost: svc:80\r\n"),
            "{r}"
        );
        assert!(
            r.contains("\r\nX-Drainwatch-Request: http-0002/9\r\n"),
            "{r}"
        );
        assert!(r.ends_with("Connection: close\r\n\r\n"), "{r}");
        // Under a trial's prefix the header carries it.
        let prefix = "20261206-063311-3fa9c01b-001".parse().unwrap();
        let ours = Spelling::new(Some(&prefix));
        let r = String::from_utf8(request("svc:80", "/", false, (&ours, &id))).unwrap();
        assert!(
            r.contains("\r\nX-Drainwatch-Request: 20261206-063311-3fa9c01b-001.http-0002/9\r\n"),
            "{r}"
        );
    }
}
