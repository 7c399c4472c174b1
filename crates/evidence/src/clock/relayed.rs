//! Client lines relayed from other processes (client pods, possibly on other nodes), placed on
//! the orchestrator's timebase one clock domain at a time.
//!
//! A relayed line carries its emitter's kernel boot id, the emitter's monotonic time in
//! `mono_ns` (and `sent_ns` of clock samples on that same clock), and in `at_ns` the time the
//! orchestrator received it. Each boot id names a CLOCK_MONOTONIC of its own, so each is placed
//! on its own: `--clients N` shards on N nodes are N clocks, and one offset over all of them
//! would move every shard by the fastest one's.
//!
//! - **The orchestrator's boot id**: the emitter's clock is ours, so `at_ns = mono_ns`, exact.
//! - **Another kernel**: no line arrives before it was written, so every line bounds
//!   `φ = orchestrator − emitter ≤ at_ns − mono_ns`; the smallest is used, which makes the placed
//!   times upper bounds, late by at most the fastest line's log delivery delay (one-sided, bound
//!   unknown). Nothing the orchestrator sends a client carries a time, so a domain's lines alone
//!   give no lower bound.
//! - **Bridged through the probe's clock**: a client line's `peer_wall_ns` is the *probe's* wall
//!   clock, not the orchestrator's, so it cannot bound φ by itself. But client lines on the
//!   orchestrator's clock (an exact domain, or in-process clients) bound
//!   `θ = orchestrator − probe wall` as [`OffsetBounds`] does, and a foreign line's probe
//!   reading `w` was taken between its `sent_ns` and its own `mono_ns`, so
//!   `w + θ_lower − mono ≤ φ ≤ w + θ_upper − sent`. With that lower bound the domain is
//!   two-sided: the midpoint, ± half the interval. It assumes, as the probe's own two-sided
//!   mapping does, one probe wall clock that did not step during the trial (sample lines do not
//!   name the replica that answered). Bounds that cross (it stepped, or replicas on different
//!   nodes answered) fall back to the one-sided rule, which assumes nothing about wall clocks;
//!   a skew too small to cross them is not seen.
//!
//! In-process client lines carry no boot id and are left alone.

use std::collections::BTreeMap;

use super::{Mapping, OffsetBounds};
use crate::event::{EventLine, Source};

/// One emitter kernel's relayed client lines and how they were placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientDomain {
    /// The emitter's kernel boot id.
    pub boot_id: String,
    /// Exact on the orchestrator's kernel; otherwise an offset bounded from one or two sides,
    /// or the receive times kept when the lines carried no emit time.
    pub mapping: Mapping,
    /// Added to the emitter's monotonic times (orchestrator − emitter), ns; `None` when the
    /// receive times were kept.
    pub offset_ns: Option<i64>,
    /// Half-width of the offset interval, ns: `Some(0)` exact, `None` unknown.
    pub bound_ns: Option<i64>,
    /// Relayed lines placed.
    pub lines: u32,
    /// The one node the domain's lines name in their structured `node` field, if exactly one.
    pub node: Option<String>,
}

impl ClientDomain {
    /// Whether this domain's times are exact on the orchestrator's timebase.
    pub fn exact(&self) -> bool {
        self.mapping == Mapping::SameHostMonotonic
    }
}

/// How the relayed client lines of a trial were placed: one domain per emitter boot id, in the
/// order their first lines appear (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayedClock {
    /// The clock domains, first-seen first.
    pub domains: Vec<ClientDomain>,
}

impl RelayedClock {
    /// Relayed lines placed, over every domain.
    pub fn lines(&self) -> u32 {
        self.domains.iter().map(|d| d.lines).sum()
    }

    /// Whether every domain is exact.
    pub fn exact(&self) -> bool {
        self.domains.iter().all(ClientDomain::exact)
    }

    /// The worst mapping of any domain: what a reader may assume of every client time.
    pub fn mapping(&self) -> Mapping {
        self.domains
            .iter()
            .map(|d| d.mapping)
            .max_by_key(|m| rank(*m))
            .unwrap_or(Mapping::NotMeasured)
    }

    /// The largest half-width of the domains that are not exact, ns; `None` when every domain
    /// is exact or any one's bound is unknown (then no bound holds for every client time).
    pub fn bound_ns(&self) -> Option<i64> {
        if self.exact() {
            return None;
        }
        self.domains
            .iter()
            .filter(|d| !d.exact())
            .try_fold(0, |worst, d| Some(worst.max(d.bound_ns?)))
    }

    /// Whether `line` is a relayed client line placed on a domain that is not exact.
    pub fn approximate(&self, line: &EventLine) -> bool {
        relayed(line)
            && self
                .domains
                .iter()
                .find(|d| line.boot_id.as_deref() == Some(d.boot_id.as_str()))
                .is_some_and(|d| !d.exact())
    }
}

/// Best first, for [`RelayedClock::mapping`]; the enum's order is not a promise of ranking.
fn rank(m: Mapping) -> u8 {
    match m {
        Mapping::SameHostMonotonic => 0,
        Mapping::OffsetTwoSided => 1,
        Mapping::OffsetOneSided => 2,
        Mapping::WallClockDifference => 3,
        Mapping::ReceiveTime => 4,
        Mapping::NotMeasured => 5,
    }
}

/// A client line relayed from another process: only those carry a boot id.
fn relayed(l: &EventLine) -> bool {
    l.source == Some(Source::Client) && l.boot_id.is_some()
}

