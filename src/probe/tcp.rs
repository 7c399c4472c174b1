//! The probe's TCP side: one task per connection, heartbeats every 500 ms, and the three
//! ways a connection can be ended on command.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use socket2::SockRef;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior, interval_at, timeout};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::emit::Emitter;
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
        })
    }
}

const WRITE_DEADLINE: Duration = Duration::from_secs(2);
const LINGER_AFTER_BYE: Duration = Duration::from_secs(2);

/// Accepts until told to stop; the listener is closed when this returns.
pub async fn accept_loop(
    listener: TcpListener,
    side: Arc<TcpSide>,
    emitter: Emitter,
    instance: Arc<str>,
    log_heartbeats: bool,
) {
    loop {
        let accepted = tokio::select! {
            () = side.stop_accepting.cancelled() => break,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and friends: say so and keep the established flows alive.
                let mut l = emitter.line("tcp_accept_failed");
                l.detail = Some(e.to_string());
                l.errno = host::errno_name(&e);
                emitter.send(l);
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let n = side.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("srv-tcp-{n:04}");
        let local = stream
            .local_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string());
        emitter.emit("tcp_accept", Some(&id), Some(format!("{peer} -> {local}")));
        side.open.fetch_add(1, Ordering::Relaxed);
        let task = Conn {
            stream,
            id,
            emitter: emitter.clone(),
            instance: instance.clone(),
            command: side.command.subscribe(),
            open: side.open.clone(),
            log_heartbeats,
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
    log_heartbeats: bool,
}

impl Conn {
    async fn run(mut self) {
        let hb_every = Duration::from_millis(wire::HEARTBEAT_INTERVAL_MS);
        let mut ticker = interval_at(Instant::now() + hb_every, hb_every);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let mut seq: u64 = 0;
        let mut buf = [0u8; 512];
        loop {
            tokio::select! {
                r = self.stream.read(&mut buf) => match r {
                    Ok(0) => { self.closed("fin received from client", None); break; }
                    Ok(_) => {}
                    Err(e) => { self.closed("read failed", Some(&e)); break; }
                },
                _ = ticker.tick() => {
                    let line = wire::heartbeat(seq, host::wall_ns(), &self.instance);
                    match timeout(WRITE_DEADLINE, self.stream.write_all(line.as_bytes())).await {
                        Ok(Ok(())) => {
                            if self.log_heartbeats {
                                let mut l = self.emitter.line("tcp_heartbeat");
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
                changed = self.command.changed() => {
                    if changed.is_err() { break; }
                    let cmd = *self.command.borrow_and_update();
                    match cmd {
                        Command::Serve => {}
                        Command::Reset => { self.reset(); break; }
                        Command::Graceful => { self.graceful(seq).await; break; }
                        Command::OpenAtExit => {
                            self.emitter.emit("tcp_flow_open_at_exit", Some(&self.id), Some("left open for the process exit to close".into()));
                            // Hold the socket until the process exits.
                            std::future::pending::<()>().await;
                        }
                    }
                }
            }
        }
        self.open.fetch_sub(1, Ordering::Relaxed);
    }

    fn closed(&self, why: &str, err: Option<&std::io::Error>) {
        let mut l = self.emitter.line("tcp_flow_closed");
        l.flow_id = Some(self.id.clone());
        l.detail = Some(why.to_string());
        l.errno = err.and_then(host::errno_name);
        self.emitter.send(l);
    }

    fn reset(&mut self) {
        match SockRef::from(&self.stream).set_linger(Some(Duration::ZERO)) {
            Ok(()) => self.emitter.emit(
                "tcp_flow_reset_forced",
                Some(&self.id),
                Some("so_linger=0 close issued by probe (exit-now)".into()),
            ),
            Err(e) => {
                let mut l = self.emitter.line("tcp_flow_reset_failed");
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
        let shut = self.stream.shutdown().await;
        let detail = match (wrote, shut) {
            (Ok(Ok(())), Ok(())) => "closed gracefully: drain-deadline".to_string(),
            (Ok(Err(e)), _) | (_, Err(e)) => format!("graceful close failed: {e}"),
            (Err(_), _) => "graceful close failed: write deadline exceeded".to_string(),
        };
        self.emitter
            .emit("tcp_flow_closed", Some(&self.id), Some(detail));
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
