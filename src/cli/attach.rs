//! `drainwatch client --attach`: the flags that point the client at a user's own workload.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::parse_duration;
use crate::evidence::attach::{AttachConfig, AttachGrpc, AttachProtocol, AttachTls};
use crate::evidence::plan::attach::config::DirectDial;
use crate::evidence::request_id::RequestIdPrefix;

/// The protocol the attach client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProtocolArg {
    /// Held connections with no payload (keepalive and TCP_USER_TIMEOUT bound a black hole).
    Tcp,
    /// Keep-alive HTTP/1.1 GETs every interval.
    Http,
    /// Held WebSocket connections (handshake to --path), a ping every interval, each pong
    /// awaited within the request timeout (2 s; client --attach: --request-timeout).
    Websocket,
    /// HTTP/2 (h2c with prior knowledge; h2 by ALPN with --tls): a GET of --path every
    /// interval as a new stream on each held connection; GOAWAY and RST_STREAM recorded.
    Http2,
    /// gRPC over HTTP/2: a unary call every interval on each held connection
    /// (grpc.health.v1.Health/Check unless --grpc-method), optionally one Health/Watch held.
    Grpc,
}

impl From<ProtocolArg> for AttachProtocol {
    fn from(p: ProtocolArg) -> Self {
        match p {
            ProtocolArg::Tcp => Self::Tcp,
            ProtocolArg::Http => Self::Http,
            ProtocolArg::Websocket => Self::Websocket,
            ProtocolArg::Http2 => Self::Http2,
            ProtocolArg::Grpc => Self::Grpc,
        }
    }
}

