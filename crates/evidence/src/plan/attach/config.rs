//! What an attach trial dialled and how: `trial.config.attach` (schema 1.2).

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::request_id::RequestIdPrefix;

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
    /// HTTP/2 connections (h2c with prior knowledge, or h2 over TLS by ALPN), a request every
    /// interval as a new stream (schema 3.0).
    Http2,
    /// gRPC over HTTP/2: a unary call every interval, optionally one held server-streaming
    /// Watch per connection (schema 3.0).
    Grpc,
}

impl AttachProtocol {
    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tcp => "tcp",
            Self::Http => "http",
            Self::Websocket => "websocket",
            Self::Http2 => "http2",
            Self::Grpc => "grpc",
        }
    }

    /// The flow id prefix of this protocol's held connections.
    pub fn flow_prefix(self) -> &'static str {
        match self {
            Self::Websocket => "ws",
            Self::Http2 => "h2",
            p => p.as_str(),
        }
    }

    /// Whether the arm sends requests (counted as requests); on the others the held
    /// connections themselves are the observations (a severed one is the failure).
    pub fn sends_requests(self) -> bool {
        matches!(self, Self::Http | Self::Http2 | Self::Grpc)
    }

    /// Whether `--path` applies (the request or handshake target).
    pub fn has_path(self) -> bool {
        matches!(self, Self::Http | Self::Websocket | Self::Http2)
    }

    /// Whether `--expect-status` applies (an HTTP status answers each request).
    pub fn has_status(self) -> bool {
        matches!(self, Self::Http | Self::Http2)
    }

    /// Whether the arm speaks HTTP/2, so GOAWAY and RST_STREAM can be observed.
    pub fn is_h2(self) -> bool {
        matches!(self, Self::Http2 | Self::Grpc)
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
    /// What a gRPC arm calls (schema 3.0); absent on the other protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<AttachGrpc>,
    /// The `Host` header sent instead of `HOST:PORT` (`--host-header`, schema 5.2): the name an
    /// ingress rule matches when the client dials the ingress's address (HTTP/1.1); absent:
    /// `HOST:PORT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_header: Option<String>,
    /// The prefix of every `X-Drainwatch-Request` id (`--request-id-prefix`, schema 5.2): the
    /// run id and trial number the orchestrator gives each trial, so that an ingress's log
    /// shared by several runs names each request of this trial only; absent: bare ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id_prefix: Option<RequestIdPrefix>,
    /// Through an ingress, the target Service the direct prober also dials at `dial_rate`
    /// (`--direct-dial`, schema 5.2): kube-proxy's path in the same trial, beside the
    /// ingress's; absent: no direct prober.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_dial: Option<DirectDial>,
}

/// The address the direct prober dials: the target Service's ClusterIP and port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectDial {
    /// Host or address.
    pub host: String,
    /// Port.
    pub port: u16,
}

impl std::str::FromStr for DirectDial {
    type Err = String;

    /// `HOST:PORT` (an IPv6 address in brackets: `[fd00::1]:80`).
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not HOST:PORT (an IPv6 address in brackets)");
        let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
        let port: u16 = port.parse().ok().filter(|p| *p > 0).ok_or_else(bad)?;
        let host = match host.strip_prefix('[') {
            // A bracketed host is an IPv6 address and must close.
            Some(inner) => inner.strip_suffix(']').ok_or_else(bad)?,
            None if host.contains(':') || host.contains(']') => return Err(bad()),
            None => host,
        };
        if host.is_empty() {
            return Err(bad());
        }
        Ok(Self {
            host: host.to_string(),
            port,
        })
    }
}

impl fmt::Display for DirectDial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

#[cfg(test)]
mod direct_dial_tests {
    use super::DirectDial;

    #[test]
    fn host_port_reads_back_and_bad_ones_are_refused() {
        let good = ["10.96.0.12:80", "[fd00::1]:8080", "shop.svc:443"];
        assert_eq!(good.len(), 3);
        for s in good {
            let d: DirectDial = s.parse().unwrap();
            assert_eq!(d.to_string(), s);
        }
        assert_eq!(
            "[fd00::1]:8080".parse::<DirectDial>().unwrap().host,
            "fd00::1"
        );
        let bad = [
            "",
            "10.0.0.1",
            ":80",
            "10.0.0.1:0",
            "10.0.0.1:x",
            "fd00::1:80",
            "[fd00::1:80",
            "fd00::1]:80",
            "[]:80",
        ];
        assert_eq!(bad.len(), 9);
        for s in bad {
            assert!(s.parse::<DirectDial>().is_err(), "{s:?}");
        }
    }
}

/// What the gRPC arm calls (`--grpc-method`, `--grpc-service`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachGrpc {
    /// The unary method called every interval, `/package.Service/Method`; null: the standard
    /// `grpc.health.v1.Health/Check`.
    pub method: Option<String>,
    /// `HealthCheckRequest.service` of the health check (empty: the whole server); null when
    /// `method` is another method (which is sent an empty message).
    pub service: Option<String>,
    /// `--grpc-watch` (schema 3.2): each connection also holds one
    /// `grpc.health.v1.Health/Watch` of the same service (the whole server's, "", beside another
    /// method); absent (false) when not asked for, as in every report before 3.2.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub watch: bool,
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

