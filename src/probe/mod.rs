//! `drainwatch probe`: the workload whose termination is measured.
//!
//! It holds TCP flows with heartbeats, answers UDP pings, serves readiness, and on SIGTERM does
//! exactly one of three things (drain, exit-now, ignore), logging each step as an event line on
//! stdout. The first act on SIGTERM is to log `sigterm_received`, so its time is the delivery
//! time.

pub mod abuse;
pub mod config;
pub mod emit;
pub mod ready;
pub mod scan;
pub mod tcp;
pub mod udp;

use std::net::{Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::{TcpListener, UdpSocket};

use crate::evidence::event::EventName;
use crate::evidence::plan::DrainBehavior;
use crate::host;
use abuse::Refusals;
use config::ProbeConfig;
use emit::Emitter;
use tcp::{Command, ConnOpts, FlowGuard, TcpSide};

/// Failures that stop the probe before it serves.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// A port could not be bound.
    #[error("failed to bind {proto} port {port}")]
    Bind {
        /// tcp, udp or readyz.
        proto: &'static str,
        /// The port.
        port: u16,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Signal handlers could not be installed.
    #[error("failed to install the SIGTERM handler")]
    Signals(#[source] std::io::Error),
    /// The readiness server's thread could not be started.
    #[error("failed to start the readiness thread")]
    ReadyThread(#[source] std::io::Error),
    /// Host facts unavailable.
    #[error(transparent)]
    Host(#[from] host::HostError),
}

/// A socket on `[::]:port` accepting IPv4 too, or on `0.0.0.0:port` where IPv6 is off.
fn socket(ty: Type, port: u16, reuse_port: bool) -> std::io::Result<Socket> {
    let proto = if ty == Type::STREAM {
        Protocol::TCP
    } else {
        Protocol::UDP
    };
    let v6 = Socket::new(Domain::IPV6, ty, Some(proto)).and_then(|s| {
        s.set_only_v6(false)?;
        Ok(s)
    });
    let (sock, addr) = match v6 {
        Ok(s) => (s, SocketAddr::from((Ipv6Addr::UNSPECIFIED, port))),
        Err(_) => (
            Socket::new(Domain::IPV4, ty, Some(proto))?,
            SocketAddr::from(([0, 0, 0, 0], port)),
        ),
    };
    sock.set_reuse_address(true)?;
    if reuse_port {
        sock.set_reuse_port(true)?;
    }
    sock.set_nonblocking(true)?;
    sock.bind(&addr.into())?;
    Ok(sock)
}

/// How long the drain waits for the flows it closed at its deadline: each close waits at most
/// about 4 s (write deadline + FIN linger); the probe must not outlive that.
pub const DRAIN_CLOSE_LIMIT: Duration = Duration::from_secs(5);
/// How long exit-now waits for its resets to be issued before it exits anyway.
pub const RESET_CLOSE_LIMIT: Duration = Duration::from_secs(2);

/// The listen backlog asked for: thousands of flows dial at once.
const BACKLOG: u64 = 4096;

/// Descriptors the TCP connection cap leaves for the kubelet's health checks: a few, not all
/// [`ready::MAX_HEALTH_CONNECTIONS`], or a low open-file limit would refuse flows that fit
/// before the cap existed (100 flows under 200 files: tests/sharded.rs). Health connections
/// past this share an EMFILE, counted by the health server like any refused accept.
pub const HEALTH_FD_RESERVE: u64 = 8;

/// Descriptors kept free besides [`crate::net::limits::RESERVED_FDS`]: a few health
/// connections and the UDP sockets.
fn spare_fds(cfg: &ProbeConfig) -> u64 {
    crate::net::limits::RESERVED_FDS + HEALTH_FD_RESERVE + cfg.udp_sockets as u64
}

/// Raises the open-file limit as far as it goes and says where the limits stand, so that a cap
/// met under load (EMFILE, dropped SYNs) is named in the log rather than silent. Returns the
/// TCP connection cap: what the open files leave, or the configured cap when lower.
fn announce_limits(cfg: &ProbeConfig, emitter: &Emitter) -> u64 {
    let (files, by_files) = match crate::net::limits::raise_nofile_to_hard() {
        Ok((soft, hard)) => {
            let fit = soft.saturating_sub(spare_fds(cfg)).max(1);
            (
                format!("open_files={soft} (hard limit {hard}; about {fit} connections)"),
                fit,
            )
        }
        Err(e) => (format!("open_files=unknown ({e})"), u64::MAX),
    };
    let cap = cfg.max_connections.map_or(by_files, |c| c.min(by_files));
    let files = format!("{files} max_connections={cap}");
    let backlog = match crate::net::limits::somaxconn() {
        Some(cap) if cap < BACKLOG => format!(
            "accept_backlog={cap} (asked {BACKLOG}, capped by net.core.somaxconn={cap}: raise it with sysctl for faster mass connects)"
        ),
        Some(_) => format!("accept_backlog={BACKLOG}"),
        None => format!("accept_backlog={BACKLOG} (net.core.somaxconn unreadable)"),
    };
    emitter.emit(EventName::Limits, None, Some(format!("{files} {backlog}")));
    cap
}

fn bind_tcp(port: u16, proto: &'static str) -> Result<TcpListener, ProbeError> {
    TcpListener::from_std(bind_std_tcp(port, proto)?).map_err(|source| ProbeError::Bind {
        proto,
        port,
        source,
    })
}

/// A listening, non-blocking socket not yet tied to a runtime.
fn bind_std_tcp(port: u16, proto: &'static str) -> Result<std::net::TcpListener, ProbeError> {
    let err = |source| ProbeError::Bind {
        proto,
        port,
        source,
    };
    let s = socket(Type::STREAM, port, false).map_err(err)?;
    s.listen(i32::try_from(BACKLOG).unwrap_or(i32::MAX))
        .map_err(err)?;
    s.set_nonblocking(true).map_err(err)?;
    Ok(s.into())
}

fn bind_udp(port: u16) -> Result<UdpSocket, ProbeError> {
    let err = |source| ProbeError::Bind {
        proto: "udp",
        port,
        source,
    };
    let s = socket(Type::DGRAM, port, true).map_err(err)?;
    let _ = s.set_recv_buffer_size(4 << 20);
    let _ = s.set_send_buffer_size(4 << 20);
    UdpSocket::from_std(s.into()).map_err(err)
}

/// The probe's bound sockets.
struct Sockets {
    tcp: TcpListener,
    /// Served on a thread of its own ([`ready::serve_apart`]).
    ready: std::net::TcpListener,
    udp: Vec<UdpSocket>,
}

/// What serving leaves running for the SIGTERM behaviour to act on.
struct Serving {
    side: Arc<TcpSide>,
    draining: Arc<AtomicBool>,
    accept: tokio::task::JoinHandle<()>,
    stats_logger: tokio::task::JoinHandle<()>,
}

/// Runs the probe until its behaviour says to exit; returns the exit code.
pub async fn run(cfg: ProbeConfig, emitter: Emitter) -> Result<i32, ProbeError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigterm = signal(SignalKind::terminate()).map_err(ProbeError::Signals)?;
    let mut sigint = signal(SignalKind::interrupt()).map_err(ProbeError::Signals)?;

    announce_start(&cfg, &emitter)?;
    let max_connections = announce_limits(&cfg, &emitter);
    let sockets = bind(&cfg)?;
    emitter.emit(
        EventName::Listening,
        None,
        Some(format!(
            "tcp=:{} udp=:{} readyz=:{} udp_sockets={}",
            cfg.tcp_port, cfg.udp_port, cfg.ready_port, cfg.udp_sockets
        )),
    );
    let refusals = Refusals::new(emitter.clone());
    let guard = FlowGuard {
        refusals: refusals.clone(),
        max_connections,
    };
    let serving = serve(&cfg, &emitter, sockets, guard)?;

    let signal_name = tokio::select! {
        _ = sigterm.recv() => "terminated",
        _ = sigint.recv() => "interrupt",
    };
    emitter.emit_with_behavior(EventName::SigtermReceived, format!("signal={signal_name}"));
    serving.stats_logger.abort();
    refusals.log_totals();

    let code = match cfg.behavior {
        DrainBehavior::Drain => {
            drain(
                &cfg,
                &emitter,
                &serving.side,
                &serving.draining,
                serving.accept,
            )
            .await
        }
        DrainBehavior::ExitNow => exit_now(&cfg, &emitter, &serving.side).await,
        DrainBehavior::Ignore => {
            emitter.emit(
                EventName::SigtermIgnored,
                None,
                Some("continuing to serve; readiness remains 200; waiting for SIGKILL at the grace-period boundary".into()),
            );
            // Further SIGTERMs are ignored too; only SIGKILL ends this process.
            loop {
                tokio::select! {
                    _ = sigterm.recv() => {}
                    _ = sigint.recv() => {}
                }
            }
        }
    };
    Ok(code)
}

/// The `probe_started` line: version, configuration, behaviour and boot id.
fn announce_start(cfg: &ProbeConfig, emitter: &Emitter) -> Result<(), ProbeError> {
    let mut started = emitter.line(EventName::ProbeStarted);
    started.detail = Some(format!(
        "probe_version={} probe_commit={} instance={} tcp={} udp={} readyz={} drain_max_seconds={} exit_now_force_rst={} heartbeat_ms={}",
        host::VERSION,
        host::GIT_COMMIT,
        cfg.instance,
        cfg.tcp_port,
        cfg.udp_port,
        cfg.ready_port,
        cfg.drain_max.as_secs(),
        cfg.force_rst,
        cfg.heartbeat.as_millis()
    ));
    started.drain_behavior = Some(cfg.behavior);
    started.boot_id = Some(host::boot_id()?);
    emitter.send(started);
    Ok(())
}

/// Binds the TCP, readiness and UDP sockets.
fn bind(cfg: &ProbeConfig) -> Result<Sockets, ProbeError> {
    let tcp = bind_tcp(cfg.tcp_port, "tcp")?;
    let ready = bind_std_tcp(cfg.ready_port, "readyz")?;
    let mut udp = Vec::with_capacity(cfg.udp_sockets);
    for _ in 0..cfg.udp_sockets {
        udp.push(bind_udp(cfg.udp_port)?);
    }
    Ok(Sockets { tcp, ready, udp })
}

/// Starts every server task: TCP accepts, readiness, UDP, the UDP stats line every 5 s and,
/// in benchmark mode, the SIGUSR1 single close.
fn serve(
    cfg: &ProbeConfig,
    emitter: &Emitter,
    sockets: Sockets,
    guard: FlowGuard,
) -> Result<Serving, ProbeError> {
    let instance: Arc<str> = Arc::from(cfg.instance.as_str());
    let draining = Arc::new(AtomicBool::new(false));
    let side = TcpSide::new();
    let accept = tokio::spawn(tcp::accept_loop(
        sockets.tcp,
        side.clone(),
        emitter.clone(),
        instance.clone(),
        ConnOpts {
            log_heartbeats: cfg.log_heartbeats,
            bench: cfg.bench,
            heartbeat: cfg.heartbeat,
        },
        guard.clone(),
    ));
    if cfg.bench {
        tokio::spawn(close_one_on_sigusr1(
            side.clone(),
            emitter.clone(),
            single_close_command(cfg),
        ));
    }
    ready::serve_apart(sockets.ready, draining.clone(), guard.refusals.clone())
        .map_err(ProbeError::ReadyThread)?;
    let stats = Arc::new(udp::UdpStats::default());
    for s in sockets.udp {
        tokio::spawn(udp::serve(
            s,
            emitter.clone(),
            instance.clone(),
            stats.clone(),
            guard.refusals.clone(),
            cfg.udp_sockets,
        ));
    }
    let stats_logger = tokio::spawn(log_udp_stats(emitter.clone(), stats));
    Ok(Serving {
        side,
        draining,
        accept,
        stats_logger,
    })
}

/// A `udp_stats` line every 5 s, the first after 5 s.
async fn log_udp_stats(e: Emitter, st: Arc<udp::UdpStats>) {
    let mut t = tokio::time::interval(Duration::from_secs(5));
    t.tick().await;
    loop {
        t.tick().await;
        e.emit(
            EventName::UdpStats,
            None,
            Some(format!(
                "flows={} replies={}",
                st.flows.load(Ordering::Relaxed),
                st.replies.load(Ordering::Relaxed)
            )),
        );
    }
}

/// How a single close is done in benchmark mode: the same way the behaviour closes them all.
fn single_close_command(cfg: &ProbeConfig) -> Command {
    if cfg.behavior == DrainBehavior::ExitNow && cfg.force_rst {
        Command::Reset
    } else {
        Command::Graceful
    }
}

/// Benchmark mode: every SIGUSR1 closes the oldest open connection, so the detection latency of
/// one close can be measured while every other flow keeps serving.
async fn close_one_on_sigusr1(side: Arc<TcpSide>, emitter: Emitter, cmd: Command) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut usr1) = signal(SignalKind::user_defined1()) else {
        emitter.emit(
            EventName::BenchCloseOneUnavailable,
            None,
            Some("failed to install the SIGUSR1 handler".into()),
        );
        return;
    };
    while usr1.recv().await.is_some() {
        if !side.command_one(cmd) {
            emitter.emit(
                EventName::BenchCloseOneNone,
                None,
                Some("no open connection left to close".into()),
            );
        }
    }
}

async fn drain(
    cfg: &ProbeConfig,
    emitter: &Emitter,
    side: &Arc<TcpSide>,
    draining: &AtomicBool,
    accept: tokio::task::JoinHandle<()>,
) -> i32 {
    draining.store(true, Ordering::SeqCst);
    emitter.emit(
        EventName::ReadyzNow503,
        None,
        Some("/readyz now returns 503".into()),
    );
    side.stop_accepting.cancel();
    let _ = accept.await;
    emitter.emit(
        EventName::StoppedAccepting,
        None,
        Some("tcp listener closed; established flows continue".into()),
    );
    let open = side.open.load(Ordering::Relaxed);
    emitter.emit(
        EventName::DrainStarted,
        None,
        Some(format!(
            "established_flows={open} drain_max_seconds={}",
            cfg.drain_max.as_secs()
        )),
    );
    side.tracker.close();
    let all_closed = tokio::time::timeout(cfg.drain_max, side.tracker.wait()).await;
    if all_closed.is_ok() {
        emitter.emit(
            EventName::DrainComplete,
            None,
            Some("every client closed its flow before the drain deadline".into()),
        );
    } else {
        let still = side.open.load(Ordering::Relaxed);
        emitter.emit(
            EventName::DrainDeadlineReached,
            None,
            Some(format!(
                "drain window of {}s expired with {still} flows still open; closing them gracefully",
                cfg.drain_max.as_secs()
            )),
        );
        let _ = side.command.send(Command::Graceful);
        let _ = tokio::time::timeout(DRAIN_CLOSE_LIMIT, side.tracker.wait()).await;
    }
    emitter.emit_with_behavior(EventName::Exiting, "exit(0) after drain".into());
    0
}

async fn exit_now(cfg: &ProbeConfig, emitter: &Emitter, side: &Arc<TcpSide>) -> i32 {
    let open = side.open.load(Ordering::Relaxed);
    if cfg.force_rst {
        let _ = side.command.send(Command::Reset);
        side.tracker.close();
        let _ = tokio::time::timeout(RESET_CLOSE_LIMIT, side.tracker.wait()).await;
    } else {
        let _ = side.command.send(Command::OpenAtExit);
        // Give each task a turn to log; they then hold their sockets until exit.
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    emitter.emit_with_behavior(
        EventName::Exiting,
        format!("exit(0) immediately on SIGTERM with {open} established flows"),
    );
    0
}