/// Attach flags of `drainwatch client` (used with `--attach`; `--host`, `--tcp-flows`,
/// `--interval`, `--duration` and `--out` are the client's own).
#[derive(Debug, Clone, Args)]
pub struct AttachArgs {
    /// Measure an unmodified workload (a Service ClusterIP or NodePort) instead of the probe.
    #[arg(long)]
    pub attach: bool,
    /// The workload's protocol.
    #[arg(long, value_enum, default_value_t = ProtocolArg::Http, requires = "attach")]
    pub protocol: ProtocolArg,
    /// The workload's port.
    #[arg(long, requires = "attach", required_if_eq("attach", "true"))]
    pub port: Option<u16>,
    /// HTTP (and HTTP/2) request path, or the WebSocket handshake's target.
    #[arg(long, default_value = "/", requires = "attach")]
    pub path: String,
    /// gRPC: the unary method called every interval, /package.Service/Method, sent an empty
    /// message (e.g. a method taking google.protobuf.Empty); default
    /// /grpc.health.v1.Health/Check, whose answer must be SERVING.
    #[arg(long, requires = "attach")]
    pub grpc_method: Option<String>,
    /// gRPC: HealthCheckRequest.service of the health check (default "": the whole server).
    #[arg(long, requires = "attach")]
    pub grpc_service: Option<String>,
    /// gRPC: also hold one grpc.health.v1.Health/Watch per connection (the health check's
    /// service) and record its serving statuses and how it ended (a status, or cut).
    #[arg(long, requires = "attach")]
    pub grpc_watch: bool,
    /// The status of a good HTTP response.
    #[arg(long, default_value_t = 200, requires = "attach")]
    pub expect_status: u16,
    /// New connections dialled per second through the window (0: prober off).
    #[arg(long, default_value_t = 20, requires = "attach")]
    pub dial_rate: u32,
    /// Time allowed for one dial and one request.
    #[arg(long, default_value = "2s", value_parser = parse_duration, requires = "attach")]
    pub request_timeout: Duration,
    /// TCP keepalive idle time of held TCP connections.
    #[arg(long, default_value = "5s", value_parser = parse_duration, requires = "attach")]
    pub keepalive_idle: Duration,
    /// TCP keepalive probe interval.
    #[arg(long, default_value = "1s", value_parser = parse_duration, requires = "attach")]
    pub keepalive_interval: Duration,
    /// TCP keepalive probes before the kernel gives up.
    #[arg(long, default_value_t = 3, requires = "attach")]
    pub keepalive_count: u32,
    /// TCP_USER_TIMEOUT of held TCP connections (0: the kernel's default).
    #[arg(long, default_value = "10s", value_parser = parse_duration, requires = "attach")]
    pub user_timeout: Duration,
    /// Speak TLS on every held connection and dial, over drainwatch's own socket.
    #[arg(long, requires = "attach")]
    pub tls: bool,
    /// The CA certificates (PEM) the server's certificate must chain to (with --tls).
    #[arg(long, requires = "tls")]
    pub ca_file: Option<PathBuf>,
    /// The name the server's certificate must carry, sent as SNI (with --tls); default --host.
    #[arg(long, requires = "tls")]
    pub server_name: Option<String>,
    /// Do not verify the server's certificate (with --tls); the report says so.
    #[arg(long, requires = "tls", conflicts_with = "ca_file")]
    pub insecure_skip_verify: bool,
    /// HTTP: send this `Host` header instead of HOST:PORT (the name an ingress rule matches
    /// when --host is the ingress's address).
    #[arg(long, requires = "attach", value_name = "NAME")]
    pub host_header: Option<String>,
    /// Prefix every X-Drainwatch-Request id with PREFIX and a dot (lowercase letters, digits,
    /// '-'): `drainwatch run` gives each trial its run id and trial number, so that an
    /// ingress's log shared by several runs names each request of one trial only.
    #[arg(long, requires = "attach", value_name = "PREFIX")]
    pub request_id_prefix: Option<RequestIdPrefix>,
    /// Also dial HOST:PORT (the target's Service) at --dial-rate, each attempt recorded as
    /// `attach_direct_dial`: through an ingress, kube-proxy's routing in the same trial, beside
    /// the ingress's. Their failures are not the arm's: only `node-propagation-lag` reads them,
    /// for kube-proxy's lag.
    #[arg(long, requires = "attach", value_name = "HOST:PORT")]
    pub direct_dial: Option<DirectDial>,
    /// Write the event lines to this file instead of stdout.
    #[arg(long, requires = "attach")]
    pub events: Option<PathBuf>,
    /// Number of this client's first prober dial (its id is dial-<K>).
    #[arg(long, default_value_t = 1, value_name = "K", requires = "attach", value_parser = clap::value_parser!(u64).range(1..))]
    pub first_dial: u64,
    /// The step between this client's dial numbers: shard i of N (from 0) dials i+1, i+1+N, …,
    /// so the shards of a run never repeat a dial id.
    #[arg(long, default_value_t = 1, value_name = "N", requires = "attach", value_parser = clap::value_parser!(u64).range(1..))]
    pub dial_stride: u64,
}

