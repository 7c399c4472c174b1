//! One HTTP/2 (or gRPC) flow: a held connection with a request (a call) every interval as a
//! new stream, multiplexed, every one recorded. A GOAWAY moves the next request to a new
//! connection (the reopen, as HTTP/1.1 reopens after `Connection: close`) while the old one
//! finishes the streams it took; each connection's end is recorded once its streams are done:
//! graceful after a GOAWAY with NO_ERROR and every stream answered, else severed with what the
//! wire showed. With `--grpc-watch` each connection also holds one Health/Watch
//! (`grpc_watch`), opened with the connection (so a reopen after GOAWAY reopens it) and named
//! here when it ends, from the same frames and socket end as the calls; the connection's end
//! waits for it too, and a cut Watch is a failed stream of its connection.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use h2::client::SendRequest;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::{AbortHandle, JoinError};
use tokio_util::sync::CancellationToken;

use super::Settings;
use super::emit::{Emitter, Failure};
use super::grpc_call;
use super::grpc_watch::{self, Held, WatchEnd, WatchLines};
use super::h2_conn::{self, Called, EndCell, ExchangeError, Failed};
use super::h2_frames::{Frame, Seen, code_name};
use crate::evidence::attach::names;
use crate::evidence::event::EventName;
use crate::host;

mod end;
mod exchange;
use end::{conn_end, unseen};
pub use exchange::call;

/// One connection of the flow, from its open to the record of its end.
struct Live {
    send: Option<SendRequest<Bytes>>,
    frames: UnboundedReceiver<Seen>,
    end: EndCell,
    abort: AbortHandle,
    /// The last GOAWAY: error code and last stream id.
    goaway: Option<(u32, u32)>,
    in_flight: u32,
    /// Streams that failed on it.
    failed: u32,
    /// The driver's end, once it ended: the connection is recorded when its streams are done.
    ended: Option<Result<(), String>>,
    /// The held Watch's task while it runs (`--grpc-watch`).
    watch: Option<AbortHandle>,
}

/// A request's completion.
struct Done {
    generation: u64,
    seq: u64,
    started: i64,
    attempt: u8,
    result: Result<Called, ExchangeError>,
}

type Ends = FuturesUnordered<BoxFuture<'static, (u64, Result<Result<(), h2::Error>, JoinError>)>>;
type Watches = FuturesUnordered<BoxFuture<'static, (u64, Result<Held, JoinError>)>>;

struct Flow {
    id: String,
    addr: SocketAddr,
    cfg: Arc<Settings>,
    emit: Emitter,
    conns: BTreeMap<u64, Live>,
    /// The connection new streams go to.
    current: Option<u64>,
    generation: u64,
    request: u64,
    requests: FuturesUnordered<BoxFuture<'static, Done>>,
    ends: Ends,
    watches: Watches,
}

impl Flow {
    /// Reads the frames every connection has seen so far: a GOAWAY is recorded at its arrival
    /// and closes its connection to new streams.
    fn drain_frames(&mut self) {
        for (generation, c) in &mut self.conns {
            while let Ok(seen) = c.frames.try_recv() {
                if let Frame::GoAway {
                    last_stream_id,
                    code,
                    debug,
                } = &seen.frame
                {
                    c.goaway = Some((*code, *last_stream_id));
                    c.send = None;
                    if self.current == Some(*generation) {
                        self.current = None;
                    }
                    let mut l = self
                        .emit
                        .line(EventName::AttachGoaway)
                        .flow(self.id.as_str())
                        .seq(*generation);
                    l.at_ns = Some(seen.at_ns);
                    l.mono_ns = Some(seen.at_ns);
                    l.last_stream_id = Some(*last_stream_id);
                    l.h2_code = Some(code_name(*code));
                    l.detail = Some(debug.clone());
                    self.emit.send(l);
                }
            }
        }
    }

