//! Per-flow recording: runs the core's flow state machine live and writes the events that
//! matter, coalescing routine replies so that thousands of flows do not flood events.jsonl.
//!
//! A routine reply (one that only advances `last_seq`) is held back and written just before
//! the flow's next significant event, or at its end. Folding the written stream therefore
//! gives the same record as folding every reply, which is what makes replay exact.

use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use super::progress::{Phase, Progress};
use crate::evidence::classify::Op;
use crate::evidence::clock::OffsetBounds;
use crate::evidence::event::{EventLine, Source};
use crate::evidence::flow::{FlowState, Observation, Proto, Step};
use crate::host;

/// Where event lines go.
pub type Sink = UnboundedSender<EventLine>;

/// The live record of one flow.
pub struct FlowRecorder {
    id: String,
    idx: usize,
    state: FlowState,
    pending: Option<EventLine>,
    sink: Sink,
    progress: Arc<Progress>,
    bounds: OffsetBounds,
    samples_clock: bool,
    /// The phase last reported, so that routine replies skip the shared table's lock.
    phase: Option<Phase>,
}

impl FlowRecorder {
    /// A recorder for flow `id` at position `idx` in the progress table.
    pub fn new(
        id: String,
        proto: Proto,
        idx: usize,
        sink: Sink,
        progress: Arc<Progress>,
        samples_clock: bool,
    ) -> Self {
        Self {
            state: FlowState::new(id.clone(), proto),
            id,
            idx,
            pending: None,
            sink,
            progress,
            bounds: OffsetBounds::default(),
            samples_clock,
            phase: None,
        }
    }

    /// The flow's position among all flows (TCP first, then UDP).
    pub fn idx(&self) -> usize {
        self.idx
    }

    /// The flow id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// A client line about this flow at `at_ns`.
    pub fn line(&self, event: &str, at_ns: i64) -> EventLine {
        let mut l = EventLine::new(Source::Client, event, at_ns).flow(self.id.clone());
        l.mono_ns = Some(at_ns);
        l
    }

    fn flush_pending(&mut self) {
        if let Some(p) = self.pending.take() {
            let _ = self.sink.send(p);
        }
    }

    /// Records an observation described by `line`; returns what it did to the flow.
    pub fn observe(&mut self, line: EventLine, obs: &Observation) -> Step {
        let at = line.at_ns.unwrap_or(0);
        let step = self.state.step(at, obs);
        match step {
            Step::Ignored => {}
            Step::Absorbed => self.pending = Some(line),
            Step::Changed | Step::Terminal => {
                self.flush_pending();
                let _ = self.sink.send(line);
            }
        }
        let phase = match (obs, step) {
            (_, Step::Terminal) => Some(Phase::Terminal),
            (Observation::Connected, _) => Some(Phase::Connected),
            (Observation::Data { .. }, _) => Some(Phase::Carrying),
            (Observation::DialFailed(_), _) => Some(Phase::DialFailed),
            _ => None,
        };
        if let Some(p) = phase.filter(|p| self.phase != Some(*p)) {
            self.phase = Some(p);
            self.progress.set(self.idx, p);
        }
        step
    }

    /// Folds a clock sample; written only when it tightens this flow's bounds.
    pub fn clock_sample(&mut self, sent_ns: Option<i64>, peer_wall_ns: i64, at_ns: i64) {
        if !self.samples_clock || !self.bounds.add(sent_ns, peer_wall_ns, at_ns) {
            return;
        }
        let mut l = self.line("flow_clock_sample", at_ns);
        l.peer_wall_ns = Some(peer_wall_ns);
        l.sent_ns = sent_ns;
        let _ = self.sink.send(l);
    }

    /// Records a failed socket operation with its symbolic errno; always ends the flow.
    pub fn socket_error(
        &mut self,
        op: Op,
        errno: Option<String>,
        message: String,
        at_ns: i64,
    ) -> Step {
        let mut l = self
            .line("flow_socket_error", at_ns)
            .detail(message.clone());
        l.op = Some(match op {
            Op::Read => "read".into(),
            Op::Write => "write".into(),
        });
        l.errno = errno.clone();
        self.observe(
            l,
            &Observation::SocketError {
                op,
                errno,
                message: Some(message),
            },
        )
    }

    /// Records a failed socket operation from the OS error.
    pub fn io_error(&mut self, op: Op, e: &std::io::Error, at_ns: i64) -> Step {
        self.socket_error(op, host::errno_name(e), e.to_string(), at_ns)
    }

    /// Whether the flow has ended.
    pub fn is_terminal(&self) -> bool {
        self.state.is_terminal()
    }
}

impl Drop for FlowRecorder {
    fn drop(&mut self) {
        self.flush_pending();
    }
}