/// Why attach flags do not make a run.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AttachFlagError {
    /// No port.
    #[error("--attach needs --port (the workload's port, 1-65535)")]
    NoPort,
    /// Nothing to measure.
    #[error("--attach needs at least one flow: --tcp-flows or --dial-rate above 0")]
    NoFlows,
    /// The path is not absolute.
    #[error("--path {0:?} must start with /")]
    Path(String),
    /// A status outside HTTP's range.
    #[error("--expect-status {0} is not an HTTP status (100-599)")]
    Status(u16),
    /// A zero interval or timeout.
    #[error("{0} must be above 0")]
    Zero(&'static str),
    /// The gRPC flags do not make a call.
    #[error(transparent)]
    Grpc(#[from] crate::evidence::plan::attach::config::GrpcFlagError),
    /// `--host-header` on a protocol that does not send it, or not a host name.
    #[error("{0}")]
    HostHeader(String),
    /// TLS without a way to trust the server.
    #[error(
        "--tls needs --ca-file (the CA to verify the server against) or --insecure-skip-verify"
    )]
    TlsTrust,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl AttachArgs {
    /// The attach configuration these flags ask for.
    pub fn config(
        &self,
        host: &str,
        tcp_flows: u32,
        interval: Duration,
        duration: Duration,
    ) -> Result<AttachConfig, AttachFlagError> {
        let port = self
            .port
            .filter(|p| *p != 0)
            .ok_or(AttachFlagError::NoPort)?;
        if tcp_flows == 0 && self.dial_rate == 0 {
            return Err(AttachFlagError::NoFlows);
        }
        if !self.path.starts_with('/') {
            return Err(AttachFlagError::Path(self.path.clone()));
        }
        if !(100..=599).contains(&self.expect_status) {
            return Err(AttachFlagError::Status(self.expect_status));
        }
        if interval.is_zero() {
            return Err(AttachFlagError::Zero("--interval"));
        }
        if self.request_timeout.is_zero() {
            return Err(AttachFlagError::Zero("--request-timeout"));
        }
        let tls = self.tls_config(host)?;
        let protocol: AttachProtocol = self.protocol.into();
        let host_header = self.host_header(protocol)?;
        let grpc = AttachGrpc::of(
            protocol,
            self.grpc_method.as_deref(),
            self.grpc_service.as_deref(),
            self.grpc_watch,
        )?;
        Ok(AttachConfig {
            target: None,
            service: None,
            protocol,
            host: host.to_string(),
            port,
            path: protocol.has_path().then(|| self.path.clone()),
            expect_status: protocol.has_status().then_some(self.expect_status),
            tcp_flows,
            interval_ms: ms(interval),
            dial_rate: self.dial_rate,
            request_timeout_ms: ms(self.request_timeout),
            keepalive_idle_ms: ms(self.keepalive_idle),
            keepalive_interval_ms: ms(self.keepalive_interval),
            keepalive_count: self.keepalive_count,
            user_timeout_ms: ms(self.user_timeout),
            duration_ms: ms(duration),
            tls,
            grpc,
            host_header,
            request_id_prefix: self.request_id_prefix.clone(),
            direct_dial: self.direct_dial.clone(),
        })
    }

    /// `--host-header`: HTTP/1.1 only (the other protocols' authority is not sent as this
    /// header), and a value a `Host` header can carry.
    fn host_header(&self, protocol: AttachProtocol) -> Result<Option<String>, AttachFlagError> {
        let Some(h) = &self.host_header else {
            return Ok(None);
        };
        if protocol != AttachProtocol::Http {
            return Err(AttachFlagError::HostHeader(format!(
                "--host-header is sent on --protocol http requests, not on {protocol}"
            )));
        }
        let valid = !h.is_empty()
            && h.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._:[]".contains(&b));
        if !valid {
            return Err(AttachFlagError::HostHeader(format!(
                "--host-header {h:?} is not a host name (letters, digits, '-', '.', an optional :PORT)"
            )));
        }
        Ok(Some(h.clone()))
    }

    /// `--tls` and its trust: a CA file or verification off, never an implicit default.
    fn tls_config(&self, host: &str) -> Result<Option<AttachTls>, AttachFlagError> {
        if !self.tls {
            return Ok(None);
        }
        if self.ca_file.is_none() && !self.insecure_skip_verify {
            return Err(AttachFlagError::TlsTrust);
        }
        Ok(Some(AttachTls {
            server_name: self.server_name.clone().unwrap_or_else(|| host.to_string()),
            ca_file: self.ca_file.as_ref().map(|p| p.display().to_string()),
            insecure_skip_verify: self.insecure_skip_verify,
        }))
    }
}