    /// The connection to send on, opened when there is none; `None` when the open failed
    /// (recorded, with the request it was for).
    async fn ensure(&mut self, seq: u64, started: i64) -> Option<u64> {
        if let Some(g) = self.current {
            return Some(g);
        }
        self.generation += 1;
        let generation = self.generation;
        match h2_conn::open(self.addr, &self.cfg).await {
            Ok(h) => {
                let event = if generation == 1 {
                    EventName::AttachConnOpened
                } else {
                    EventName::AttachConnReopened
                };
                self.emit.conn(event, &self.id, generation, None);
                let abort = h.driver.abort_handle();
                self.ends
                    .push(h.driver.map(move |r| (generation, r)).boxed());
                let watch = self.hold_watch(generation, &h.send);
                self.conns.insert(
                    generation,
                    Live {
                        send: Some(h.send),
                        frames: h.frames,
                        end: h.end,
                        abort,
                        goaway: None,
                        in_flight: 0,
                        failed: 0,
                        ended: None,
                        watch,
                    },
                );
                self.current = Some(generation);
                Some(generation)
            }
            Err(f) => {
                self.emit
                    .conn_failed(EventName::AttachConnOpenFailed, &self.id, generation, &f);
                self.record(seq, started, Err(&Failed::plain(f)));
                None
            }
        }
    }

    /// Starts the connection's Watch when `--grpc-watch` asked for one.
    fn hold_watch(&mut self, generation: u64, send: &SendRequest<Bytes>) -> Option<AbortHandle> {
        if !self.cfg.grpc.as_ref().is_some_and(|g| g.watch) {
            return None;
        }
        let out = WatchLines {
            emit: self.emit.clone(),
            flow: self.id.clone(),
            generation,
        };
        let task = tokio::spawn(grpc_watch::hold(send.clone(), self.cfg.clone(), out));
        let abort = task.abort_handle();
        self.watches
            .push(task.map(move |r| (generation, r)).boxed());
        Some(abort)
    }

    /// Records how connection `generation`'s Watch ended, named from the wire: a gRPC status,
    /// or a cut (`failure_of`: RST_STREAM, the connection's end, a GOAWAY with an error, a
    /// timeout), which fails a stream of the connection as a failed call does. A Watch the
    /// server never saw (not sent, or refused above a GOAWAY's last stream id) is no Watch.
    fn watch_ended(&mut self, generation: u64, r: Result<Held, JoinError>) {
        self.drain_frames();
        let Some(c) = self.conns.get_mut(&generation) else {
            return;
        };
        c.watch = None;
        let Ok(held) = r else {
            self.settle(generation);
            return;
        };
        let mut l = self
            .emit
            .line(EventName::AttachGrpcWatchEnded)
            .flow(self.id.as_str())
            .seq(generation);
        l.stream_id = held.stream_id;
        let failed = match held.end {
            WatchEnd::Status(code) => {
                l.result = Some(crate::evidence::attach::watch::ENDED_WITH_STATUS.into());
                l.grpc_code = Some(grpc_call::code_name(code));
                None
            }
            WatchEnd::Failed(f) => Some(f),
            WatchEnd::Transport(e) if !held.opened && unseen(&e) => {
                self.settle(generation);
                return;
            }
            WatchEnd::Transport(ExchangeError::NotSent(e) | ExchangeError::Stream(e)) => {
                Some(h2_conn::failure_of(&e, &c.end, c.goaway.is_some()))
            }
            WatchEnd::Transport(ExchangeError::Timeout) => Some(Failed::plain(Failure::timeout(
                "Watch answer",
                self.cfg.request_timeout.as_millis(),
            ))),
        };
        if let Some(f) = failed {
            c.failed += 1;
            f.fill(&mut l);
        }
        self.emit.send(l);
        self.settle(generation);
    }

    async fn start(&mut self, seq: u64, started: i64, attempt: u8) {
        let Some(generation) = self.ensure(seq, started).await else {
            return;
        };
        let Some(c) = self.conns.get_mut(&generation) else {
            return;
        };
        let Some(send) = c.send.clone() else { return };
        c.in_flight += 1;
        let cfg = self.cfg.clone();
        self.requests.push(
            async move {
                let result = call(send, &cfg).await;
                Done {
                    generation,
                    seq,
                    started,
                    attempt,
                    result,
                }
            }
            .boxed(),
        );
    }

    fn record(&self, seq: u64, started: i64, outcome: Result<&Called, &Failed>) {
        let mut l = self
            .emit
            .line(EventName::AttachRequest)
            .flow(self.id.as_str())
            .seq(seq);
        l.latency_ns = l.at_ns.map(|at| at - started);
        match outcome {
            Ok(c) => {
                l.status = c.status;
                l.instance = h2_conn::instance(&c.headers);
                match &c.verdict {
                    Ok(()) => l.result = Some(names::OK.into()),
                    Err(f) => f.fill(&mut l),
                }
            }
            Err(f) => f.fill(&mut l),
        }
        self.emit.send(l);
    }

