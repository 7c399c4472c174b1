//! WebSocket (RFC 6455) on drainwatch's own connected socket: the client handshake, and what a
//! tungstenite error or a close frame means as the closed mechanisms of `evidence::attach`. The
//! crate drives the frames; the socket stays ours, so an OS error (reset, timeout) still
//! arrives as the `io::Error` it was and is classified as the TCP path classifies it.

use std::net::SocketAddr;

use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::http::HeaderMap;
pub use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{self, Error as WsError};

use super::emit::{Failure, status_result};
use super::http::INSTANCE_HEADERS;
use super::tls::Conn;
use super::{Settings, open_conn};
use crate::evidence::attach::FailureMechanism;

/// The status a completed WebSocket handshake answers (RFC 6455 §4.2.2).
pub const SWITCHING_PROTOCOLS: u16 = 101;

/// A failed open: the failure, and the HTTP status when the server answered the handshake.
#[derive(Debug)]
pub struct OpenFailure {
    /// What failed.
    pub failure: Failure,
    /// The handshake's status when it was not 101.
    pub status: Option<u16>,
    /// The endpoint that answered, when its response named it.
    pub instance: Option<String>,
}

impl From<Failure> for OpenFailure {
    fn from(failure: Failure) -> Self {
        Self {
            failure,
            status: None,
            instance: None,
        }
    }
}

/// An open WebSocket and the endpoint its handshake response named.
pub struct Opened {
    /// The connection.
    pub ws: WebSocketStream<Conn>,
    /// The handshake's status (101).
    pub status: u16,
    /// The endpoint that answered, when the response named it.
    pub instance: Option<String>,
}

/// The endpoint a response's headers name (`X-Served-By`, `X-Pod-Name`, else `Server`).
fn instance_of(headers: &HeaderMap) -> Option<String> {
    INSTANCE_HEADERS
        .iter()
        .find_map(|h| headers.get(*h).and_then(|v| v.to_str().ok()))
        .map(str::to_string)
}

/// The handshake's target URI: `ws://HOST:PORT/PATH`, `wss://` over TLS (the `Host` header is
/// made from it).
fn uri(cfg: &Settings) -> String {
    let host = if cfg.host.contains(':') {
        format!("[{}]", cfg.host)
    } else {
        cfg.host.clone()
    };
    let scheme = if cfg.tls.is_some() { "wss" } else { "ws" };
    format!("{scheme}://{host}:{}{}", cfg.port, cfg.path)
}

/// Dials `addr` and completes the client handshake, each within the request timeout.
pub async fn open(addr: SocketAddr, cfg: &Settings) -> Result<Opened, OpenFailure> {
    let stream = open_conn(addr, cfg).await?;
    let request = uri(cfg)
        .into_client_request()
        .map_err(|e| handshake_failure(&e))?;
    match tokio::time::timeout(
        cfg.request_timeout,
        tokio_tungstenite::client_async(request, stream),
    )
    .await
    {
        Ok(Ok((ws, response))) => Ok(Opened {
            ws,
            status: response.status().as_u16(),
            instance: instance_of(response.headers()),
        }),
        Ok(Err(e)) => Err(handshake_failure(&e)),
        Err(_) => {
            Err(Failure::timeout("websocket handshake", cfg.request_timeout.as_millis()).into())
        }
    }
}

/// What a failed handshake means: an answer other than 101 is its status's mechanism (5xx or
/// unexpected); a socket error is the socket's; the connection ending inside the handshake is
/// a truncated answer.
fn handshake_failure(e: &WsError) -> OpenFailure {
    match e {
        WsError::Http(response) => {
            let status = response.status().as_u16();
            OpenFailure {
                failure: Failure {
                    mechanism: status_result(status, SWITCHING_PROTOCOLS)
                        .unwrap_or(FailureMechanism::UnexpectedStatus),
                    errno: None,
                    detail: format!("websocket handshake answered {status}, not 101"),
                },
                status: Some(status),
                instance: instance_of(response.headers()),
            }
        }
        WsError::Io(io) => Failure::io("websocket handshake", io).into(),
        WsError::Protocol(ProtocolError::HandshakeIncomplete) => Failure {
            mechanism: FailureMechanism::Truncated,
            errno: None,
            detail: "websocket handshake: the connection ended before the response".into(),
        }
        .into(),
        other => Failure {
            mechanism: FailureMechanism::Error,
            errno: None,
            detail: format!("websocket handshake: {other}"),
        }
        .into(),
    }
}