impl super::ClientArgs {
    /// The attach configuration of `drainwatch client --attach`: the attach flags with the
    /// client's host, flows, interval and duration.
    pub fn attach_config(&self) -> Result<AttachConfig, AttachFlagError> {
        self.attach.config(
            &self.host,
            self.flows.tcp_flows,
            self.flows.interval,
            self.duration,
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use crate::evidence::attach::AttachProtocol;
    use clap::Parser;

    fn parse(extra: &[&str]) -> Result<crate::cli::ClientArgs, clap::Error> {
        let mut args = vec!["drainwatch", "client"];
        args.extend_from_slice(extra);
        match Cli::try_parse_from(args)?.command {
            Command::Client(c) => Ok(c),
            _ => panic!("not client"),
        }
    }

    #[test]
    fn attach_flags_become_a_config() {
        let c = parse(&[
            "--attach",
            "--protocol",
            "tcp",
            "--host",
            "svc",
            "--port",
            "8080",
            "--tcp-flows",
            "3",
            "--dial-rate",
            "0",
            "--keepalive-idle",
            "2s",
            "--user-timeout",
            "4s",
        ])
        .unwrap();
        let cfg = c.attach_config().unwrap();
        assert_eq!((cfg.port, cfg.tcp_flows, cfg.dial_rate), (8080, 3, 0));
        assert_eq!((cfg.keepalive_idle_ms, cfg.user_timeout_ms), (2000, 4000));
        assert_eq!((cfg.path, cfg.expect_status), (None, None));
        let h = parse(&["--attach", "--port", "80"]).unwrap();
        let cfg = h.attach_config().unwrap();
        assert_eq!(
            (cfg.path.as_deref(), cfg.expect_status, cfg.dial_rate),
            (Some("/"), Some(200), 20)
        );
        let w = parse(&[
            "--attach",
            "--port",
            "80",
            "--protocol",
            "websocket",
            "--path",
            "/ws",
        ])
        .unwrap();
        let cfg = w.attach_config().unwrap();
        assert_eq!(cfg.protocol, AttachProtocol::Websocket);
        assert_eq!(cfg.tls, None);
        assert_eq!(
            (cfg.path.as_deref(), cfg.expect_status),
            (Some("/ws"), None)
        );
        let t = parse(&[
            "--attach",
            "--port",
            "443",
            "--tls",
            "--insecure-skip-verify",
        ])
        .unwrap();
        let cfg = t.attach_config().unwrap();
        let tls = cfg.tls.unwrap();
        assert!(tls.insecure_skip_verify);
        assert_eq!((tls.server_name, tls.ca_file), (t.host.clone(), None));
    }

    #[test]
    fn attach_refusals_name_the_flag() {
        assert!(
            parse(&["--attach"])
                .unwrap_err()
                .to_string()
                .contains("--port")
        );
        assert!(
            parse(&["--protocol", "tcp"])
                .unwrap_err()
                .to_string()
                .contains("--attach")
        );
        let c = parse(&[
            "--attach",
            "--port",
            "80",
            "--tcp-flows",
            "0",
            "--dial-rate",
            "0",
        ])
        .unwrap();
        let e = c.attach_config().unwrap_err();
        assert!(e.to_string().contains("--tcp-flows"), "{e}");
        // TLS: trust is named, never implied; its flags need --tls.
        let c = parse(&["--attach", "--port", "443", "--tls"]).unwrap();
        let e = c
            .attach
            .config(&c.host, 1, c.flows.interval, c.duration)
            .unwrap_err();
        assert!(e.to_string().contains("--ca-file"), "{e}");
        assert!(parse(&["--attach", "--port", "443", "--ca-file", "ca.pem"]).is_err());
        assert!(
            parse(&[
                "--attach",
                "--port",
                "443",
                "--tls",
                "--ca-file",
                "ca.pem",
                "--insecure-skip-verify"
            ])
            .is_err()
        );
        let c = parse(&["--attach", "--port", "80", "--path", "x"]).unwrap();
        assert!(
            c.attach
                .config(&c.host, 1, c.flows.interval, c.duration)
                .is_err()
        );
    }

    #[test]
    fn a_host_header_is_an_http_name_and_is_recorded() {
        let config = |extra: &[&str]| {
            let mut args = vec!["--attach", "--port", "80"];
            args.extend_from_slice(extra);
            parse(&args).unwrap().attach_config()
        };
        let c = config(&["--host-header", "shop.example"]).unwrap();
        assert_eq!(c.host_header.as_deref(), Some("shop.example"));
        assert_eq!(config(&[]).unwrap().host_header, None);
        let refused = [
            (
                vec!["--protocol", "tcp", "--host-header", "shop.example"],
                "--protocol http",
            ),
            (vec!["--host-header", "shop example"], "not a host name"),
            (
                vec!["--host-header", "shop.example\r\nX-Evil: 1"],
                "not a host name",
            ),
            (vec!["--host-header", ""], "not a host name"),
        ];
        assert_eq!(refused.len(), 4);
        for (extra, why) in refused {
            let e = config(&extra).unwrap_err().to_string();
            assert!(e.contains(why), "{extra:?}: {e}");
        }
    }
}