/// The nodes a domain's lines name: a node is only reported when exactly one is named (on a
/// shared kernel, two node names would be one clock, not one node).
#[derive(Debug, Default)]
enum Tie {
    #[default]
    Unseen,
    One(String),
    Several,
}

/// One domain's lines folded: what bounds φ = orchestrator − emitter.
#[derive(Debug)]
struct Fold {
    boot_id: String,
    lines: u32,
    /// Smallest `at_ns − mono_ns`: no line arrives before it was written.
    delivery: Option<i64>,
    /// Largest lower and smallest upper bound bridged through the probe's clock.
    lower: Option<i64>,
    upper: Option<i64>,
    node: Tie,
}

impl Fold {
    fn new(boot_id: &str) -> Self {
        Self {
            boot_id: boot_id.to_string(),
            lines: 0,
            delivery: None,
            lower: None,
            upper: None,
            node: Tie::Unseen,
        }
    }

    fn add(&mut self, l: &EventLine, probe: &OffsetBounds) {
        self.lines += 1;
        if let Some(n) = l.node.as_deref() {
            self.node = match std::mem::take(&mut self.node) {
                Tie::Unseen => Tie::One(n.to_string()),
                Tie::One(m) if m == n => Tie::One(m),
                _ => Tie::Several,
            };
        }
        let Some(mono) = l.mono_ns else { return };
        if let Some(at) = l.at_ns {
            self.delivery = Some(self.delivery.map_or(at - mono, |d| d.min(at - mono)));
        }
        let Some(w) = l.peer_wall_ns else { return };
        // The probe read w after this line's request left (sent) and before the line was
        // written (mono): sent + φ ≤ w + θ ≤ mono + φ.
        if let Some(lo) = probe.lower {
            let b = w + lo - mono;
            self.lower = Some(self.lower.map_or(b, |x| x.max(b)));
        }
        if let (Some(hi), Some(sent)) = (probe.upper, l.sent_ns) {
            let b = w + hi - sent;
            self.upper = Some(self.upper.map_or(b, |x| x.min(b)));
        }
    }

    fn place(self, orchestrator_boot: &str) -> ClientDomain {
        let (mapping, offset_ns, bound_ns) = if self.boot_id == orchestrator_boot {
            (Mapping::SameHostMonotonic, Some(0), Some(0))
        } else if let Some(up) = self.delivery {
            let bridged_up = self.upper.map_or(up, |b| b.min(up));
            match self.lower {
                Some(lo) if lo <= bridged_up => {
                    let est = lo + (bridged_up - lo) / 2;
                    // bridged_up − est is the larger half when the width is odd.
                    (Mapping::OffsetTwoSided, Some(est), Some(bridged_up - est))
                }
                _ => (Mapping::OffsetOneSided, Some(up), None),
            }
        } else {
            (Mapping::ReceiveTime, None, None)
        };
        ClientDomain {
            boot_id: self.boot_id,
            mapping,
            offset_ns,
            bound_ns,
            lines: self.lines,
            node: match self.node {
                Tie::One(n) => Some(n),
                Tie::Unseen | Tie::Several => None,
            },
        }
    }
}

/// Bounds on θ = orchestrator − probe wall from client lines on the orchestrator's own clock:
/// in-process lines (`at_ns`) and relayed lines of the orchestrator's kernel (`mono_ns`).
fn probe_reference(lines: &[EventLine], orchestrator_boot: &str) -> OffsetBounds {
    let mut b = OffsetBounds::default();
    for l in lines.iter().filter(|l| l.source == Some(Source::Client)) {
        let received = match l.boot_id.as_deref() {
            None => l.at_ns,
            Some(boot) if boot == orchestrator_boot => l.mono_ns,
            Some(_) => None,
        };
        if let (Some(w), Some(r)) = (l.peer_wall_ns, received) {
            b.add(l.sent_ns, w, r);
        }
    }
    b
}

/// Places client lines relayed from other processes onto the orchestrator's timebase, one
/// domain per emitter boot id (module docs); `None` when no line was relayed.
pub fn place_relayed_client(
    lines: &mut [EventLine],
    orchestrator_boot: &str,
) -> Option<RelayedClock> {
    let probe = probe_reference(lines, orchestrator_boot);
    let mut folds: Vec<Fold> = Vec::new();
    for l in lines.iter().filter(|l| relayed(l)) {
        let boot = l.boot_id.as_deref().unwrap_or_default();
        let i = match folds.iter().position(|f| f.boot_id == boot) {
            Some(i) => i,
            None => {
                folds.push(Fold::new(boot));
                folds.len() - 1
            }
        };
        folds[i].add(l, &probe);
    }
    if folds.is_empty() {
        return None;
    }
    let domains: Vec<ClientDomain> = folds
        .into_iter()
        .map(|f| f.place(orchestrator_boot))
        .collect();
    let offsets: BTreeMap<&str, i64> = domains
        .iter()
        .filter_map(|d| Some((d.boot_id.as_str(), d.offset_ns?)))
        .collect();
    for l in lines.iter_mut().filter(|l| relayed(l)) {
        let offset = l.boot_id.as_deref().and_then(|b| offsets.get(b));
        if let (Some(&o), Some(mono)) = (offset, l.mono_ns) {
            l.at_ns = Some(mono + o);
            l.sent_ns = l.sent_ns.map(|s| s + o);
        }
    }
    Some(RelayedClock { domains })
}

#[cfg(test)]
mod tests;