/// Why gRPC flags do not make a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrpcFlagError {
    /// The method is not `/package.Service/Method`.
    #[error("--grpc-method {0:?} must be /package.Service/Method")]
    Method(String),
    /// `--grpc-service` names a health-checked service; another method takes no request.
    #[error(
        "--grpc-service is the HealthCheckRequest.service of grpc.health.v1.Health/Check; --grpc-method {0} is sent an empty message"
    )]
    ServiceWithMethod(String),
    /// gRPC flags on another protocol.
    #[error("--grpc-method and --grpc-service need --protocol grpc")]
    NotGrpc,
    /// `--grpc-watch` (policy key `grpc-watch`) on another protocol.
    #[error(
        "--grpc-watch (policy key grpc-watch) holds a grpc.health.v1.Health/Watch call and needs --protocol grpc, not {0}"
    )]
    WatchNotGrpc(AttachProtocol),
}

/// The standard health check, called when no method is named.
pub const HEALTH_CHECK: &str = "/grpc.health.v1.Health/Check";

impl AttachGrpc {
    /// The gRPC settings of `protocol` from the flags: `None` on other protocols (where any
    /// gRPC flag is refused).
    pub fn of(
        protocol: AttachProtocol,
        method: Option<&str>,
        service: Option<&str>,
        watch: bool,
    ) -> Result<Option<Self>, GrpcFlagError> {
        if protocol != AttachProtocol::Grpc {
            if watch {
                return Err(GrpcFlagError::WatchNotGrpc(protocol));
            }
            if method.is_some() || service.is_some() {
                return Err(GrpcFlagError::NotGrpc);
            }
            return Ok(None);
        }
        let method = method.filter(|m| *m != HEALTH_CHECK);
        if let Some(m) = method {
            let parts: Vec<&str> = m.split('/').collect();
            let ok = parts.len() == 3
                && parts[0].is_empty()
                && parts[1..].iter().all(|p| {
                    !p.is_empty()
                        && p.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
                });
            if !ok {
                return Err(GrpcFlagError::Method(m.to_string()));
            }
            if service.is_some() {
                return Err(GrpcFlagError::ServiceWithMethod(m.to_string()));
            }
        }
        Ok(Some(Self {
            method: method.map(str::to_string),
            service: match method {
                Some(_) => None,
                None => Some(service.unwrap_or_default().to_string()),
            },
            watch,
        }))
    }

    /// The `HealthCheckRequest.service` the held Watch asks about: the health check's, or the
    /// whole server's ("") beside another method.
    pub fn watch_service(&self) -> &str {
        self.service.as_deref().unwrap_or_default()
    }

    /// The method called every interval.
    pub fn method_path(&self) -> &str {
        self.method.as_deref().unwrap_or(HEALTH_CHECK)
    }
}

#[cfg(test)]
mod grpc_tests {
    use super::*;

    #[test]
    fn grpc_flags_are_checked() {
        let g = AttachGrpc::of(AttachProtocol::Grpc, None, None, false).unwrap();
        assert_eq!(
            g,
            Some(AttachGrpc {
                method: None,
                service: Some(String::new()),
                watch: false,
            })
        );
        assert_eq!(g.unwrap().method_path(), HEALTH_CHECK);
        let g = AttachGrpc::of(AttachProtocol::Grpc, Some("/shop.Cart/Ping"), None, true)
            .unwrap()
            .unwrap();
        assert_eq!(
            (g.method_path(), g.service.clone()),
            ("/shop.Cart/Ping", None)
        );
        // Beside another method, the Watch asks about the whole server.
        assert!(g.watch);
        assert_eq!(g.watch_service(), "");
        for bad in ["shop.Cart/Ping", "/shop.Cart", "/a/b/c", "/a b/c"] {
            assert_eq!(
                AttachGrpc::of(AttachProtocol::Grpc, Some(bad), None, false),
                Err(GrpcFlagError::Method(bad.into()))
            );
        }
        assert!(matches!(
            AttachGrpc::of(AttachProtocol::Grpc, Some("/a.B/C"), Some("x"), false),
            Err(GrpcFlagError::ServiceWithMethod(_))
        ));
        assert_eq!(
            AttachGrpc::of(AttachProtocol::Http2, None, Some("x"), false),
            Err(GrpcFlagError::NotGrpc)
        );
        assert_eq!(
            AttachGrpc::of(AttachProtocol::Http, None, None, false),
            Ok(None)
        );
        assert_eq!(
            AttachGrpc::of(AttachProtocol::Http2, None, None, true),
            Err(GrpcFlagError::WatchNotGrpc(AttachProtocol::Http2))
        );
        let e = AttachGrpc::of(AttachProtocol::Tcp, None, None, true).unwrap_err();
        assert!(e.to_string().contains("--grpc-watch"), "{e}");
    }
}
