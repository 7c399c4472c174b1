//! Mapping another process's times onto the orchestrator's monotonic timebase, honestly.
//!
//! Three mappings, best first:
//! 1. **Same host clock**: the emitter reports the same kernel boot id as the orchestrator, so
//!    its CLOCK_MONOTONIC is the orchestrator's (Kubernetes does not give pods time namespaces).
//!    Exact.
//! 2. **Estimated offset** θ with `orchestrator_mono = emitter_wall + θ`: every heartbeat is a
//!    sample `θ ≤ received − sent_wall` (a reply cannot arrive before it was sent); UDP acks
//!    with the clock extension also give `θ ≥ ping_sent − ack_wall`. With both bounds the
//!    estimate is their midpoint ± half the interval; with only the upper bound the mapped
//!    times are late by at most the unmeasured one-way delay.
//! 3. **Wall-clock difference** against the orchestrator's wall clock at the trigger, with an
//!    unknown bound.
//!
//! Client lines relayed from client pods are placed per emitter kernel (`relayed`): each boot
//! id is a clock domain of its own, since shards on different nodes run different kernels.

use serde::{Deserialize, Serialize};

mod relayed;

pub use relayed::{ClientDomain, RelayedClock, place_relayed_client};

/// How a source's times were mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mapping {
    /// Same kernel, same CLOCK_MONOTONIC: exact.
    SameHostMonotonic,
    /// Offset bounded from both sides by UDP round trips.
    OffsetTwoSided,
    /// Offset bounded from one side by heartbeat receive times.
    OffsetOneSided,
    /// Difference of wall clocks on two hosts, bound unknown.
    WallClockDifference,
    /// The times are the orchestrator's receive times: upper bounds.
    ReceiveTime,
    /// No event of this source was seen.
    NotMeasured,
}

/// Accumulated bounds on θ = orchestrator_mono − emitter_wall, in ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OffsetBounds {
    /// Largest lower bound seen.
    pub lower: Option<i64>,
    /// Smallest upper bound seen.
    pub upper: Option<i64>,
    /// Number of samples folded in.
    pub samples: u32,
}

impl OffsetBounds {
    /// Folds a sample: the peer's wall clock `peer_wall_ns` was read after the request left at
    /// `sent_ns` (when known) and before the reply arrived at `received_ns`.
    pub fn add(&mut self, sent_ns: Option<i64>, peer_wall_ns: i64, received_ns: i64) -> bool {
        let mut tightened = false;
        let up = received_ns - peer_wall_ns;
        if self.upper.is_none_or(|u| up < u) {
            self.upper = Some(up);
            tightened = true;
        }
        if let Some(s) = sent_ns {
            let lo = s - peer_wall_ns;
            if self.lower.is_none_or(|l| lo > l) {
                self.lower = Some(lo);
                tightened = true;
            }
        }
        self.samples += 1;
        tightened
    }

    /// The estimate and its half-width, with the mapping it licenses.
    pub fn estimate(&self) -> Option<(i64, Option<i64>, Mapping)> {
        match (self.lower, self.upper) {
            (Some(lo), Some(up)) if lo <= up => Some((
                lo + (up - lo) / 2,
                Some((up - lo) / 2),
                Mapping::OffsetTwoSided,
            )),
            // Crossed bounds mean the wall clock stepped mid-trial: trust only the upper one.
            (_, Some(up)) => Some((up, None, Mapping::OffsetOneSided)),
            _ => None,
        }
    }
}

/// What the report says about one source's clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceClock {
    /// The mapping used for this source's timeline entries.
    pub mapping: Mapping,
    /// Whether entries of this source are marked approximate.
    pub approximate: bool,
    /// Estimated emitter wall clock minus orchestrator wall clock, ms; null when not estimated.
    pub offset_ms: Option<f64>,
    /// Half-width of the offset interval, ms; null when unbounded or one-sided.
    pub error_bound_ms: Option<f64>,
    /// Clock samples folded into the estimate.
    pub samples: u32,
    /// What the numbers mean and what they assume.
    pub note: String,
}

/// What the report says about one clock domain of relayed client lines (one emitter kernel),
/// in `trial.clock.client_domains` (schema 4.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientDomainClock {
    /// The emitter's kernel boot id, which names its CLOCK_MONOTONIC.
    pub boot_id: String,
    /// How this domain's lines were placed.
    pub mapping: Mapping,
    /// Added to the emitter's monotonic times (orchestrator − emitter), ns; 0 on the
    /// orchestrator's kernel; null when the lines carried no emit time (receive times kept).
    pub offset_ns: Option<i64>,
    /// Half-width of the offset interval, ms: 0 when exact, null when unknown (one-sided).
    pub error_bound_ms: Option<f64>,
    /// Whether timeline rows of this domain are marked approximate.
    pub approximate: bool,
    /// Relayed lines of this domain.
    pub lines: u32,
    /// The node its lines were tied to by a structured field (a shard's `attach_dial` lines
    /// carry `node`); null when none ties them, or when they name more than one node.
    pub node: Option<String>,
}

/// Nanoseconds as fractional milliseconds rounded to microseconds, for the report.
pub fn ns_to_ms_f64(ns: i64) -> f64 {
    (ns as f64 / 1_000.0).round() / 1_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_sided_bounds_give_midpoint_and_half_width() {
        let mut b = OffsetBounds::default();
        // Peer wall 1000 read between send at 1100 and receive at 1300 on our clock.
        assert!(b.add(Some(1100), 1000, 1300));
        assert_eq!(
            b.estimate(),
            Some((200, Some(100), Mapping::OffsetTwoSided))
        );
        // A looser sample does not widen anything.
        assert!(!b.add(Some(1000), 1000, 1400));
        assert_eq!(b.samples, 2);
    }

    #[test]
    fn heartbeats_alone_bound_one_side() {
        let mut b = OffsetBounds::default();
        b.add(None, 10, 50);
        b.add(None, 20, 55);
        assert_eq!(b.estimate(), Some((35, None, Mapping::OffsetOneSided)));
        assert_eq!(OffsetBounds::default().estimate(), None);
    }

    #[test]
    fn ms_rounding() {
        assert_eq!(ns_to_ms_f64(1_234_567), 1.235);
        assert_eq!(ns_to_ms_f64(-2_000_000), -2.0);
    }
}
