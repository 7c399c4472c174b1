//! The probe's TCP side: one task per connection, heartbeats every configured interval (500 ms
//! by default), and the three ways a connection can be ended on command.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use socket2::SockRef;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::time::{Instant, MissedTickBehavior, interval_at, timeout};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::abuse::{Abuse, Refusals};
use super::emit::Emitter;
use super::scan::LineScan;
use crate::evidence::event::EventName;
use crate::host;
use crate::wire;

/// What every connection task is told to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Keep heartbeating.
    Serve,
    /// Send `bye`, half-close, wait for the client's FIN, close.
    Graceful,
    /// SO_LINGER 0 and close: a RST.
    Reset,
    /// Leave the socket to the process exit.
    OpenAtExit,
}

/// Shared state of the TCP side.
pub struct TcpSide {
    /// Connection tasks.
    pub tracker: TaskTracker,
    /// The command every connection follows.
    pub command: watch::Sender<Command>,
    /// Stops the accept loop (the listener is dropped).
    pub stop_accepting: CancellationToken,
    /// Connections currently open.
    pub open: Arc<AtomicU64>,
    next_id: AtomicU64,
    /// Benchmark mode: one command slot per connection, oldest first, so that a single
    /// connection can be closed while the others keep serving.
    singles: Mutex<VecDeque<oneshot::Sender<Command>>>,
}

impl TcpSide {
    /// A TCP side with no connections.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            tracker: TaskTracker::new(),
            command: watch::channel(Command::Serve).0,
            stop_accepting: CancellationToken::new(),
            open: Arc::new(AtomicU64::new(0)),
            next_id: AtomicU64::new(0),
            singles: Mutex::new(VecDeque::new()),
        })
    }

    /// Sends `cmd` to the oldest connection still open (benchmark mode); false when none is.
    pub fn command_one(&self, cmd: Command) -> bool {
        let Ok(mut q) = self.singles.lock() else {
            return false;
        };
        while let Some(tx) = q.pop_front() {
            if tx.send(cmd).is_ok() {
                return true;
            }
        }
        false
    }
}

/// Per-connection options fixed at start.
#[derive(Debug, Clone, Copy)]
pub struct ConnOpts {
    /// Log every heartbeat.
    pub log_heartbeats: bool,
    /// Benchmark mode (see [`super::config::ProbeConfig::bench`]).
    pub bench: bool,
    /// Time between heartbeats.
    pub heartbeat: Duration,
}

/// What bounds the TCP side against a flood, fixed at start.
#[derive(Clone)]
pub struct FlowGuard {
    /// The counters hostile input is noted in.
    pub refusals: Arc<Refusals>,
    /// Connections held at once; past it a connection is reset at once and counted, so the
    /// descriptors the established flows need are never taken by a flood.
    pub max_connections: u64,
}

const WRITE_DEADLINE: Duration = Duration::from_secs(2);
const LINGER_AFTER_BYE: Duration = Duration::from_secs(2);
/// How long the accept loop backs off after a failed accept (EMFILE and friends).
pub const ACCEPT_RETRY_AFTER: Duration = Duration::from_millis(50);

