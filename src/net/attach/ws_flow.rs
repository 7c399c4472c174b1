//! One WebSocket flow: a held connection that pings every interval and awaits each pong within
//! the request timeout, until the server closes it (close frame), the connection breaks (FIN
//! without a close frame, reset, a missing pong) or the window closes; after an end the flow
//! opens its replacement at the next interval, as HTTP reopens after `Connection: close`, so
//! the replacement is measured too.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Settings;
use super::emit::{Emitter, Failure};
use super::ws::{self, Close, CloseCode, CloseFrame, Message, OpenFailure, Opened};
use crate::evidence::attach::{FailureMechanism, names};
use crate::evidence::event::{EventLine, EventName};

/// How a held WebSocket ended.
enum End {
    /// The window closed with it open.
    Observed,
    /// The server's close frame.
    Closed(Close),
    /// It broke.
    Severed(Failure),
}

struct Flow {
    id: String,
    emit: Emitter,
    generation: u64,
    instance: Option<String>,
}

impl Flow {
    fn line(&self, event: EventName) -> EventLine {
        let mut l = self
            .emit
            .line(event)
            .flow(self.id.as_str())
            .seq(self.generation);
        l.instance = self.instance.clone();
        l
    }

    fn opened(&mut self, o: &Opened) {
        self.instance = o.instance.clone();
        let event = if self.generation == 1 {
            EventName::AttachConnOpened
        } else {
            EventName::AttachConnReopened
        };
        let mut l = self.line(event);
        l.status = Some(o.status);
        self.emit.send(l);
    }

    fn open_failed(&mut self, f: &OpenFailure) {
        self.instance = f.instance.clone();
        let mut l = self.line(EventName::AttachConnOpenFailed);
        f.failure.fill(&mut l);
        l.status = f.status;
        self.emit.send(l);
    }

    fn ended(&self, end: &End) {
        let l = match end {
            End::Observed => self.line(EventName::AttachConnObservationEnd),
            End::Closed(c) => match c.failure() {
                None => {
                    let mut l = self.line(EventName::AttachConnClosedGraceful);
                    l.result = Some(names::CLOSE_WS.into());
                    l.close_code = c.code;
                    l.detail = Some(c.reason.clone());
                    l
                }
                Some(f) => {
                    let mut l = self.line(EventName::AttachConnSevered);
                    f.fill(&mut l);
                    l.close_code = c.code;
                    // On a close event the detail is the reason as sent, as on a graceful one.
                    l.detail = Some(c.reason.clone());
                    l
                }
            },
            End::Severed(f) => {
                let mut l = self.line(EventName::AttachConnSevered);
                f.fill(&mut l);
                l
            }
        };
        self.emit.send(l);
    }
}

/// The pong awaited: the ping's payload and when it is late.
struct Awaited {
    payload: Vec<u8>,
    due: Instant,
}

/// Pings `o` every interval until it ends or `cancel`.
async fn hold(o: &mut Opened, cfg: &Settings, cancel: &CancellationToken) -> End {
    let ws = &mut o.ws;
    let mut tick = tokio::time::interval(cfg.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut pings = 0u64;
    let mut awaited: Option<Awaited> = None;
    loop {
        let due = awaited.as_ref().map(|a| a.due);
        tokio::select! {
            biased;
            () = cancel.cancelled() => return End::Observed,
            m = ws.next() => match m {
                Some(Ok(Message::Pong(p))) => {
                    // A pong for an earlier ping, or unsolicited (RFC 6455 §5.5.3), answers
                    // nothing.
                    if awaited.as_ref().is_some_and(|a| a.payload == p.as_ref()) {
                        awaited = None;
                    }
                }
                Some(Ok(Message::Close(frame))) => {
                    let close = Close::of(frame.as_ref());
                    // tungstenite queued the reply; flushing it completes the closing handshake.
                    let _ = tokio::time::timeout(cfg.request_timeout, ws.close(None)).await;
                    return End::Closed(close);
                }
                // Data, and pings (answered by the crate), are not our business.
                Some(Ok(_)) => {}
                Some(Err(e)) => return End::Severed(ws::stream_failure("read", &e)),
                None => return End::Severed(ws::no_close_frame()),
            },
            () = tokio::time::sleep_until(due.unwrap_or_else(Instant::now)), if due.is_some() => {
                return End::Severed(Failure {
                    mechanism: FailureMechanism::WsPongMissing,
                    errno: None,
                    detail: format!(
                        "ping {pings}: no pong within {} ms",
                        cfg.request_timeout.as_millis()
                    ),
                });
            }
            _ = tick.tick(), if awaited.is_none() => {
                pings += 1;
                // The ping's number as its payload: deterministic, and tells pongs apart.
                let payload = pings.to_be_bytes().to_vec();
                if let Err(e) = ws.send(Message::Ping(payload.clone().into())).await {
                    return End::Severed(ws::stream_failure("write", &e));
                }
                awaited = Some(Awaited {
                    payload,
                    due: Instant::now() + cfg.request_timeout,
                });
            }
        }
    }
}

/// Runs flow `id` until `cancel`; its first connection waits `phase` so flows spread over the
/// interval.
pub async fn run(
    id: String,
    addr: SocketAddr,
    cfg: Arc<Settings>,
    emit: Emitter,
    phase: Duration,
    cancel: CancellationToken,
) {
    let mut flow = Flow {
        id,
        emit,
        generation: 0,
        instance: None,
    };
    tokio::select! {
        () = cancel.cancelled() => return,
        () = tokio::time::sleep(phase) => {}
    }
    let mut tick = tokio::time::interval(cfg.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // One open per interval at most: a replacement after an end, or a retry after a
        // failed open, waits for the next tick.
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = tick.tick() => {}
        }
        flow.generation += 1;
        let opened = tokio::select! {
            () = cancel.cancelled() => return,
            r = ws::open(addr, &cfg) => r,
        };
        let mut o = match opened {
            Ok(o) => o,
            Err(f) => {
                flow.open_failed(&f);
                continue;
            }
        };
        flow.opened(&o);
        let end = hold(&mut o, &cfg, &cancel).await;
        flow.ended(&end);
        if let End::Observed = end {
            // The client's own close (1000) at the window's end; the server's reply is not
            // awaited: the measurement is over.
            let frame = CloseFrame {
                code: CloseCode::Normal,
                reason: "drainwatch: observation window ended".into(),
            };
            let _ = tokio::time::timeout(cfg.request_timeout, o.ws.close(Some(frame))).await;
            return;
        }
    }
}