    async fn finish(&mut self, d: Done) {
        self.drain_frames();
        let Some(c) = self.conns.get_mut(&d.generation) else {
            return;
        };
        c.in_flight = c.in_flight.saturating_sub(1);
        let after_goaway = c.goaway.is_some();
        match d.result {
            Ok(a) => self.record(d.seq, d.started, Ok(&a)),
            // Never sent, or refused by the server's GOAWAY (its id above the last stream id:
            // RFC 9113 6.8, not processed, so safe to retry, as gRPC clients do): the server
            // did not see it. Once, on the next connection.
            Err(e) if d.attempt == 0 && unseen(&e) => {
                c.send = None;
                if self.current == Some(d.generation) {
                    self.current = None;
                }
                self.settle(d.generation);
                self.start(d.seq, d.started, 1).await;
                return;
            }
            Err(e) => {
                c.failed += 1;
                let f = match &e {
                    ExchangeError::NotSent(e) | ExchangeError::Stream(e) => {
                        h2_conn::failure_of(e, &c.end, after_goaway)
                    }
                    ExchangeError::Timeout => Failed::plain(Failure::timeout(
                        "request",
                        self.cfg.request_timeout.as_millis(),
                    )),
                };
                self.record(d.seq, d.started, Err(&f));
            }
        }
        self.settle(d.generation);
    }

    fn driver_ended(&mut self, generation: u64, r: Result<Result<(), h2::Error>, JoinError>) {
        self.drain_frames();
        if self.current == Some(generation) {
            self.current = None;
        }
        if let Some(c) = self.conns.get_mut(&generation) {
            c.send = None;
            c.ended = Some(match r {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(e.to_string()),
                Err(e) => Err(e.to_string()),
            });
        }
        self.settle(generation);
    }

    /// Records connection `generation`'s end once it ended and its streams are done.
    fn settle(&mut self, generation: u64) {
        let done = self
            .conns
            .get(&generation)
            .is_some_and(|c| c.ended.is_some() && c.in_flight == 0 && c.watch.is_none());
        if !done {
            return;
        }
        let Some(c) = self.conns.remove(&generation) else {
            return;
        };
        match conn_end(&c) {
            Ok(how) => {
                let mut l = self
                    .emit
                    .line(EventName::AttachConnClosedGraceful)
                    .flow(self.id.as_str())
                    .seq(generation);
                l.result = Some(how.into());
                l.h2_code = c.goaway.map(|(code, _)| code_name(code));
                self.emit.send(l);
            }
            Err(f) => {
                let mut l = self
                    .emit
                    .line(EventName::AttachConnSevered)
                    .flow(self.id.as_str())
                    .seq(generation);
                f.fill(&mut l);
                self.emit.send(l);
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
        conns: BTreeMap::new(),
        current: None,
        generation: 0,
        request: 0,
        requests: FuturesUnordered::new(),
        ends: FuturesUnordered::new(),
        watches: FuturesUnordered::new(),
    };
    tokio::select! {
        () = cancel.cancelled() => return,
        () = tokio::time::sleep(phase) => {}
    }
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // Requests in flight when the window closes are abandoned unrecorded: they neither
        // failed nor succeeded within the window.
        tokio::select! {
            () = cancel.cancelled() => break,
            _ = tick.tick() => {
                flow.drain_frames();
                flow.request += 1;
                let seq = flow.request;
                let started = host::mono_ns();
                tokio::select! {
                    () = cancel.cancelled() => break,
                    () = flow.start(seq, started, 0) => {}
                }
            }
            Some(d) = flow.requests.next() => {
                tokio::select! {
                    () = cancel.cancelled() => break,
                    () = flow.finish(d) => {}
                }
            }
            Some((g, r)) = flow.ends.next() => flow.driver_ended(g, r),
            Some((g, r)) = flow.watches.next() => flow.watch_ended(g, r),
        }
    }
    flow.drain_frames();
    for (generation, c) in std::mem::take(&mut flow.conns) {
        if let Some(w) = &c.watch {
            w.abort();
            flow.emit.conn(
                EventName::AttachGrpcWatchObservationEnd,
                &flow.id,
                generation,
                None,
            );
        }
        flow.emit.conn(
            EventName::AttachConnObservationEnd,
            &flow.id,
            generation,
            None,
        );
        c.abort.abort();
    }
}
