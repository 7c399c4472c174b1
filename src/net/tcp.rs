//! One TCP flow: dial with retry, ping every interval, read heartbeats, and record how the
//! connection ends. One task per flow and one socket, no split halves: a dropped write half
//! would send a FIN of its own.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, MissedTickBehavior, interval_at, sleep_until, timeout};
use tokio_util::sync::CancellationToken;

use super::ClientConfig;
use super::bench::BenchStats;
use super::record::FlowRecorder;
use crate::evidence::classify::Op;
use crate::evidence::event::EventName;
use crate::evidence::flow::{Observation, Step};
use crate::host;
use crate::wire::{self, ProbeLine};
use std::sync::Arc;

async fn dial(
    addr: SocketAddr,
    cfg: &ClientConfig,
    cancel: &CancellationToken,
) -> Result<TcpStream, String> {
    let window_end = Instant::now() + cfg.dial_window;
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let attempt = tokio::select! {
            () = cancel.cancelled() => return Err("cancelled before connecting".into()),
            r = timeout(cfg.dial_timeout, TcpStream::connect(addr)) => r,
        };
        let err = match attempt {
            Ok(Ok(s)) => return Ok(s),
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {:?}", cfg.dial_timeout),
        };
        if Instant::now() + cfg.dial_retry > window_end {
            return Err(format!(
                "gave up dialling tcp {addr} after {attempts} attempts in {:?}: {err}",
                cfg.dial_window
            ));
        }
        tokio::time::sleep(cfg.dial_retry).await;
    }
}

/// Runs one TCP flow to its end.
pub async fn run(
    mut rec: FlowRecorder,
    addr: SocketAddr,
    cfg: Arc<ClientConfig>,
    cancel: CancellationToken,
) {
    if let Some(stream) = connect(&mut rec, addr, &cfg, &cancel).await {
        carry(rec, stream, &cfg, &cancel).await;
    }
}

/// Dials and records the outcome: `flow_connected`, or `flow_dial_failed` and `None`.
async fn connect(
    rec: &mut FlowRecorder,
    addr: SocketAddr,
    cfg: &ClientConfig,
    cancel: &CancellationToken,
) -> Option<TcpStream> {
    let stream = match dial(addr, cfg, cancel).await {
        Ok(s) => s,
        Err(why) => {
            let l = rec
                .line(EventName::FlowDialFailed, host::mono_ns())
                .detail(why.clone());
            rec.observe(l, &Observation::DialFailed(why));
            return None;
        }
    };
    let _ = stream.set_nodelay(true);
    let mut l = rec.line(EventName::FlowConnected, host::mono_ns());
    if cfg.bench.is_some() {
        // The benchmark pairs this flow with the probe's accept line by the local port.
        l.detail = stream.local_addr().ok().map(|a| format!("local={a}"));
    }
    rec.observe(l, &Observation::Connected);
    Some(stream)
}

/// How long the flow has been silent: past `gap_after` it records a gap, past `flow_timeout`
/// the flow ends.
struct Silence {
    last_bytes: Instant,
    gap_reported: bool,
    gap_after: Duration,
    flow_timeout: Duration,
}

impl Silence {
    /// Bytes arrived now.
    fn heard(&mut self) {
        self.last_bytes = Instant::now();
        self.gap_reported = false;
    }

    /// When the silence next matters.
    fn deadline(&self) -> Instant {
        if self.gap_reported {
            self.last_bytes + self.flow_timeout
        } else {
            self.last_bytes + self.gap_after
        }
    }
}

