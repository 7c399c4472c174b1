//! `drainwatch client --attach`: measure an unmodified workload's connections through its
//! Service. HTTP keep-alive flows (`http_flow`), held TCP flows (`tcp_hold`), held WebSocket
//! flows (`ws_flow`, over `ws`) and the new-connection prober (`dial`) write the `attach_*` events that `evidence::attach` reads.
//! Deterministic: sequential ids, no randomness; times come from `host` at the edge.

pub mod dial;
pub mod emit;
pub mod grpc_call;
pub mod grpc_svc;
pub mod grpc_watch;
pub mod h2_conn;
pub mod h2_flow;
pub mod h2_frames;
pub mod http;
pub mod http_flow;
pub mod tcp_hold;
pub mod tls;
pub mod ws;
pub mod ws_flow;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::evidence::attach::{AttachConfig, AttachProtocol};
use crate::evidence::event::EventName;
use crate::evidence::request_id::Spelling;
use crate::net::{ClientError, limits};
use crate::recorder::Sink;
use emit::{Emitter, Failure};

/// What the tasks need, as durations.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Protocol.
    pub protocol: AttachProtocol,
    /// Host name for the `Host` header.
    pub host: String,
    /// Port.
    pub port: u16,
    /// Request path (HTTP) or handshake target (WebSocket).
    pub path: String,
    /// The good status.
    pub expect_status: u16,
    /// Request interval per flow.
    pub interval: Duration,
    /// Bound of one dial and one request.
    pub request_timeout: Duration,
    /// Keepalive idle time.
    pub keepalive_idle: Duration,
    /// Keepalive probe interval.
    pub keepalive_interval: Duration,
    /// Keepalive probes.
    pub keepalive_count: u32,
    /// TCP_USER_TIMEOUT; zero leaves the kernel default.
    pub user_timeout: Duration,
    /// TLS over every connection; `None`: plain TCP.
    pub tls: Option<Arc<tls::Tls>>,
    /// What the gRPC arm calls; `None` on the other protocols.
    pub grpc: Option<crate::evidence::attach::AttachGrpc>,
    /// The `Host` header of every HTTP/1.1 request: `--host-header`, else `HOST:PORT`
    /// (made once, not per request).
    pub authority: String,
    /// How the `X-Drainwatch-Request` ids are spelled: under the trial's prefix, or bare.
    pub ids: Spelling,
}

impl Settings {
    /// The settings of `c`; reads the CA file when TLS is asked for.
    pub fn of(c: &AttachConfig) -> Result<Self, tls::TlsSetupError> {
        Ok(Self {
            protocol: c.protocol,
            host: c.host.clone(),
            port: c.port,
            path: c.path.clone().unwrap_or_else(|| "/".into()),
            expect_status: c.expect_status.unwrap_or(200),
            interval: Duration::from_millis(c.interval_ms.max(1)),
            request_timeout: Duration::from_millis(c.request_timeout_ms.max(1)),
            keepalive_idle: Duration::from_millis(c.keepalive_idle_ms.max(1000)),
            keepalive_interval: Duration::from_millis(c.keepalive_interval_ms.max(1000)),
            keepalive_count: c.keepalive_count.max(1),
            user_timeout: Duration::from_millis(c.user_timeout_ms),
            tls: c
                .tls
                .as_ref()
                .map(|t| tls::Tls::new(t, c.protocol.is_h2()))
                .transpose()?
                .map(Arc::new),
            grpc: c.grpc.clone(),
            authority: c
                .host_header
                .clone()
                .unwrap_or_else(|| format!("{}:{}", c.host, c.port)),
            ids: Spelling::new(c.request_id_prefix.as_ref()),
        })
    }

    /// `s` wrapped in TLS when asked for, else as it is.
    pub async fn wrap(&self, s: TcpStream) -> Result<tls::Conn, Failure> {
        match &self.tls {
            Some(t) => t.wrap(s, self.request_timeout).await,
            None => Ok(tls::Conn::Plain(s)),
        }
    }
}

/// Dials `addr` and, when asked for, completes the TLS handshake on it.
pub async fn open_conn(addr: SocketAddr, cfg: &Settings) -> Result<tls::Conn, Failure> {
    let s = connect(addr, cfg.request_timeout).await?;
    cfg.wrap(s).await
}

/// Dials `addr` within `timeout`; a failure carries its mechanism.
pub async fn connect(addr: SocketAddr, timeout: Duration) -> Result<TcpStream, Failure> {
    match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(Failure::io("connect", &e)),
        Err(_) => Err(Failure::timeout("connect", timeout.as_millis())),
    }
}

