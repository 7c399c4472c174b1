//! How a request, a dial or a held connection failed: the closed set `trial.attach` counts and
//! records failures by, in the order reports render them.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How a request, a dial or a connection failed; a closed enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureMechanism {
    /// Connection reset (RST).
    Reset,
    /// No answer within the bound: request timeout, keepalive or TCP_USER_TIMEOUT (black-holed).
    Timeout,
    /// A 5xx status.
    #[serde(rename = "status-5xx")]
    Status5xx,
    /// A status other than the expected one (and not 5xx).
    UnexpectedStatus,
    /// The connection ended inside a response.
    Truncated,
    /// The dial was refused (no listener, or a reject rule).
    Refused,
    /// Any other socket error; errno says which.
    Error,
    /// WebSocket: the server's close frame carried a code other than 1000 (normal) or 1001
    /// (going away); the code and reason are on the connection record.
    WsCloseAbnormal,
    /// WebSocket: the TCP connection ended (FIN) without a close frame.
    WsNoCloseFrame,
    /// WebSocket: a ping's pong did not come back within the request timeout.
    WsPongMissing,
    /// TLS: the server sent a fatal alert (the detail names it).
    TlsAlert,
    /// TLS: the handshake failed on the client's side (certificate not trusted, name
    /// mismatch, no common protocol); the detail says which.
    TlsError,
    /// HTTP/2 and gRPC (schema 3.0): the server sent GOAWAY and then a stream of this
    /// connection failed anyway: it was reset by RST_STREAM after the GOAWAY, or the
    /// connection ended (FIN or RST) with it unanswered although its id was at or below the
    /// last stream id. (A stream refused as above the last stream id was never processed: the
    /// client sends it again on its next connection; reports before that change may count it.)
    GoawayThenReset,
    /// HTTP/2 and gRPC (schema 3.0): the server reset the stream with RST_STREAM before any
    /// GOAWAY; the RST_STREAM's error code is on the record (`h2_code`).
    RstStream,
    /// HTTP/2 and gRPC (schema 3.0): the connection ended, by FIN or RST (errno says which:
    /// ECONNRESET, or none for a FIN), with no GOAWAY received while streams were open or
    /// requests pending on it.
    NoGoaway,
    /// HTTP/2 and gRPC (schema 3.0): the server's GOAWAY carried an error code other than
    /// NO_ERROR (the code is on the record): the connection was torn down, not drained.
    GoawayError,
    /// gRPC (schema 3.0): the call ended with status UNAVAILABLE (14) in the response's
    /// trailers or trailers-only headers.
    GrpcUnavailable,
    /// gRPC (schema 3.0): the call ended with status CANCELLED (1).
    GrpcCancelled,
    /// gRPC (schema 3.0): the call ended with status DEADLINE_EXCEEDED (4).
    GrpcDeadlineExceeded,
    /// gRPC (schema 3.0): the call ended with any other non-OK status; its name is on the
    /// record (`grpc_code`).
    GrpcStatus,
    /// gRPC (schema 3.0): `grpc.health.v1.Health` answered OK with the serving status UNKNOWN
    /// or SERVICE_UNKNOWN (the check asks about a service the server does not know); the
    /// status is the detail. NOT_SERVING counts as served: a draining server says it on purpose.
    GrpcNotServing,
}

impl FailureMechanism {
    /// Every mechanism, in the order reports render them.
    pub const ALL: [Self; 21] = [
        Self::Reset,
        Self::Timeout,
        Self::Status5xx,
        Self::UnexpectedStatus,
        Self::Truncated,
        Self::Refused,
        Self::Error,
        Self::WsCloseAbnormal,
        Self::WsNoCloseFrame,
        Self::WsPongMissing,
        Self::TlsAlert,
        Self::TlsError,
        Self::GoawayThenReset,
        Self::RstStream,
        Self::NoGoaway,
        Self::GoawayError,
        Self::GrpcUnavailable,
        Self::GrpcCancelled,
        Self::GrpcDeadlineExceeded,
        Self::GrpcStatus,
        Self::GrpcNotServing,
    ];

    /// The name written in events and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reset => "reset",
            Self::Timeout => "timeout",
            Self::Status5xx => "status-5xx",
            Self::UnexpectedStatus => "unexpected-status",
            Self::Truncated => "truncated",
            Self::Refused => "refused",
            Self::Error => "error",
            Self::WsCloseAbnormal => "ws-close-abnormal",
            Self::WsNoCloseFrame => "ws-no-close-frame",
            Self::WsPongMissing => "ws-pong-missing",
            Self::TlsAlert => "tls-alert",
            Self::TlsError => "tls-error",
            Self::GoawayThenReset => "goaway-then-reset",
            Self::RstStream => "rst-stream",
            Self::NoGoaway => "no-goaway",
            Self::GoawayError => "goaway-error",
            Self::GrpcUnavailable => "grpc-unavailable",
            Self::GrpcCancelled => "grpc-cancelled",
            Self::GrpcDeadlineExceeded => "grpc-deadline-exceeded",
            Self::GrpcStatus => "grpc-status",
            Self::GrpcNotServing => "grpc-not-serving",
        }
    }

    /// The mechanism an event's `result` names; `None` for a success or an unknown name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

impl fmt::Display for FailureMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