/// Pings every interval and reads replies until the flow ends or the window closes.
async fn carry(
    mut rec: FlowRecorder,
    mut stream: TcpStream,
    cfg: &ClientConfig,
    cancel: &CancellationToken,
) {
    let mut ping = interval_at(
        Instant::now() + cfg.interval + cfg.phase(rec.idx()),
        cfg.interval,
    );
    ping.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let write_deadline = cfg.interval * 4;
    let mut seq: u64 = 0;
    let mut buf = [0u8; READ_BUF];
    let mut acc = LineBuf::default();
    let mut quiet = Silence {
        last_bytes: Instant::now(),
        gap_reported: false,
        gap_after: gap_after(cfg),
        flow_timeout: cfg.flow_timeout,
    };
    // One cancellation waiter and one silence timer for the flow's life: re-creating them on
    // every loop turn costs a lock on the shared token and a timer-wheel insert per reply.
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    let silence = sleep_until(quiet.deadline());
    tokio::pin!(silence);
    loop {
        tokio::select! {
            biased;
            () = &mut cancelled => {
                let l = rec.line(EventName::FlowObservationEnd, host::mono_ns());
                rec.observe(l, &Observation::ObservationEnd);
                return;
            }
            r = stream.read(&mut buf) => {
                let at = host::mono_ns();
                match r {
                    Ok(0) => {
                        rec.observe(rec.line(EventName::FlowEof, at), &Observation::Eof);
                        return;
                    }
                    Ok(n) => {
                        // The timer is moved lazily, when it fires (below).
                        quiet.heard();
                        acc.bytes.extend_from_slice(&buf[..n]);
                        if lines(&mut rec, &mut acc, at, cfg.bench.as_deref()) {
                            return;
                        }
                    }
                    Err(e) => {
                        rec.io_error(Op::Read, &e, at);
                        return;
                    }
                }
            }
            _ = ping.tick() => {
                match send_ping(&mut stream, seq, write_deadline).await {
                    None => seq += 1,
                    Some((errno, message)) => {
                        rec.socket_error(Op::Write, errno, message, host::mono_ns());
                        return;
                    }
                }
            }
            () = &mut silence => {
                if silent_too_long(&mut rec, &mut quiet, silence.as_mut()) {
                    return;
                }
            }
        }
    }
}

/// Sends ping `seq` within `deadline`; the error as (errno, message) when it fails.
async fn send_ping(
    stream: &mut TcpStream,
    seq: u64,
    deadline: Duration,
) -> Option<(Option<String>, String)> {
    let msg = wire::ping(seq, false);
    // A ping fits the socket buffer almost always: try it without arming a timer.
    match stream.try_write(msg.as_bytes()) {
        Ok(n) if n == msg.len() => None,
        Ok(n) => write_rest(stream, &msg.as_bytes()[n..], deadline).await,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
            write_rest(stream, msg.as_bytes(), deadline).await
        }
        Err(e) => Some((host::errno_name(&e), e.to_string())),
    }
}

/// The silence timer fired: records a gap or, past the flow timeout, the read timeout that
/// ends the flow (true). When bytes arrived since the timer was set, it only moves.
fn silent_too_long(
    rec: &mut FlowRecorder,
    quiet: &mut Silence,
    timer: std::pin::Pin<&mut tokio::time::Sleep>,
) -> bool {
    let deadline = quiet.deadline();
    if Instant::now() < deadline {
        timer.reset(deadline);
        return false;
    }
    let at = host::mono_ns();
    let silent = quiet.last_bytes.elapsed();
    if quiet.gap_reported || silent >= quiet.flow_timeout {
        let d = format!("no bytes for {:.1}s (flow timeout)", silent.as_secs_f64());
        let l = rec.line(EventName::FlowReadTimeout, at).detail(d.clone());
        rec.observe(l, &Observation::ReadTimeout(Some(d)));
        return true;
    }
    quiet.gap_reported = true;
    timer.reset(quiet.last_bytes + quiet.flow_timeout);
    let l = rec
        .line(EventName::FlowGap, at)
        .detail(format!("no heartbeat for {:.1}s", silent.as_secs_f64()));
    rec.observe(l, &Observation::Gap);
    false
}

/// Writes `rest` within `deadline`; the error as (errno, message) when it fails.
async fn write_rest(
    stream: &mut TcpStream,
    rest: &[u8],
    deadline: Duration,
) -> Option<(Option<String>, String)> {
    match timeout(deadline, stream.write_all(rest)).await {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some((host::errno_name(&e), e.to_string())),
        Err(_) => Some((
            Some("ETIMEDOUT".to_string()),
            "write deadline exceeded".to_string(),
        )),
    }
}

/// The most bytes of one line from the probe kept while its newline is awaited: a line is
/// about 40 bytes; past this the line is recorded as unrecognised (with its start) and the
/// rest of it skipped, so a peer that never sends a newline cannot grow our memory.
pub const MAX_PROBE_LINE_BYTES: usize = 4096;

