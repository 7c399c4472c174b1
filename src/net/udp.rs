//! One UDP flow on a connected socket (its own source port; ICMP unreachable arrives as
//! ECONNREFUSED): ping every interval, read acks, apply the silence rule before each send.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use tokio::net::UdpSocket;
use tokio::time::{Instant, MissedTickBehavior, interval_at};
use tokio_util::sync::CancellationToken;

use super::ClientConfig;
use super::record::FlowRecorder;
use crate::evidence::classify::Op;
use crate::evidence::event::EventName;
use crate::evidence::flow::{Observation, Step};
use crate::host;
use crate::wire::{self, ProbeLine};
use std::sync::Arc;

const SENT_RING: usize = 16;
/// Read buffer per flow: an ack is about 30 bytes; anything longer is not an ack anyway.
const READ_BUF: usize = 256;

async fn open(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let local: SocketAddr = if addr.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let s = UdpSocket::bind(local).await?;
    s.connect(addr).await?;
    Ok(s)
}

/// Runs one UDP flow to its end.
pub async fn run(
    mut rec: FlowRecorder,
    addr: SocketAddr,
    cfg: Arc<ClientConfig>,
    cancel: CancellationToken,
) {
    if let Some(sock) = connect(&mut rec, addr).await {
        carry(rec, sock, &cfg, &cancel).await;
    }
}

/// Opens the connected socket and records the outcome: `flow_connected`, or
/// `flow_dial_failed` and `None`.
async fn connect(rec: &mut FlowRecorder, addr: SocketAddr) -> Option<UdpSocket> {
    match open(addr).await {
        Ok(s) => {
            rec.observe(
                rec.line(EventName::FlowConnected, host::mono_ns()),
                &Observation::Connected,
            );
            Some(s)
        }
        Err(e) => {
            let why = format!("udp socket to {addr}: {e}");
            let l = rec
                .line(EventName::FlowDialFailed, host::mono_ns())
                .detail(why.clone());
            rec.observe(l, &Observation::DialFailed(why));
            None
        }
    }
}

/// What was sent and what was answered, for the silence rule and round-trip times.
struct Pings {
    /// The next sequence number to send.
    seq: u64,
    /// The highest sequence number answered; -1 before the first ack.
    last_answered: i64,
    /// (seq, send time) of the last few pings.
    sent: [(u64, i64); SENT_RING],
}

/// Pings every interval and reads acks until the flow ends or the window closes.
async fn carry(
    mut rec: FlowRecorder,
    sock: UdpSocket,
    cfg: &ClientConfig,
    cancel: &CancellationToken,
) {
    let mut tick = interval_at(Instant::now() + cfg.phase(rec.idx()), cfg.interval);
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut pings = Pings {
        seq: 0,
        last_answered: -1,
        sent: [(u64::MAX, 0i64); SENT_RING],
    };
    let mut buf = [0u8; READ_BUF];
    // One cancellation waiter for the flow's life (see tcp.rs).
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    loop {
        tokio::select! {
            biased;
            () = &mut cancelled => {
                rec.observe(rec.line(EventName::FlowObservationEnd, host::mono_ns()), &Observation::ObservationEnd);
                return;
            }
            r = sock.recv(&mut buf) => {
                let at = host::mono_ns();
                match r {
                    Ok(n) => {
                        let text = String::from_utf8_lossy(&buf[..n]);
                        if reply(&mut rec, &mut pings, cfg, &text, at) == Step::Terminal {
                            return;
                        }
                    }
                    Err(e) => {
                        rec.io_error(Op::Read, &e, at);
                        return;
                    }
                }
            }
            _ = tick.tick() => {
                if !ping(&mut rec, &mut pings, cfg, &sock).await {
                    return;
                }
            }
        }
    }
}

/// Records one datagram from the probe: an ack (data, with its round trip) or an
/// unrecognised line.
fn reply(
    rec: &mut FlowRecorder,
    pings: &mut Pings,
    cfg: &ClientConfig,
    text: &str,
    at: i64,
) -> Step {
    match wire::parse_probe_line(text) {
        ProbeLine::Ack {
            seq: Some(s),
            instance,
            unix_ns,
        } => {
            pings.last_answered = pings
                .last_answered
                .max(i64::try_from(s).unwrap_or(i64::MAX));
            let mut l = rec.line(EventName::FlowData, at).seq(s);
            l.instance = Some(instance.to_string());
            l.peer_wall_ns = unix_ns;
            let slot = pings.sent[(s as usize) % SENT_RING];
            let sent_ns = (slot.0 == s).then_some(slot.1);
            if let (Some(b), Some(t)) = (cfg.bench.as_ref().filter(|b| b.measuring()), sent_ns) {
                b.udp_rtt.record(at - t);
            }
            l.sent_ns = sent_ns.filter(|_| unix_ns.is_some());
            if let Some(w) = unix_ns {
                rec.clock_sample(sent_ns, w, at);
            }
            let obs = Observation::Data {
                seq: Some(s),
                instance: Some(instance.to_string()),
            };
            rec.observe(l, &obs)
        }
        _ => {
            let l = rec
                .line(EventName::FlowUnrecognised, at)
                .detail(wire::excerpt(text.trim_end()));
            rec.observe(l, &Observation::Unrecognised)
        }
    }
}

/// Applies the silence rule, then sends the next ping; false when the flow ended (silence or
/// a send error).
async fn ping(
    rec: &mut FlowRecorder,
    pings: &mut Pings,
    cfg: &ClientConfig,
    sock: &UdpSocket,
) -> bool {
    let seq = pings.seq;
    let unanswered = i64::try_from(seq).unwrap_or(i64::MAX) - pings.last_answered - 1;
    if unanswered >= i64::from(cfg.udp_silence_datagrams) {
        let n = u64::try_from(unanswered).unwrap_or(0);
        let l = rec
            .line(EventName::FlowSilence, host::mono_ns())
            .seq(n)
            .detail(format!("udp-silence-{n}-datagrams"));
        rec.observe(l, &Observation::Silence { unanswered: n });
        return false;
    }
    let msg = wire::ping(seq, cfg.clock_extension);
    let at = host::mono_ns();
    if let Err(e) = sock.send(msg.as_bytes()).await {
        rec.io_error(Op::Write, &e, host::mono_ns());
        return false;
    }
    pings.sent[(seq as usize) % SENT_RING] = (seq, at);
    if let Some(b) = cfg.bench.as_ref().filter(|b| b.measuring()) {
        b.udp_sent
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    pings.seq += 1;
    true
}
