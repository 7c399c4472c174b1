//! Where every flow stands, for preflight waits and the trial loop's "all flows terminal".

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;

use crate::evidence::event::EventLine;
use crate::evidence::flow::{Observation, Step};

/// Flow count from which waiters coalesce phase changes.
const COALESCE_FROM_FLOWS: usize = 1000;
/// How long a waiter lets phase changes accumulate before it looks again.
const COALESCE: Duration = Duration::from_millis(20);

/// The coarse phase of one flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Still dialling.
    Dialing,
    /// Connected, no reply yet.
    Connected,
    /// At least one reply arrived.
    Carrying,
    /// Ended.
    Terminal,
    /// The dial gave up.
    DialFailed,
}

/// The phase an observation moves its flow to, when it moves it.
pub fn phase_of(obs: &Observation, step: Step) -> Option<Phase> {
    match (obs, step) {
        (_, Step::Terminal) => Some(Phase::Terminal),
        (Observation::Connected, _) => Some(Phase::Connected),
        (Observation::Data { .. }, _) => Some(Phase::Carrying),
        (Observation::DialFailed(_), _) => Some(Phase::DialFailed),
        _ => None,
    }
}

/// What ended a flow, as a failed check names it: the line's event and its errno.
pub fn ended_by(line: &EventLine) -> String {
    match &line.errno {
        Some(errno) => format!("{} {errno}", line.event.as_str()),
        None => line.event.as_str().to_string(),
    }
}

/// Shared phases of all flows, in id order (TCP first, then UDP).
pub struct Progress {
    ids: Vec<String>,
    phases: Mutex<Vec<Phase>>,
    /// What ended each ended flow ([`ended_by`]; `client_lost` for a lost shard's), kept for
    /// the message of a preflight check that fails on ended flows.
    ended_by: Mutex<Vec<Option<String>>>,
    changed: Notify,
}

/// Counts of flows per phase, plus the ids that have not carried data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Flows that carried data at some point and have not ended, or ended after carrying.
    pub carried: usize,
    /// Flows ended.
    pub terminal: usize,
    /// TCP flows (`tcp-` ids) among them.
    pub terminal_tcp: usize,
    /// Flows whose dial gave up.
    pub dial_failed: Vec<String>,
    /// Flows (by id) with no reply yet and not failed.
    pub silent: Vec<String>,
    /// Flows still dialling.
    pub dialing: usize,
    /// All flows.
    pub total: usize,
}

impl Progress {
    /// Every flow dialling.
    pub fn new(ids: Vec<String>) -> Self {
        let n = ids.len();
        Self {
            ids,
            phases: Mutex::new(vec![Phase::Dialing; n]),
            ended_by: Mutex::new(vec![None; n]),
            changed: Notify::new(),
        }
    }

    /// Moves flow `idx` to `phase`; a terminal or failed flow stays so.
    pub fn set(&self, idx: usize, phase: Phase) {
        if let Ok(mut p) = self.phases.lock() {
            if let Some(slot) = p.get_mut(idx) {
                if matches!(*slot, Phase::Terminal | Phase::DialFailed) || *slot == phase {
                    return;
                }
                if phase == Phase::Connected && *slot == Phase::Carrying {
                    return;
                }
                *slot = phase;
            }
        }
        self.changed.notify_waiters();
    }

    /// Moves flow `idx` to `phase`, which `line` observed.
    pub fn advance(&self, idx: usize, phase: Phase, line: &EventLine) {
        if phase == Phase::Terminal {
            self.end(idx, ended_by(line));
        } else {
            self.set(idx, phase);
        }
    }

    /// Ends flow `idx`, `by` what ended it; the first end is the one kept.
    pub fn end(&self, idx: usize, by: String) {
        if let Ok(mut e) = self.ended_by.lock() {
            if let Some(slot) = e.get_mut(idx) {
                if slot.is_none() {
                    *slot = Some(by);
                }
            }
        }
        self.set(idx, Phase::Terminal);
    }

    /// The ended flows whose id starts with `prefix`, with the line that ended each, in id
    /// order: what a failed check names.
    pub fn ended(&self, prefix: &str) -> Vec<(String, Option<String>)> {
        let (Ok(p), Ok(e)) = (self.phases.lock(), self.ended_by.lock()) else {
            return vec![];
        };
        p.iter()
            .zip(e.iter())
            .zip(&self.ids)
            .filter(|((ph, _), id)| **ph == Phase::Terminal && id.starts_with(prefix))
            .map(|((_, by), id)| (id.clone(), by.clone()))
            .collect()
    }

    /// The current counts.
    pub fn snapshot(&self) -> Snapshot {
        let mut s = Snapshot {
            total: self.ids.len(),
            ..Snapshot::default()
        };
        if let Ok(p) = self.phases.lock() {
            for (i, ph) in p.iter().enumerate() {
                match ph {
                    Phase::Dialing => {
                        s.dialing += 1;
                        s.silent.push(self.ids[i].clone());
                    }
                    Phase::Connected => s.silent.push(self.ids[i].clone()),
                    Phase::Carrying => s.carried += 1,
                    Phase::Terminal => {
                        s.terminal += 1;
                        s.terminal_tcp += usize::from(self.ids[i].starts_with("tcp-"));
                    }
                    Phase::DialFailed => s.dial_failed.push(self.ids[i].clone()),
                }
            }
        }
        s
    }

    /// Waits until `done` holds for a snapshot, or `limit` passes; returns the last snapshot
    /// and whether it held.
    pub async fn wait_until(
        &self,
        limit: Duration,
        done: impl Fn(&Snapshot) -> bool,
    ) -> (Snapshot, bool) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.changed.notified();
            let s = self.snapshot();
            if done(&s) {
                return (s, true);
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                let s = self.snapshot();
                let ok = done(&s);
                return (s, ok);
            }
            if self.ids.len() >= COALESCE_FROM_FLOWS {
                // A snapshot copies every silent id: with thousands of flows changing phase at
                // once, one per change would be quadratic. Let a batch of changes land first.
                tokio::time::sleep(COALESCE).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ended_flow_keeps_the_line_that_ended_it_and_counts_for_its_protocol() {
        use crate::evidence::event::EventName;
        let p = Progress::new(vec![
            "tcp-0001".into(),
            "tcp-0002".into(),
            "udp-0001".into(),
        ]);
        let mut line = EventLine::named(EventName::FlowData);
        p.advance(0, Phase::Carrying, &line);
        line.event = EventName::FlowSocketError;
        line.errno = Some("ECONNREFUSED".into());
        p.advance(0, Phase::Terminal, &line);
        p.end(0, EventName::ClientLost.as_str().into());
        p.end(2, EventName::ClientLost.as_str().into());
        let s = p.snapshot();
        assert_eq!((s.terminal, s.terminal_tcp, s.silent.len()), (2, 1, 1));
        assert_eq!(
            p.ended("tcp-"),
            [(
                "tcp-0001".to_string(),
                Some("flow_socket_error ECONNREFUSED".to_string())
            )],
            "the first end is kept"
        );
        assert_eq!(
            p.ended("udp-"),
            [(
                "udp-0001".to_string(),
                Some(EventName::ClientLost.as_str().to_string())
            )]
        );
    }
}