/// The bytes of a line not yet complete, and whether the line under way is an over-long one
/// already recorded, whose remainder is skipped up to its newline.
#[derive(Default)]
struct LineBuf {
    bytes: Vec<u8>,
    skipping: bool,
}

/// Consumes complete lines from `buf`; returns true when the flow went terminal.
fn lines(rec: &mut FlowRecorder, buf: &mut LineBuf, at: i64, bench: Option<&BenchStats>) -> bool {
    let acc = &mut buf.bytes;
    // Lines are parsed in place and the consumed prefix dropped once, not copied per line.
    let mut start = 0;
    while let Some(rel) = acc[start..].iter().position(|b| *b == b'\n') {
        let end = start + rel;
        if std::mem::take(&mut buf.skipping) {
            start = end + 1;
            continue;
        }
        let text = String::from_utf8_lossy(&acc[start..=end]);
        start = end + 1;
        let step = match wire::parse_probe_line(&text) {
            ProbeLine::Empty => continue,
            ProbeLine::Heartbeat {
                seq,
                unix_ns,
                instance,
            }
            | ProbeLine::Ack {
                seq: Some(seq),
                instance,
                unix_ns,
            } => {
                if let Some(b) = bench.filter(|b| b.measuring()) {
                    if let Some(sched) = wire::heartbeat_scheduled_field(&text) {
                        b.hb_lateness.record(at - sched);
                    }
                }
                let mut l = rec.line(EventName::FlowData, at).seq(seq);
                l.instance = Some(instance.to_string());
                l.peer_wall_ns = unix_ns;
                if let Some(w) = unix_ns {
                    rec.clock_sample(None, w, at);
                }
                let obs = Observation::Data {
                    seq: Some(seq),
                    instance: Some(instance.to_string()),
                };
                rec.observe(l, &obs)
            }
            ProbeLine::Bye { seq, reason } => {
                let mut l = rec.line(EventName::FlowBye, at).detail(reason.to_string());
                l.seq = seq;
                rec.observe(l, &Observation::Bye { seq })
            }
            ProbeLine::Ack { seq: None, .. } | ProbeLine::Unrecognised(_) => {
                let l = rec
                    .line(EventName::FlowUnrecognised, at)
                    .detail(wire::excerpt(text.trim_end()));
                rec.observe(l, &Observation::Unrecognised)
            }
        };
        if step == Step::Terminal {
            return true;
        }
    }
    acc.drain(..start);
    if buf.skipping {
        acc.clear();
    } else if acc.len() > MAX_PROBE_LINE_BYTES {
        let head = String::from_utf8_lossy(&acc[..64]).into_owned();
        acc.clear();
        buf.skipping = true;
        let l = rec.line(EventName::FlowUnrecognised, at).detail(format!(
            "{} (a line longer than {MAX_PROBE_LINE_BYTES} bytes: the rest of it skipped)",
            wire::excerpt(&head)
        ));
        return rec.observe(l, &Observation::Unrecognised) == Step::Terminal;
    }
    false
}

/// Read buffer per flow: a line is about 40 bytes, and this buffer lives in every flow's task,
/// so its size is paid thousands of times over (1 KB was 0.5 MB per 1,000 flows).
const READ_BUF: usize = 256;

/// Gap threshold: three heartbeats at the probe's default period.
pub const GAP_THRESHOLD: Duration = Duration::from_millis(1500);

/// The silence that records a gap: three intervals when that is longer than the threshold (a
/// drainwatch probe heartbeats at the trial's interval, so a 2 s interval would otherwise record a
/// gap between any two heartbeats), never past the flow timeout.
fn gap_after(cfg: &ClientConfig) -> Duration {
    cfg.gap_threshold
        .max(cfg.interval.saturating_mul(3))
        .min(cfg.flow_timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_is_three_intervals_when_that_is_longer_than_the_threshold() {
        let mut c = ClientConfig::new("127.0.0.1", 7001, 7002);
        assert_eq!(
            gap_after(&c),
            GAP_THRESHOLD,
            "500 ms: the Go client's 1.5 s"
        );
        c.interval = Duration::from_secs(2);
        assert_eq!(gap_after(&c), Duration::from_secs(6));
        c.interval = Duration::from_secs(5);
        assert_eq!(gap_after(&c), c.flow_timeout, "never past the flow timeout");
    }
}
