//! Per-flow recording: runs the core's flow state machine live and writes the events that
//! matter, coalescing routine replies so that thousands of flows do not flood events.jsonl.
//!
//! A routine reply (one that only advances `last_seq`) is held back and written just before
//! the flow's next significant event, or at its end. Folding the written stream therefore
//! gives the same record as folding every reply, which is what makes replay exact.

use std::sync::Arc;

use super::progress::{Phase, Progress, ended_by, phase_of};
use crate::evidence::classify::Op;
use crate::evidence::clock::OffsetBounds;
use crate::evidence::event::{EventLine, EventName, Source};
use crate::evidence::flow::{FlowState, Observation, Proto, Step};
use crate::host;
use crate::recorder::Sink;

/// A held-back routine reply. Most are plain `flow_data` lines that differ from the next only
/// in time, sequence and clock fields, so only those are kept: a whole `EventLine` (about 0.4 KB
/// plus three strings) held for every flow was a fifth of the client's memory at 18,000 flows.
enum Pending {
    /// A plain `flow_data` line, rebuilt exactly by [`FlowRecorder::rebuild`].
    Data {
        at_ns: i64,
        seq: Option<u64>,
        instance: Option<String>,
        peer_wall_ns: Option<i64>,
        sent_ns: Option<i64>,
    },
    /// Anything else, kept whole.
    Line(Box<EventLine>),
}

/// The live record of one flow.
pub struct FlowRecorder {
    id: String,
    idx: usize,
    state: FlowState,
    pending: Option<Pending>,
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
    pub fn line(&self, event: EventName, at_ns: i64) -> EventLine {
        let mut l = EventLine::new(Source::Client, event, at_ns).flow(self.id.clone());
        l.mono_ns = Some(at_ns);
        l
    }

    fn flush_pending(&mut self) {
        let line = match self.pending.take() {
            None => return,
            Some(Pending::Line(l)) => *l,
            Some(Pending::Data {
                at_ns,
                seq,
                instance,
                peer_wall_ns,
                sent_ns,
            }) => {
                let mut l = self.line(EventName::FlowData, at_ns);
                l.seq = seq;
                l.instance = instance;
                l.peer_wall_ns = peer_wall_ns;
                l.sent_ns = sent_ns;
                l
            }
        };
        let _ = self.sink.send(line);
    }

    /// Keeps `line` in its compact form when [`Self::flush_pending`] rebuilds it byte for byte:
    /// the destructuring names every field, so a new field cannot slip through unexamined.
    fn hold(&self, line: EventLine) -> Pending {
        let plain = {
            let EventLine {
                v,
                source,
                line: line_no,
                at_ns,
                mono_ns,
                wall,
                mono_ms,
                event,
                flow_id,
                seq: _,
                detail,
                errno,
                op,
                drain_behavior,
                instance: _,
                peer_wall_ns: _,
                sent_ns: _,
                boot_id,
                exit_code,
                signal,
                result,
                status,
                latency_ns,
                close_code,
                ready,
                last_stream_id,
                h2_code,
                grpc_code,
                stream_id,
                node,
                shard,
                address,
                upstream,
                replica,
                service,
                count,
                header,
                termination_settings,
            } = &line;
            *v == crate::evidence::event::EVENT_FORMAT_VERSION
                && *source == Some(Source::Client)
                && line_no.is_none()
                && at_ns.is_some()
                && mono_ns == at_ns
                && wall.is_none()
                && mono_ms.is_none()
                && *event == EventName::FlowData
                && flow_id.as_deref() == Some(self.id.as_str())
                && detail.is_none()
                && errno.is_none()
                && op.is_none()
                && drain_behavior.is_none()
                && boot_id.is_none()
                && exit_code.is_none()
                && signal.is_none()
                && result.is_none()
                && status.is_none()
                && latency_ns.is_none()
                && close_code.is_none()
                && ready.is_none()
                && last_stream_id.is_none()
                && h2_code.is_none()
                && grpc_code.is_none()
                && stream_id.is_none()
                && node.is_none()
                && shard.is_none()
                && address.is_none()
                && upstream.is_none()
                && replica.is_none()
                && service.is_none()
                && count.is_none()
                && header.is_none()
                && termination_settings.is_none()
        };
        match (plain, line.at_ns) {
            (true, Some(at_ns)) => Pending::Data {
                at_ns,
                seq: line.seq,
                instance: line.instance,
                peer_wall_ns: line.peer_wall_ns,
                sent_ns: line.sent_ns,
            },
            _ => Pending::Line(Box::new(line)),
        }
    }

