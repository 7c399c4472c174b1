//! The new-connection prober: a fresh connection at a fixed rate through the whole window,
//! each attempt recorded as served or with the mechanism that stopped it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::emit::{Emitter, Failure, status_result};
use super::h2_conn::{self, ExchangeError};
use super::ws::{self, OpenFailure};
use super::{Settings, open_conn};
use super::{h2_flow, http, tls};
use crate::evidence::attach::{AttachProtocol, FailureMechanism, names};
use crate::evidence::event::EventName;
use crate::evidence::request_id::RequestId;
use crate::host;

/// How long a TCP dial watches its connection after the handshake. The kernel completes a
/// handshake into the listener's accept queue whether or not the application ever takes it,
/// and when the listener closes with the connection still queued the kernel resets it: a reset
/// within the hold is that dial's failure. A FIN, a byte, or the hold passing with the
/// connection open say the dial was served. (A process that keeps its listener open and never
/// accepts cannot be told apart on TCP alone; an HTTP or gRPC arm judges answers.)
pub const TCP_DIAL_HOLD: Duration = Duration::from_secs(1);

/// The prober's flow id of attempt `n` (from 1).
pub fn dial_id(n: u64) -> String {
    format!("dial-{n:06}")
}

/// Which prober dials: the arm's own, or, through an ingress, the direct one to the target's
/// Service (kube-proxy's path), recorded under an event and ids of its own so that its attempts
/// are never counted as the arm's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prober {
    /// `attach_dial`, `dial-K`.
    Arm,
    /// `attach_direct_dial`, `direct-K`.
    Direct,
}

impl Prober {
    fn event(self) -> EventName {
        match self {
            Self::Arm => EventName::AttachDial,
            Self::Direct => EventName::AttachDirectDial,
        }
    }

    fn id(self, n: u64) -> String {
        match self {
            Self::Arm => dial_id(n),
            Self::Direct => format!("direct-{n:06}"),
        }
    }
}

async fn attempt(n: u64, addr: SocketAddr, cfg: Arc<Settings>, emit: Emitter, prober: Prober) {
    let started = host::mono_ns();
    let deadline = cfg.request_timeout;
    // A served TCP dial is placed where the node routed it, at the handshake, not after the hold.
    let mut connected_at = None;
    let outcome: Result<(Option<u16>, Option<String>), OpenFailure> = async {
        if cfg.protocol == AttachProtocol::Websocket {
            // Served means the handshake completed (101); the connection is then dropped.
            let o = ws::open(addr, &cfg).await?;
            return Ok((None, o.instance));
        }
        if cfg.protocol.is_h2() {
            return h2_attempt(addr, &cfg).await;
        }
        let mut s = open_conn(addr, &cfg).await?;
        if cfg.protocol == AttachProtocol::Tcp {
            connected_at = Some(host::mono_ns());
            taken(&mut s, TCP_DIAL_HOLD.min(deadline)).await?;
            return Ok((None, None));
        }
        let req = http::request(
            &cfg.authority,
            &cfg.path,
            true,
            (&cfg.ids, &RequestId::dial(&prober.id(n))),
        );
        match tokio::time::timeout(deadline, http::exchange(&mut s, &req)).await {
            Ok(Ok(r)) => Ok((Some(r.status), r.instance)),
            Ok(Err(e)) => Err(Failure::exchange(&e).into()),
            Err(_) => Err(Failure::timeout("request", deadline.as_millis()).into()),
        }
    }
    .await;
    let mut l = emit.line(prober.event()).flow(prober.id(n));
    match outcome {
        Ok((status, instance)) => {
            if let Some(at) = connected_at {
                (l.at_ns, l.mono_ns) = (Some(at), Some(at));
            }
            l.status = status;
            l.instance = instance;
            l.result = Some(
                status
                    .and_then(|s| status_result(s, cfg.expect_status))
                    .map_or(names::SERVED, FailureMechanism::as_str)
                    .to_string(),
            );
        }
        Err(f) => {
            f.failure.fill(&mut l);
            l.status = f.status;
            l.instance = f.instance;
        }
    }
    l.latency_ns = l.at_ns.map(|at| at - started);
    emit.send(l);
}

/// Whether the application took a TCP dial's connection: a reset (or any socket error)
/// within `hold` says it did not; see [`TCP_DIAL_HOLD`].
async fn taken(s: &mut tls::Conn, hold: Duration) -> Result<(), Failure> {
    let mut byte = [0u8; 1];
    match tokio::time::timeout(hold, s.read(&mut byte)).await {
        Err(_) | Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(Failure::io("socket read within the dial hold", &e)),
    }
}

/// One request (HTTP/2) or health check (gRPC) on a fresh HTTP/2 connection: served means
/// it was answered with the expected status (and for gRPC: OK and SERVING).
async fn h2_attempt(
    addr: SocketAddr,
    cfg: &Settings,
) -> Result<(Option<u16>, Option<String>), OpenFailure> {
    let h = h2_conn::open(addr, cfg).await?;
    let r = h2_flow::call(h.send, cfg).await;
    h.driver.abort();
    match r {
        Ok(c) => {
            let instance = h2_conn::instance(&c.headers);
            match c.verdict {
                // HTTP/2's status is judged as HTTP/1.1's is, by the caller.
                Err(f) if cfg.protocol == AttachProtocol::Grpc => Err(OpenFailure {
                    failure: f.failure,
                    status: c.status,
                    instance,
                }),
                _ => Ok((c.status, instance)),
            }
        }
        Err(ExchangeError::Timeout) => {
            Err(Failure::timeout("request", cfg.request_timeout.as_millis()).into())
        }
        Err(ExchangeError::NotSent(e) | ExchangeError::Stream(e)) => {
            Err(h2_conn::failure_of(&e, &h.end, false).failure.into())
        }
    }
}

/// Dials at `rate` per second until `cancel`; attempts still in flight then finish (each is
/// bounded by the request timeout) before this returns.
pub async fn run(
    addr: SocketAddr,
    cfg: Arc<Settings>,
    emit: Emitter,
    (rate, ids): (u32, super::Ids),
    prober: Prober,
    cancel: CancellationToken,
) {
    let tracker = TaskTracker::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1) / rate.max(1));
    // A late tick is skipped, not bunched: the rate is an upper bound, never exceeded.
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut n = 0u64;
    loop {
        tokio::select! {
            () = cancel.cancelled() => break,
            _ = tick.tick() => {
                let id = ids.first_dial.saturating_add(n.saturating_mul(ids.dial_stride));
                n += 1;
                tracker.spawn(attempt(id, addr, cfg.clone(), emit.clone(), prober));
            }
        }
    }
    tracker.close();
    tracker.wait().await;
}
