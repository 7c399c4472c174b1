//! Where every flow stands, for preflight waits and the trial loop's "all flows terminal".

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;

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

/// Shared phases of all flows, in id order (TCP first, then UDP).
pub struct Progress {
    ids: Vec<String>,
    phases: Mutex<Vec<Phase>>,
    changed: Notify,
}

/// Counts of flows per phase, plus the ids that have not carried data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Flows that carried data at some point and have not ended, or ended after carrying.
    pub carried: usize,
    /// Flows ended.
    pub terminal: usize,
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
                    Phase::Terminal => s.terminal += 1,
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