    /// Records an observation described by `line`; returns what it did to the flow.
    pub fn observe(&mut self, line: EventLine, obs: &Observation) -> Step {
        let at = line.at_ns.unwrap_or(0);
        let step = self.state.step(at, obs);
        // The flow's coarse phase moves a few times in its life, not on every reply.
        let moved = phase_of(obs, step)
            .filter(|p| self.phase != Some(*p))
            .map(|p| (p, (p == Phase::Terminal).then(|| ended_by(&line))));
        match step {
            Step::Ignored => {}
            Step::Absorbed => self.pending = Some(self.hold(line)),
            Step::Changed | Step::Terminal => {
                self.flush_pending();
                let _ = self.sink.send(line);
            }
        }
        if let Some((p, ended)) = moved {
            self.phase = Some(p);
            match ended {
                Some(by) => self.progress.end(self.idx, by),
                None => self.progress.set(self.idx, p),
            }
        }
        step
    }

    /// Folds a clock sample; written only when it tightens this flow's bounds.
    pub fn clock_sample(&mut self, sent_ns: Option<i64>, peer_wall_ns: i64, at_ns: i64) {
        if !self.samples_clock || !self.bounds.add(sent_ns, peer_wall_ns, at_ns) {
            return;
        }
        let mut l = self.line(EventName::FlowClockSample, at_ns);
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
            .line(EventName::FlowSocketError, at_ns)
            .detail(message.clone());
        l.op = Some(op);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_back_reply_is_written_exactly_as_observed() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let progress = Arc::new(Progress::new(vec!["udp-0001".into()]));
        let mut rec = FlowRecorder::new("udp-0001".into(), Proto::Udp, 0, tx, progress, false);
        rec.observe(
            rec.line(EventName::FlowConnected, 1),
            &Observation::Connected,
        );
        let data = |rec: &FlowRecorder, at: i64, seq: u64| {
            let mut l = rec.line(EventName::FlowData, at).seq(seq);
            l.instance = Some("p".into());
            l.peer_wall_ns = Some(at + 7);
            l.sent_ns = Some(at - 3);
            l
        };
        let obs = |seq| Observation::Data {
            seq: Some(seq),
            instance: Some("p".into()),
        };
        let mut expected = Vec::new();
        for (at, seq) in [(10, 0), (20, 1), (30, 2)] {
            let l = data(&rec, at, seq);
            expected.push(l.clone());
            rec.observe(l, &obs(seq));
        }
        // A significant event writes the held-back reply (rebuilt from its compact form) first.
        rec.observe(rec.line(EventName::FlowGap, 35), &Observation::Gap);
        // An odd line (a detail) is kept whole.
        let odd = data(&rec, 40, 3).detail("x");
        rec.observe(odd.clone(), &obs(3));
        drop(rec);
        let mut got = Vec::new();
        while let Ok(l) = rx.try_recv() {
            got.push(l);
        }
        assert_eq!(
            got.first().map(|l| &l.event),
            Some(&EventName::FlowConnected)
        );
        let gap = got.iter().position(|l| l.event == EventName::FlowGap);
        assert_eq!(
            gap.and_then(|i| got.get(i - 1)),
            Some(&expected[2]),
            "{got:?}"
        );
        assert_eq!(got.last(), Some(&odd));
    }
}