/// What an error reading or writing an open WebSocket means: the socket's own error as the
/// TCP path has it; the TCP connection ending without a close frame is `ws-no-close-frame`.
pub fn stream_failure(what: &str, e: &WsError) -> Failure {
    match e {
        WsError::Io(io) => Failure::io(&format!("websocket {what}"), io),
        WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => no_close_frame(),
        other => Failure {
            mechanism: FailureMechanism::Error,
            errno: None,
            detail: format!("websocket {what}: {other}"),
        },
    }
}

/// The TCP connection ended (FIN) with no close frame before it.
pub fn no_close_frame() -> Failure {
    Failure {
        mechanism: FailureMechanism::WsNoCloseFrame,
        errno: None,
        detail: "the connection ended (FIN) without a close frame".into(),
    }
}

/// A server's close frame, as recorded: the code (absent when the frame carried none) and the
/// reason as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Close {
    /// The status code.
    pub code: Option<u16>,
    /// The reason.
    pub reason: String,
}

impl Close {
    /// The close `frame` carried.
    pub fn of(frame: Option<&CloseFrame>) -> Self {
        Self {
            code: frame.map(|f| u16::from(f.code)),
            reason: frame.map(|f| f.reason.to_string()).unwrap_or_default(),
        }
    }

    /// `None` when the close is graceful (1000 normal, 1001 going away, or no code: the
    /// closing handshake happened and named no fault); else the failure it means.
    pub fn failure(&self) -> Option<Failure> {
        match self.code {
            None | Some(1000 | 1001) => None,
            Some(code) => Some(Failure {
                mechanism: FailureMechanism::WsCloseAbnormal,
                errno: None,
                detail: format!("close frame {code} {:?}", self.reason),
            }),
        }
    }
}

/// Re-exported so the flow can build messages without naming the inner crate.
pub use tungstenite::Message;
pub use tungstenite::protocol::frame::coding::CloseCode;

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(code: u16, reason: &str) -> CloseFrame {
        CloseFrame {
            code: CloseCode::from(code),
            reason: reason.into(),
        }
    }

    #[test]
    fn close_codes_split_graceful_from_abnormal() {
        assert_eq!(Close::of(Some(&frame(1001, "bye"))).failure(), None);
        assert_eq!(Close::of(Some(&frame(1000, ""))).failure(), None);
        assert_eq!(Close::of(None).failure(), None);
        assert_eq!(Close::of(None).code, None);
        let c = Close::of(Some(&frame(1011, "oops")));
        assert_eq!((c.code, c.reason.as_str()), (Some(1011), "oops"));
        assert_eq!(
            c.failure().map(|f| f.mechanism),
            Some(FailureMechanism::WsCloseAbnormal)
        );
    }

    #[test]
    fn stream_errors_keep_the_socket_mechanism() {
        let reset = WsError::Io(std::io::Error::from_raw_os_error(libc::ECONNRESET));
        assert_eq!(
            stream_failure("read", &reset).mechanism,
            FailureMechanism::Reset
        );
        assert_eq!(
            stream_failure("read", &reset).errno.as_deref(),
            Some("ECONNRESET")
        );
        let fin = WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake);
        assert_eq!(
            stream_failure("read", &fin).mechanism,
            FailureMechanism::WsNoCloseFrame
        );
        let incomplete = WsError::Protocol(ProtocolError::HandshakeIncomplete);
        assert_eq!(
            handshake_failure(&incomplete).failure.mechanism,
            FailureMechanism::Truncated
        );
    }
}
