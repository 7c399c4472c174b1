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

use serde::{Deserialize, Serialize};

use super::event::{EventLine, Source};

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

/// How client lines relayed from another process (a client pod's log) were placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayedClock {
    /// Same-kernel exact, or an offset bounded from one side.
    pub mapping: Mapping,
    /// Offset added to the emitter's monotonic times (orchestrator − emitter), ns.
    pub offset_ns: i64,
    /// Relayed lines placed.
    pub lines: u32,
}

/// Places client lines relayed from another process onto the orchestrator's timebase.
///
/// A relayed line carries the emitter's kernel boot id, the emitter's monotonic time in
/// `mono_ns` (and `sent_ns` of clock samples on that same clock), and in `at_ns` the time the
/// orchestrator received it. Same boot id: the emitter's clock is ours, so `at_ns = mono_ns`
/// exactly. Another kernel: no line can arrive before it was written, so every line bounds
/// `orchestrator − emitter ≤ at_ns − mono_ns`; the smallest such difference is used, which makes
/// the placed times upper bounds, late by at most the fastest line's log delivery delay.
/// In-process client lines carry no boot id and are left alone.
pub fn place_relayed_client(
    lines: &mut [EventLine],
    orchestrator_boot: &str,
) -> Option<RelayedClock> {
    let relayed = |l: &EventLine| l.source == Some(Source::Client) && l.boot_id.is_some();
    let mut count = 0u32;
    let mut same = true;
    let mut offset: Option<i64> = None;
    for l in lines.iter().filter(|l| relayed(l)) {
        count += 1;
        same &= l.boot_id.as_deref() == Some(orchestrator_boot);
        if let (Some(at), Some(mono)) = (l.at_ns, l.mono_ns) {
            offset = Some(offset.map_or(at - mono, |o: i64| o.min(at - mono)));
        }
    }
    if count == 0 {
        return None;
    }
    let (mapping, offset_ns) = match (same, offset) {
        (true, _) => (Mapping::SameHostMonotonic, 0),
        (false, Some(o)) => (Mapping::OffsetOneSided, o),
        (false, None) => (Mapping::ReceiveTime, 0),
    };
    if mapping != Mapping::ReceiveTime {
        for l in lines.iter_mut().filter(|l| relayed(l)) {
            if let Some(mono) = l.mono_ns {
                l.at_ns = Some(mono + offset_ns);
                l.sent_ns = l.sent_ns.map(|s| s + offset_ns);
            }
        }
    }
    Some(RelayedClock {
        mapping,
        offset_ns,
        lines: count,
    })
}

/// Nanoseconds as fractional milliseconds rounded to microseconds, for the report.
pub fn ns_to_ms_f64(ns: i64) -> f64 {
    (ns as f64 / 1_000.0).round() / 1_000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::event::EventName;

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

    fn relayed(at: i64, mono: i64, boot: &str) -> EventLine {
        let mut l = EventLine::new(Source::Client, EventName::FlowData, at).flow("tcp-0001");
        l.mono_ns = Some(mono);
        l.boot_id = Some(boot.into());
        l
    }

    #[test]
    fn relayed_client_lines_on_our_kernel_are_exact() {
        let mut lines = vec![relayed(1_500, 1_000, "b"), relayed(2_900, 2_000, "b")];
        let c = place_relayed_client(&mut lines, "b").unwrap();
        assert_eq!(c.mapping, Mapping::SameHostMonotonic);
        assert_eq!(lines[0].at_ns, Some(1_000));
        assert_eq!(lines[1].at_ns, Some(2_000));
    }

    #[test]
    fn relayed_client_lines_from_another_kernel_use_the_smallest_delay() {
        let mut sample = relayed(10_400, 400, "other");
        sample.sent_ns = Some(300);
        let mut lines = vec![
            relayed(10_500, 100, "other"),
            sample,
            EventLine::new(Source::Client, EventName::FlowData, 7),
        ];
        let c = place_relayed_client(&mut lines, "ours").unwrap();
        assert_eq!(c.mapping, Mapping::OffsetOneSided);
        assert_eq!(c.offset_ns, 10_000);
        assert_eq!(lines[0].at_ns, Some(10_100));
        assert_eq!(lines[1].at_ns, Some(10_400));
        assert_eq!(lines[1].sent_ns, Some(10_300));
        // An in-process line is untouched.
        assert_eq!(lines[2].at_ns, Some(7));
        assert_eq!(place_relayed_client(&mut [], "ours"), None);
    }

    #[test]
    fn ms_rounding() {
        assert_eq!(ns_to_ms_f64(1_234_567), 1.235);
        assert_eq!(ns_to_ms_f64(-2_000_000), -2.0);
    }
}