/// Accepts until told to stop; the listener is closed when this returns.
pub async fn accept_loop(
    listener: TcpListener,
    side: Arc<TcpSide>,
    emitter: Emitter,
    instance: Arc<str>,
    opts: ConnOpts,
    guard: FlowGuard,
) {
    loop {
        let accepted = tokio::select! {
            () = side.stop_accepting.cancelled() => break,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and friends: say so (counted, not once per retry) and keep the
                // established flows alive.
                guard
                    .refusals
                    .note(Abuse::AcceptFailed, host::errno_name(&e), || {
                        format!("tcp: {e}")
                    });
                tokio::time::sleep(ACCEPT_RETRY_AFTER).await;
                continue;
            }
        };
        let held = side.open.load(Ordering::Relaxed);
        if held >= guard.max_connections {
            // A reset, not a FIN: the peer learns at once that it was refused.
            let _ = SockRef::from(&stream).set_linger(Some(Duration::ZERO));
            drop(stream);
            guard.refusals.note(Abuse::TcpConnectionRefused, None, || {
                format!(
                    "{peer}: {held} connections open, the cap is {} (PROBE_MAX_CONNECTIONS or the open-file limit)",
                    guard.max_connections
                )
            });
            continue;
        }
        let n = side.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("srv-tcp-{n:04}");
        let local = stream
            .local_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string());
        emitter.emit(
            EventName::TcpAccept,
            Some(&id),
            Some(format!("{peer} -> {local}")),
        );
        side.open.fetch_add(1, Ordering::Relaxed);
        let single = if opts.bench {
            let (tx, rx) = oneshot::channel();
            if let Ok(mut q) = side.singles.lock() {
                q.push_back(tx);
            }
            Some(rx)
        } else {
            None
        };
        let task = Conn {
            stream,
            id,
            emitter: emitter.clone(),
            instance: instance.clone(),
            command: side.command.subscribe(),
            open: side.open.clone(),
            opts,
            single,
            refusals: guard.refusals.clone(),
            scan: LineScan::default(),
        };
        side.tracker.spawn(task.run());
    }
}

struct Conn {
    stream: TcpStream,
    id: String,
    emitter: Emitter,
    instance: Arc<str>,
    command: watch::Receiver<Command>,
    open: Arc<AtomicU64>,
    opts: ConnOpts,
    single: Option<oneshot::Receiver<Command>>,
    refusals: Arc<Refusals>,
    scan: LineScan,
}

/// The command addressed to this connection alone; pending forever when there is none.
async fn single_command(slot: &mut Option<oneshot::Receiver<Command>>) -> Command {
    if let Some(rx) = slot {
        if let Ok(cmd) = rx.await {
            return cmd;
        }
        // The sender is gone: never poll a finished receiver again.
        *slot = None;
    }
    std::future::pending().await
}

/// The CLOCK_MONOTONIC time of a tokio instant in the past (tokio's clock is that clock).
fn mono_of(at: Instant) -> i64 {
    let ago = i64::try_from(at.elapsed().as_nanos()).unwrap_or(i64::MAX);
    host::mono_ns().saturating_sub(ago)
}

impl Conn {
    async fn run(mut self) {
        let hb_every = self.opts.heartbeat;
        let mut ticker = interval_at(Instant::now() + hb_every, hb_every);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let mut seq: u64 = 0;
        let mut buf = [0u8; 512];
        // One waiter on the shared command channel for the connection's life: a fresh
        // `changed()` per loop turn would take the channel's lock on every heartbeat.
        let mut command = self.command.clone();
        let next_command = async move {
            loop {
                command.changed().await.ok()?;
                let cmd = *command.borrow_and_update();
                if cmd != Command::Serve {
                    return Some(cmd);
                }
            }
        };
        tokio::pin!(next_command);
        loop {
            tokio::select! {
                r = self.stream.read(&mut buf) => match r {
                    Ok(0) => { self.closed("fin received from client", None); break; }
                    Ok(n) => self.scanned(&buf[..n]),
                    Err(e) => { self.closed("read failed", Some(&e)); break; }
                },
                scheduled = ticker.tick() => {
                    let line = if self.opts.bench {
                        wire::heartbeat_scheduled(seq, host::wall_ns(), &self.instance, mono_of(scheduled))
                    } else {
                        wire::heartbeat(seq, host::wall_ns(), &self.instance)
                    };
                    match self.write_line(line.as_bytes()).await {
                        Ok(Ok(())) => {
                            if self.opts.log_heartbeats {
                                let mut l = self.emitter.line(EventName::TcpHeartbeat);
                                l.flow_id = Some(self.id.clone());
                                l.seq = Some(seq);
                                self.emitter.send(l);
                            }
                            seq += 1;
                        }
                        Ok(Err(e)) => { self.closed("write failed", Some(&e)); break; }
                        Err(_) => { self.closed("write deadline exceeded", None); break; }
                    }
                },
                cmd = single_command(&mut self.single) => match cmd {
                    Command::Reset => { self.reset(); break; }
                    Command::Graceful => { self.graceful(seq).await; break; }
                    Command::Serve | Command::OpenAtExit => {}
                },
                cmd = &mut next_command => match cmd {
                    // Serve is filtered out above; a finished future must not be polled again.
                    None | Some(Command::Serve) => break,
                    Some(Command::Reset) => { self.reset(); break; }
                    Some(Command::Graceful) => { self.graceful(seq).await; break; }
                    Some(Command::OpenAtExit) => {
                        self.emitter.emit(EventName::TcpFlowOpenAtExit, Some(&self.id), Some("left open for the process exit to close".into()));
                        // Hold the socket until the process exits.
                        std::future::pending::<()>().await;
                    }
                },
            }
        }
        self.open.fetch_sub(1, Ordering::Relaxed);
    }

