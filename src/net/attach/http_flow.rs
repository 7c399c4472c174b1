//! One keep-alive HTTP flow: a request every interval on a held connection, reopened when the
//! server closes it gracefully or it breaks, every request recorded.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::emit::{Emitter, Failure, status_result};
use super::http::{self, ExchangeError, Response};
use super::tls::Conn;
use super::{Settings, open_conn};
use crate::evidence::attach::{FailureMechanism, names};
use crate::evidence::event::EventName;
use crate::evidence::request_id::RequestId;
use crate::host;

struct Held {
    stream: Conn,
    generation: u64,
    /// Responses this connection has carried: a reused connection may have crossed the
    /// server's FIN, a fresh one cannot.
    served: u32,
}

/// Whether the server closed or broke the idle connection since its last response, without
/// blocking: a FIN while idle is a graceful close, an error is a break.
/// One poll of a read, never waiting: what is already there (over TLS, after decryption: a
/// close_notify reads as the end it is).
fn idle_state(s: &mut Conn) -> Result<bool, Option<Failure>> {
    let mut b = [0u8; 1];
    match s.read(&mut b).now_or_never() {
        None => Ok(true),
        Some(Ok(0)) => Err(None),
        Some(Ok(_)) => Err(Some(Failure {
            mechanism: FailureMechanism::Error,
            errno: None,
            detail: "the server sent bytes on an idle connection".into(),
        })),
        Some(Err(e)) => Err(Some(Failure::io("idle connection", &e))),
    }
}

struct Flow {
    id: String,
    addr: SocketAddr,
    cfg: Arc<Settings>,
    emit: Emitter,
    conn: Option<Held>,
    generation: u64,
    request: u64,
}

impl Flow {
    fn close_graceful(&mut self, how: &str) {
        if let Some(h) = self.conn.take() {
            self.emit.conn(
                EventName::AttachConnClosedGraceful,
                &self.id,
                h.generation,
                Some(how),
            );
        }
    }

    fn sever(&mut self, f: &Failure) {
        if let Some(h) = self.conn.take() {
            self.emit
                .conn_failed(EventName::AttachConnSevered, &self.id, h.generation, f);
        }
    }

    fn record(&self, seq: u64, started: i64, outcome: Result<&Response, &Failure>) {
        let mut l = self
            .emit
            .line(EventName::AttachRequest)
            .flow(self.id.as_str())
            .seq(seq);
        l.latency_ns = l.at_ns.map(|at| at - started);
        match outcome {
            Ok(r) => {
                l.status = Some(r.status);
                l.instance = r.instance.clone();
                l.result = Some(
                    status_result(r.status, self.cfg.expect_status)
                        .map_or(names::OK, FailureMechanism::as_str)
                        .to_string(),
                );
            }
            Err(f) => f.fill(&mut l),
        }
        self.emit.send(l);
    }

    /// A connection to send on: the held one if the server has not closed it, else a new one.
    async fn ensure(&mut self, seq: u64, started: i64) -> bool {
        if let Some(h) = self.conn.as_mut() {
            match idle_state(&mut h.stream) {
                Ok(_) => return true,
                Err(None) => self.close_graceful(names::CLOSE_FIN_IDLE),
                Err(Some(f)) => self.sever(&f),
            }
        }
        self.generation += 1;
        match open_conn(self.addr, &self.cfg).await {
            Ok(stream) => {
                let event = if self.generation == 1 {
                    EventName::AttachConnOpened
                } else {
                    EventName::AttachConnReopened
                };
                self.emit.conn(event, &self.id, self.generation, None);
                self.conn = Some(Held {
                    stream,
                    generation: self.generation,
                    served: 0,
                });
                true
            }
            Err(f) => {
                self.emit.conn_failed(
                    EventName::AttachConnOpenFailed,
                    &self.id,
                    self.generation,
                    &f,
                );
                // The request this interval was for could not be sent: that is its failure.
                self.record(seq, started, Err(&f));
                false
            }
        }
    }

    async fn one_request(&mut self) {
        self.request += 1;
        let seq = self.request;
        let started = host::mono_ns();
        // One retry, only for a request that crossed the server's FIN on a reused idle
        // connection (RFC 9112 §9.3.1): the server never saw it, so it did not fail there.
        for attempt in 0..2 {
            if !self.ensure(seq, started).await {
                return;
            }
            let Some(h) = self.conn.as_mut() else { return };
            let id = RequestId::request(&self.id, seq);
            let req = http::request(
                &self.cfg.authority,
                &self.cfg.path,
                false,
                (&self.cfg.ids, &id),
            );
            let timeout = self.cfg.request_timeout;
            let result = tokio::time::timeout(timeout, http::exchange(&mut h.stream, &req)).await;
            match result {
                Ok(Ok(r)) => {
                    h.served += 1;
                    self.record(seq, started, Ok(&r));
                    if r.closes {
                        self.close_graceful(names::CLOSE_CONNECTION_HEADER);
                    }
                    return;
                }
                Ok(Err(ExchangeError::Eof { received: 0 })) if h.served > 0 && attempt == 0 => {
                    self.close_graceful(names::CLOSE_FIN_IDLE);
                }
                Ok(Err(e)) => {
                    let f = Failure::exchange(&e);
                    self.record(seq, started, Err(&f));
                    self.sever(&f);
                    return;
                }
                Err(_) => {
                    let f = Failure::timeout("request", timeout.as_millis());
                    self.record(seq, started, Err(&f));
                    self.sever(&f);
                    return;
                }
            }
        }
    }
}

/// Runs flow `id` until `cancel`; its first request waits `phase` so flows spread over the
/// interval.
pub async fn run(
    id: String,
    addr: SocketAddr,
    cfg: Arc<Settings>,
    emit: Emitter,
    phase: Duration,
    cancel: CancellationToken,
) {
    let interval = cfg.interval;
    let mut flow = Flow {
        id,
        addr,
        cfg,
        emit,
        conn: None,
        generation: 0,
        request: 0,
    };
    tokio::select! {
        () = cancel.cancelled() => return,
        () = tokio::time::sleep(phase) => {}
    }
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => break,
            _ = tick.tick() => {}
        }
        // A request in flight when the window closes is abandoned unrecorded: it neither
        // failed nor succeeded within the window.
        tokio::select! {
            () = cancel.cancelled() => break,
            () = flow.one_request() => {}
        }
    }
    if let Some(h) = flow.conn.take() {
        flow.emit.conn(
            EventName::AttachConnObservationEnd,
            &flow.id,
            h.generation,
            None,
        );
    }
}
