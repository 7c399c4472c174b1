//! `drainwatch client`'s engine: the flow generator. It dials the flows, runs one task per
//! flow, and turns what the sockets show into event lines through the core's flow machine.

pub mod attach;
pub mod bench;
pub mod follow;
pub mod limits;
pub mod progress;
pub mod record;
pub mod tcp;
pub mod udp;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::evidence::flow::{Proto, flow_id};
use crate::recorder::Sink;
use progress::Progress;
use record::FlowRecorder;

/// How the client runs its flows.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Host to dial.
    pub host: String,
    /// TCP port.
    pub tcp_port: u16,
    /// UDP port.
    pub udp_port: u16,
    /// Number of TCP flows.
    pub tcp_flows: u32,
    /// Number of UDP flows.
    pub udp_flows: u32,
    /// Number of the first TCP flow: a shard of a sharded run continues the global ids.
    pub first_tcp_flow: u32,
    /// Number of the first UDP flow.
    pub first_udp_flow: u32,
    /// Ping interval.
    pub interval: Duration,
    /// Silence after which a TCP flow is read-timeout.
    pub flow_timeout: Duration,
    /// Silence that records a (non-terminal) gap.
    pub gap_threshold: Duration,
    /// Unanswered datagrams that end a UDP flow.
    pub udp_silence_datagrams: u32,
    /// Total time allowed for one flow's dial retries.
    pub dial_window: Duration,
    /// Time allowed for one dial attempt.
    pub dial_timeout: Duration,
    /// Pause between dial attempts.
    pub dial_retry: Duration,
    /// Ask for the probe's clock in UDP acks (the opt-in wire extension).
    pub clock_extension: bool,
    /// How many flows of each protocol record clock samples.
    pub clock_sample_flows: u32,
    /// Benchmark counters, when measuring (`--bench-stats`).
    pub bench: Option<Arc<bench::BenchStats>>,
}

impl ClientConfig {
    /// The defaults of the Go client for `host`.
    pub fn new(host: impl Into<String>, tcp_port: u16, udp_port: u16) -> Self {
        Self {
            host: host.into(),
            tcp_port,
            udp_port,
            tcp_flows: 10,
            udp_flows: 10,
            first_tcp_flow: 1,
            first_udp_flow: 1,
            interval: Duration::from_millis(500),
            flow_timeout: Duration::from_secs(10),
            gap_threshold: tcp::GAP_THRESHOLD,
            udp_silence_datagrams: 6,
            dial_window: Duration::from_secs(20),
            dial_timeout: Duration::from_secs(5),
            dial_retry: Duration::from_millis(250),
            clock_extension: false,
            clock_sample_flows: 3,
            bench: None,
        }
    }

    /// Where in the interval flow `idx` sends: the flows are spread evenly over it so that
    /// thousands of pings do not leave in the same millisecond and queue behind each other.
    pub fn phase(&self, idx: usize) -> Duration {
        let total = u64::from(self.tcp_flows) + u64::from(self.udp_flows);
        let idx = u64::try_from(idx).unwrap_or(0);
        match u32::try_from(idx * 1_000_000 / total.max(1)) {
            Ok(ppm) => self.interval * ppm / 1_000_000,
            Err(_) => Duration::ZERO,
        }
    }

    /// The numbers of this client's TCP flows (their ids are `tcp-<n>`).
    pub fn tcp_numbers(&self) -> std::ops::Range<u32> {
        self.first_tcp_flow..self.first_tcp_flow.saturating_add(self.tcp_flows)
    }

    /// The numbers of this client's UDP flows.
    pub fn udp_numbers(&self) -> std::ops::Range<u32> {
        self.first_udp_flow..self.first_udp_flow.saturating_add(self.udp_flows)
    }

    /// All flow ids in order: TCP first, then UDP.
    pub fn flow_ids(&self) -> Vec<String> {
        self.tcp_numbers()
            .map(|i| flow_id(Proto::Tcp, i))
            .chain(self.udp_numbers().map(|i| flow_id(Proto::Udp, i)))
            .collect()
    }
}

/// Failures before any flow is dialled.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The host did not resolve.
    #[error("failed to resolve {host}:{port}")]
    Resolve {
        /// Host.
        host: String,
        /// Port.
        port: u16,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Resolution returned nothing.
    #[error("{0} resolved to no address")]
    NoAddress(String),
    /// Not enough file descriptors.
    #[error(transparent)]
    Limits(#[from] limits::LimitError),
    /// The TLS settings do not make a client (the CA file, the server name).
    #[error("{0}")]
    Tls(String),
}

/// The running flows.
pub struct ClientHandle {
    /// Where each flow stands.
    pub progress: Arc<Progress>,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl ClientHandle {
    /// Closes the observation window: every live flow records `observation_end` and closes.
    pub async fn close(&self) {
        self.cancel.cancel();
        self.tracker.close();
        self.tracker.wait().await;
    }
}

/// The first address of `host:port`.
pub async fn resolve(host: &str, port: u16) -> Result<SocketAddr, ClientError> {
    let mut addrs = tokio::net::lookup_host((host, port))
        .await
        .map_err(|source| ClientError::Resolve {
            host: host.to_string(),
            port,
            source,
        })?;
    addrs
        .next()
        .ok_or_else(|| ClientError::NoAddress(format!("{host}:{port}")))
}

/// Starts every flow; events go to `sink` as they happen.
pub async fn start(cfg: ClientConfig, sink: Sink) -> Result<ClientHandle, ClientError> {
    limits::ensure_fds(u64::from(cfg.tcp_flows) + u64::from(cfg.udp_flows))?;
    limits::ensure_ports(u64::from(cfg.tcp_flows), u64::from(cfg.udp_flows))?;
    let tcp_addr = resolve(&cfg.host, cfg.tcp_port).await?;
    let udp_addr = resolve(&cfg.host, cfg.udp_port).await?;
    if let Some(b) = &cfg.bench {
        b.started_ns
            .store(crate::host::mono_ns(), std::sync::atomic::Ordering::Relaxed);
    }
    let progress = Arc::new(Progress::new(cfg.flow_ids()));
    let cancel = CancellationToken::new();
    let tracker = TaskTracker::new();
    // One copy of the configuration for all flows, not one per task.
    let shared = Arc::new(cfg.clone());
    let mut idx = 0usize;
    // Clock samples come from the globally first flows, so a sharded run samples once.
    for i in cfg.tcp_numbers() {
        let rec = FlowRecorder::new(
            flow_id(Proto::Tcp, i),
            Proto::Tcp,
            idx,
            sink.clone(),
            progress.clone(),
            i <= cfg.clock_sample_flows,
        );
        tracker.spawn(tcp::run(rec, tcp_addr, shared.clone(), cancel.clone()));
        idx += 1;
    }
    for i in cfg.udp_numbers() {
        let rec = FlowRecorder::new(
            flow_id(Proto::Udp, i),
            Proto::Udp,
            idx,
            sink.clone(),
            progress.clone(),
            i <= cfg.clock_sample_flows,
        );
        tracker.spawn(udp::run(rec, udp_addr, shared.clone(), cancel.clone()));
        idx += 1;
    }
    Ok(ClientHandle {
        progress,
        cancel,
        tracker,
    })
}
