//! The probe's event log: one JSON line per event on stdout, written by one thread so that
//! sockets never wait on the terminal, and flushed before the process exits.
//!
//! The queue has a cap: when the reader of stdout stalls, lines past it are counted and the
//! count written in their place (`probe_events_dropped`) as soon as the queue has room, so
//! the probe's memory stays bounded and no loss is silent.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;

use crate::evidence::event::{EventLine, EventName, Source};
use crate::evidence::plan::DrainBehavior;
use crate::evidence::timeline::format_wall_ns;
use crate::host;

enum Msg {
    Line(Box<EventLine>),
    Flush(mpsc::Sender<()>),
}

/// Lines queued for the writer at most (a few hundred bytes each).
pub const EMIT_QUEUE_LINES: usize = 65_536;

/// A cloneable handle that stamps and queues probe events.
#[derive(Clone)]
pub struct Emitter {
    tx: mpsc::SyncSender<Msg>,
    dropped: Arc<AtomicU64>,
    start_mono: i64,
    behavior: DrainBehavior,
}

impl Emitter {
    /// Starts the writer thread over `out`.
    pub fn start(out: impl Write + Send + 'static, behavior: DrainBehavior) -> Self {
        let (tx, rx) = mpsc::sync_channel::<Msg>(EMIT_QUEUE_LINES);
        let dropped = Arc::new(AtomicU64::new(0));
        let lost = dropped.clone();
        thread::spawn(move || {
            let mut w = std::io::BufWriter::with_capacity(64 * 1024, out);
            let mut line_no: u64 = 0;
            while let Ok(first) = rx.recv() {
                let mut next = Some(first);
                while let Some(msg) = next.take() {
                    match msg {
                        Msg::Line(mut l) => {
                            line_no += 1;
                            l.line = Some(line_no);
                            let _ = w.write_all(l.to_json().as_bytes());
                            let _ = w.write_all(b"\n");
                        }
                        Msg::Flush(done) => {
                            let _ = w.flush();
                            let _ = done.send(());
                        }
                    }
                    next = rx.try_recv().ok();
                }
                let n = lost.swap(0, Ordering::Relaxed);
                if n > 0 {
                    line_no += 1;
                    let mut l = EventLine::named(EventName::ProbeEventsDropped);
                    l.source = Some(Source::Probe);
                    l.wall = Some(format_wall_ns(host::wall_ns()));
                    l.mono_ns = Some(host::mono_ns());
                    l.line = Some(line_no);
                    l.detail = Some(format!(
                        "{n} event lines dropped here: the queue of {EMIT_QUEUE_LINES} lines was full (stdout stalled)"
                    ));
                    let _ = w.write_all(l.to_json().as_bytes());
                    let _ = w.write_all(b"\n");
                }
                // Queue drained: make what we have visible to the log reader now.
                let _ = w.flush();
            }
        });
        Self {
            tx,
            dropped,
            start_mono: host::mono_ns(),
            behavior,
        }
    }

    /// A stamped line for `event`, not yet queued.
    pub fn line(&self, event: EventName) -> EventLine {
        let mono = host::mono_ns();
        EventLine {
            source: Some(Source::Probe),
            mono_ns: Some(mono),
            mono_ms: Some((mono - self.start_mono) / 1_000_000),
            wall: Some(format_wall_ns(host::wall_ns())),
            ..EventLine::named(event)
        }
    }

    /// Queues a line.
    pub fn send(&self, line: EventLine) {
        if let Err(mpsc::TrySendError::Full(_)) = self.tx.try_send(Msg::Line(Box::new(line))) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Queues `event` with optional flow and detail.
    pub fn emit(&self, event: EventName, flow: Option<&str>, detail: Option<String>) {
        let mut l = self.line(event);
        l.flow_id = flow.map(str::to_string);
        l.detail = detail;
        self.send(l);
    }

    /// Queues `event` carrying the behaviour name (Go compatibility).
    pub fn emit_with_behavior(&self, event: EventName, detail: String) {
        let mut l = self.line(event);
        l.detail = Some(detail);
        l.drain_behavior = Some(self.behavior);
        self.send(l);
    }

    /// Blocks until every queued line is written and flushed.
    pub fn flush(&self) {
        let (tx, rx) = mpsc::channel();
        if self.tx.send(Msg::Flush(tx)).is_ok() {
            let _ = rx.recv();
        }
    }
}
