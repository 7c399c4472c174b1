//! What an attach trial dialled and how: `trial.config.attach` (schema 1.2).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The protocol the client speaks to the workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttachProtocol {
    /// Held connections with no payload.
    Tcp,
    /// Keep-alive HTTP/1.1 requests.
    Http,
    /// Held WebSocket connections, a ping every interval (RFC 6455).
    Websocket,
}

impl AttachProtocol {
    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tcp => "tcp",
            Self::Http => "http",
            Self::Websocket => "websocket",
        }
    }

    /// The flow id prefix of this protocol's held connections.
    pub fn flow_prefix(self) -> &'static str {
        match self {
            Self::Websocket => "ws",
            p => p.as_str(),
        }
    }

    /// Whether the arm sends requests (counted as requests); on the others the held
    /// connections themselves are the observations (a severed one is the failure).
    pub fn sends_requests(self) -> bool {
        self == Self::Http
    }

    /// Whether `--path` applies (the request or handshake target).
    pub fn has_path(self) -> bool {
        matches!(self, Self::Http | Self::Websocket)
    }
}

impl fmt::Display for AttachProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The attach settings of a trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachConfig {
    /// `deployment/NAME` or `statefulset/NAME`; null for a manual client run.
    pub target: Option<String>,
    /// The Service dialled; null for a manual client run.
    pub service: Option<String>,
    /// Protocol.
    pub protocol: AttachProtocol,
    /// Host or address dialled.
    pub host: String,
    /// Port dialled.
    pub port: u16,
    /// Request path (HTTP) or handshake target (WebSocket); null for TCP.
    pub path: Option<String>,
    /// The status a good response has (HTTP); null for TCP.
    pub expect_status: Option<u16>,
    /// Held connections.
    pub tcp_flows: u32,
    /// Request interval per connection, ms (HTTP).
    pub interval_ms: u64,
    /// New-connection attempts per second; 0 = prober off.
    pub dial_rate: u32,
    /// Time allowed for one request or dial, ms.
    pub request_timeout_ms: u64,
    /// TCP keepalive idle time, ms (TCP).
    pub keepalive_idle_ms: u64,
    /// TCP keepalive probe interval, ms (TCP).
    pub keepalive_interval_ms: u64,
    /// TCP keepalive probes before the kernel gives up (TCP).
    pub keepalive_count: u32,
    /// TCP_USER_TIMEOUT, ms (TCP).
    pub user_timeout_ms: u64,
    /// The observation window, ms.
    pub duration_ms: u64,
    /// TLS over the held connections and dials (schema 2.0); absent: plain TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<AttachTls>,
}

/// How the attach client speaks TLS (`--tls`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachTls {
    /// The name the server's certificate must carry (SNI): `--server-name`, else the host.
    pub server_name: String,
    /// The CA certificates trusted (PEM), as given; null with `insecure_skip_verify`.
    pub ca_file: Option<String>,
    /// Certificate verification was off (`--insecure-skip-verify`): the server's identity
    /// was not checked.
    pub insecure_skip_verify: bool,
}