/// The flow id of held connection `i` (from 1).
pub fn flow_id(protocol: AttachProtocol, i: u32) -> String {
    format!("{}-{i:04}", protocol.flow_prefix())
}

/// Which ids this client's flows and dials carry. A shard of a sharded run continues the run's
/// sequences (its flows a contiguous slice, its dials every `dial_stride`-th number), so the
/// shards together never repeat an id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ids {
    /// Number of the first held connection (`<prefix>-<K>`).
    pub first_flow: u32,
    /// Number of the first dial (`dial-<K>`).
    pub first_dial: u64,
    /// The step between this client's dial numbers.
    pub dial_stride: u64,
}

impl Default for Ids {
    fn default() -> Self {
        Self {
            first_flow: 1,
            first_dial: 1,
            dial_stride: 1,
        }
    }
}

/// The running attach client.
pub struct AttachHandle {
    cancel: CancellationToken,
    tracker: TaskTracker,
    emit: Emitter,
}

impl AttachHandle {
    /// Closes the window: every flow records how it stands, in-flight dials finish, then
    /// `attach_window_ended` is written with `reason`.
    pub async fn close(self, reason: &str) {
        self.cancel.cancel();
        self.tracker.close();
        self.tracker.wait().await;
        self.emit
            .send(self.emit.line(EventName::AttachWindowEnded).detail(reason));
    }
}

/// Resolves the target and starts every flow and the prober; events go to `sink`.
pub async fn start(c: &AttachConfig, ids: Ids, sink: Sink) -> Result<AttachHandle, ClientError> {
    let probers = if c.direct_dial.is_some() { 2 } else { 1 };
    let in_flight_dials = probers * u64::from(c.dial_rate) * (c.request_timeout_ms / 1000 + 1);
    limits::ensure_fds(u64::from(c.tcp_flows) + in_flight_dials)?;
    let addr = crate::net::resolve(&c.host, c.port).await?;
    let cfg = Arc::new(Settings::of(c).map_err(|e| ClientError::Tls(e.to_string()))?);
    // Resolved before anything is started, so a bad address stops nothing half begun.
    let direct = match &c.direct_dial {
        Some(d) => Some((
            crate::net::resolve(&d.host, d.port).await?,
            // The Service itself, named as itself: not the ingress's Host.
            Arc::new(Settings {
                authority: d.to_string(),
                ..Settings::of(c).map_err(|e| ClientError::Tls(e.to_string()))?
            }),
        )),
        None => None,
    };
    let emit = Emitter::new(sink);
    emit.send(
        emit.line(EventName::AttachWindowStarted)
            .detail(format!("{} {}:{} ({addr})", c.protocol, c.host, c.port)),
    );
    let cancel = CancellationToken::new();
    let tracker = TaskTracker::new();
    let n = c.tcp_flows.max(1);
    for i in 1..=c.tcp_flows {
        let id = flow_id(c.protocol, ids.first_flow.saturating_add(i - 1));
        match c.protocol {
            AttachProtocol::Http2 | AttachProtocol::Grpc => {
                let phase = cfg.interval * (i - 1) / n;
                tracker.spawn(h2_flow::run(
                    id,
                    addr,
                    cfg.clone(),
                    emit.clone(),
                    phase,
                    cancel.clone(),
                ));
            }
            AttachProtocol::Http => {
                let phase = cfg.interval * (i - 1) / n;
                tracker.spawn(http_flow::run(
                    id,
                    addr,
                    cfg.clone(),
                    emit.clone(),
                    phase,
                    cancel.clone(),
                ));
            }
            AttachProtocol::Websocket => {
                let phase = cfg.interval * (i - 1) / n;
                tracker.spawn(ws_flow::run(
                    id,
                    addr,
                    cfg.clone(),
                    emit.clone(),
                    phase,
                    cancel.clone(),
                ));
            }
            AttachProtocol::Tcp => {
                tracker.spawn(tcp_hold::run(
                    id,
                    addr,
                    cfg.clone(),
                    emit.clone(),
                    cancel.clone(),
                ));
            }
        }
    }
    if c.dial_rate > 0 {
        tracker.spawn(dial::run(
            addr,
            cfg.clone(),
            emit.clone(),
            (c.dial_rate, ids),
            dial::Prober::Arm,
            cancel.clone(),
        ));
        if let Some((addr, direct)) = direct {
            tracker.spawn(dial::run(
                addr,
                direct,
                emit.clone(),
                (c.dial_rate, ids),
                dial::Prober::Direct,
                cancel.clone(),
            ));
        }
    }
    Ok(AttachHandle {
        cancel,
        tracker,
        emit,
    })
}
