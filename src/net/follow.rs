//! Progress of flows that run in another process (a client pod), rebuilt from its relayed
//! event lines with the core's flow machine: the same fold the in-process client runs, so the
//! trial loop's preflight and "all flows terminal" mean the same thing for both placements.

use std::collections::HashMap;
use std::sync::Arc;

use super::progress::{Progress, phase_of};
use crate::evidence::event::{EventLine, EventName, Source};
use crate::evidence::flow::{FlowState, Observation, Proto};
use crate::evidence::shard::Slice;

/// Folds relayed client lines into a [`Progress`].
pub struct LineTracker {
    progress: Arc<Progress>,
    flows: HashMap<String, (usize, FlowState)>,
}

impl LineTracker {
    /// A tracker for `ids` (TCP first, then UDP, as the client numbers them).
    pub fn new(ids: Vec<String>) -> Self {
        let flows = ids
            .iter()
            .enumerate()
            .filter_map(|(i, id)| {
                Proto::of_flow_id(id).map(|p| (id.clone(), (i, FlowState::new(id.clone(), p))))
            })
            .collect();
        Self {
            progress: Arc::new(Progress::new(ids)),
            flows,
        }
    }

    /// The progress this tracker keeps.
    pub fn progress(&self) -> Arc<Progress> {
        self.progress.clone()
    }

    /// Ends every flow of `slice` that has not ended: its client shard was lost, so no line of
    /// those flows will come, and the trial need not wait for them (the report makes them
    /// not-measured from the `client_lost` line).
    pub fn lose(&mut self, slice: &Slice) {
        for (id, (idx, _)) in &self.flows {
            if slice.holds(id) {
                self.progress
                    .end(*idx, EventName::ClientLost.as_str().to_string());
            }
        }
    }

    /// Folds one relayed line; lines that are not client flow observations are ignored.
    pub fn observe(&mut self, line: &EventLine) {
        if line.source != Some(Source::Client) {
            return;
        }
        let (Some(id), Some(obs)) = (line.flow_id.as_deref(), Observation::from_line(line)) else {
            return;
        };
        let Some((idx, state)) = self.flows.get_mut(id) else {
            return;
        };
        let step = state.step(line.at_ns.unwrap_or(0), &obs);
        if let Some(p) = phase_of(&obs, step) {
            self.progress.advance(*idx, p, line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(event: EventName, flow: &str) -> EventLine {
        EventLine::new(Source::Client, event, 1).flow(flow)
    }

    #[test]
    fn a_lost_slice_ends_its_flows_and_no_other() {
        let ids = ["tcp-0001", "tcp-0002", "udp-0001", "udp-0002"];
        let mut t = LineTracker::new(ids.iter().map(|s| (*s).to_string()).collect());
        let p = t.progress();
        t.lose(&crate::evidence::shard::slices(2, 2, 2)[1]);
        let s = p.snapshot();
        assert_eq!((s.total, s.terminal, s.dialing), (4, 2, 2));
    }

    #[test]
    fn relayed_lines_move_flows_through_their_phases() {
        let mut t = LineTracker::new(vec!["tcp-0001".into(), "udp-0001".into()]);
        let p = t.progress();
        assert_eq!(p.snapshot().dialing, 2);
        t.observe(&line(EventName::FlowConnected, "tcp-0001"));
        t.observe(&line(EventName::FlowData, "tcp-0001").seq(1));
        t.observe(&line(EventName::FlowDialFailed, "udp-0001"));
        // Orchestrator lines relayed by mistake and unknown flows change nothing.
        t.observe(&EventLine::new(Source::Orchestrator, EventName::FlowEof, 2).flow("tcp-0001"));
        t.observe(&line(EventName::FlowEof, "tcp-0009"));
        let s = p.snapshot();
        assert_eq!((s.carried, s.terminal, s.dial_failed.len()), (1, 0, 1));
        t.observe(&line(EventName::FlowEof, "tcp-0001"));
        assert_eq!(p.snapshot().terminal, 1);
    }
}