    /// Writes a line; a heartbeat fits the socket buffer almost always, so it is tried first
    /// without arming the write-deadline timer.
    async fn write_line(
        &mut self,
        bytes: &[u8],
    ) -> Result<std::io::Result<()>, tokio::time::error::Elapsed> {
        let rest = match self.stream.try_write(bytes) {
            Ok(n) if n == bytes.len() => return Ok(Ok(())),
            Ok(n) => &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => bytes,
            Err(e) => return Ok(Err(e)),
        };
        timeout(WRITE_DEADLINE, self.stream.write_all(rest)).await
    }

    /// Notes what the client sent that is not a ping; the flow keeps its heartbeats.
    fn scanned(&mut self, bytes: &[u8]) {
        let seen = self.scan.feed(bytes);
        for _ in 0..seen.unrecognised {
            self.refusals.note(Abuse::TcpLineUnrecognised, None, || {
                format!("{}: a line that is not a ping", self.id)
            });
        }
        for _ in 0..seen.too_long {
            self.refusals.note(Abuse::TcpLineTooLong, None, || {
                format!(
                    "{}: more than {} bytes without a newline",
                    self.id,
                    super::scan::MAX_CLIENT_LINE_BYTES
                )
            });
        }
    }

    fn closed(&self, why: &str, err: Option<&std::io::Error>) {
        let mut l = self.emitter.line(EventName::TcpFlowClosed);
        l.flow_id = Some(self.id.clone());
        l.detail = Some(why.to_string());
        l.errno = err.and_then(host::errno_name);
        self.emitter.send(l);
    }

    fn reset(&mut self) {
        match SockRef::from(&self.stream).set_linger(Some(Duration::ZERO)) {
            Ok(()) => self.emitter.emit(
                EventName::TcpFlowResetForced,
                Some(&self.id),
                Some("so_linger=0 close issued by probe (exit-now)".into()),
            ),
            Err(e) => {
                let mut l = self.emitter.line(EventName::TcpFlowResetFailed);
                l.flow_id = Some(self.id.clone());
                l.detail = Some(format!("setting so_linger=0 failed: {e}"));
                l.errno = host::errno_name(&e);
                self.emitter.send(l);
            }
        }
        // Dropping the stream with linger 0 sends the RST (the caller drops self).
    }

    async fn graceful(&mut self, seq: u64) {
        let bye = wire::bye(seq, "drain-deadline");
        let wrote = timeout(WRITE_DEADLINE, self.stream.write_all(bye.as_bytes())).await;
        // Stamped just before the FIN leaves, so the line's time is the FIN's time.
        let mut l = self.emitter.line(EventName::TcpFlowClosed);
        let shut = self.stream.shutdown().await;
        let detail = match (wrote, shut) {
            (Ok(Ok(())), Ok(())) => "closed gracefully: drain-deadline".to_string(),
            (Ok(Err(e)), _) | (_, Err(e)) => format!("graceful close failed: {e}"),
            (Err(_), _) => "graceful close failed: write deadline exceeded".to_string(),
        };
        l.flow_id = Some(self.id.clone());
        l.detail = Some(detail);
        self.emitter.send(l);
        // Wait for the client's FIN so our close does not race its last ping into a RST.
        let mut buf = [0u8; 256];
        let _ = timeout(LINGER_AFTER_BYE, async {
            loop {
                match self.stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        })
        .await;
    }
}
