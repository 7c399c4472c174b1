//! How each source's times were placed on the orchestrator's timebase, and the words the
//! report says about it (`trial.clock`, `clock_note`).

use crate::clock::{
    ClientDomainClock, Mapping, OffsetBounds, RelayedClock, SourceClock, ns_to_ms_f64,
};
use crate::event::{EventLine, Source, TrialHeader};
use crate::report::ClockReport;
use crate::timeline;

/// How probe lines are placed on the orchestrator's timebase.
pub(super) struct ProbeClock {
    mapping: Mapping,
    offset_ns: Option<i64>,
    bound_ns: Option<i64>,
    samples: u32,
    trigger_wall_ns: Option<i64>,
}

impl ProbeClock {
    /// The line's time on the orchestrator's timebase (ns), and whether it is approximate.
    pub(super) fn place(&self, line: &EventLine, t0: i64) -> (i64, bool) {
        let at = line.at_ns.unwrap_or(t0);
        let wall = line.wall.as_deref().and_then(timeline::parse_wall_ns);
        match self.mapping {
            Mapping::SameHostMonotonic => (line.mono_ns.unwrap_or(at), false),
            Mapping::OffsetTwoSided | Mapping::OffsetOneSided => match (wall, self.offset_ns) {
                (Some(w), Some(theta)) => (w + theta, true),
                _ => (at, true),
            },
            Mapping::WallClockDifference => match (wall, self.trigger_wall_ns) {
                (Some(w), Some(tw)) => (t0 + (w - tw), true),
                _ => (at, true),
            },
            Mapping::ReceiveTime | Mapping::NotMeasured => (at, true),
        }
    }
}

/// How far a client clock sample's placed times may be from the orchestrator's clock.
enum Slack {
    /// On the orchestrator's clock: an in-process line, or a relayed one from its kernel.
    Exact,
    /// Placed by a two-sided offset: either time may be off by this much, ns.
    Within(i64),
    /// Placed by a one-sided offset or at receipt: both times are upper bounds, late by an
    /// unknown delay, so the sample bounds the probe's offset from above only.
    UpperOnly,
}

/// The slack of a client line's times, by the clock domain its lines were placed in.
fn slack(l: &EventLine, relayed: Option<&RelayedClock>) -> Slack {
    let Some(boot) = l.boot_id.as_deref() else {
        return Slack::Exact;
    };
    let domain = relayed.and_then(|c| c.domains.iter().find(|d| d.boot_id == boot));
    match domain.map(|d| (d.mapping, d.bound_ns)) {
        Some((Mapping::SameHostMonotonic, _)) => Slack::Exact,
        Some((Mapping::OffsetTwoSided, Some(b))) => Slack::Within(b),
        _ => Slack::UpperOnly,
    }
}

/// Bounds on θ = orchestrator − probe wall from the client's clock samples, each widened by
/// the uncertainty of the clock domain its times were placed in: a shard on another kernel
/// bounds the probe's clock no tighter than its own clock is known.
fn probe_bounds(lines: &[EventLine], relayed: Option<&RelayedClock>) -> OffsetBounds {
    let mut bounds = OffsetBounds::default();
    for l in lines.iter().filter(|l| l.source == Some(Source::Client)) {
        let (Some(w), Some(at)) = (l.peer_wall_ns, l.at_ns) else {
            continue;
        };
        match slack(l, relayed) {
            Slack::Exact => bounds.add(l.sent_ns, w, at),
            Slack::Within(b) => bounds.add(l.sent_ns.map(|s| s - b), w, at + b),
            Slack::UpperOnly => bounds.add(None, w, at),
        };
    }
    bounds
}

pub(super) fn probe_clock(
    lines: &[EventLine],
    header: &TrialHeader,
    trigger_wall: Option<i64>,
    relayed: Option<&RelayedClock>,
) -> ProbeClock {
    let probe_lines: Vec<&EventLine> = lines
        .iter()
        .filter(|l| l.source == Some(Source::Probe))
        .collect();
    let bounds = probe_bounds(lines, relayed);
    let same_host = probe_lines
        .iter()
        .find_map(|l| l.boot_id.as_deref())
        .is_some_and(|b| b == header.boot_id)
        && probe_lines.iter().all(|l| l.mono_ns.is_some());
    let (mapping, offset_ns, bound_ns) = if probe_lines.is_empty() {
        (Mapping::NotMeasured, None, None)
    } else if same_host {
        let est = bounds.estimate();
        (
            Mapping::SameHostMonotonic,
            est.map(|e| e.0),
            est.and_then(|e| e.1),
        )
    } else if let Some((theta, bound, m)) = bounds.estimate() {
        (m, Some(theta), bound)
    } else if trigger_wall.is_some() {
        (Mapping::WallClockDifference, None, None)
    } else {
        (Mapping::ReceiveTime, None, None)
    };
    ProbeClock {
        mapping,
        offset_ns,
        bound_ns,
        samples: bounds.samples,
        trigger_wall_ns: trigger_wall,
    }
}

pub(super) fn probe_note(c: &ProbeClock) -> String {
    match c.mapping {
        Mapping::SameHostMonotonic => "The probe reported the orchestrator's kernel boot id, so its CLOCK_MONOTONIC is the orchestrator's: probe times are exact, on the same clock as the trigger (assumes no time namespace, which Kubernetes does not use). offset_ms is the probe's wall clock minus the orchestrator's, for reference (0 within the bound on one host).".into(),
        Mapping::OffsetTwoSided => "Probe times are the probe's wall clock plus an offset bounded from both sides: a heartbeat cannot arrive before it was sent, and an ack's clock was read between the ping's send and the ack's receipt. The estimate is the midpoint; error_bound_ms is half the tightest interval (half the best round trip), assuming neither wall clock stepped during the trial.".into(),
        Mapping::OffsetOneSided => "Probe times are the probe's wall clock plus an offset bounded from one side only: every heartbeat arrived after it was sent, so the offset is at most the smallest observed (receive time - heartbeat clock). Mapped probe times are therefore upper bounds, late by at most the unmeasured one-way delay of the fastest heartbeat.".into(),
        Mapping::WallClockDifference => "No clock samples were available: probe times are (probe wall clock - orchestrator wall clock at trigger_issued), with an unmeasured host-to-host offset.".into(),
        Mapping::ReceiveTime => "Probe times are the orchestrator's receive times of the probe's log lines: upper bounds that include log delivery latency.".into(),
        Mapping::NotMeasured => "No probe event was recorded.".into(),
    }
}

pub(super) const CLOCK_NOTE: &str = "t_ms is milliseconds relative to trigger_issued, truncated toward zero. Events from 'orchestrator' and 'client' are taken from one monotonic clock in the orchestrator process and are exact relative to the trigger. Events from 'k8s' are stamped when the watch event was received, so they include API-server write and watch dispatch latency and are an upper bound on when the change happened. Probe events are mapped as trial.clock.probe says; rows marked approximate carry the error stated there.";

/// `trial.clock.client`: one domain as before (its words unchanged, so older recordings replay
/// byte for byte); several, summed up by the worst of them, each told in `client_domains`.
fn relayed_note(c: &RelayedClock) -> SourceClock {
    let lines = c.lines();
    let note = match (c.domains.as_slice(), c.mapping()) {
        ([_], Mapping::SameHostMonotonic) => format!(
            "The client ran in a pod on the orchestrator's kernel (same boot id), so the {lines} client times relayed over its log are its CLOCK_MONOTONIC readings, exact on the orchestrator's timebase."
        ),
        ([_], Mapping::OffsetOneSided) => format!(
            "The client ran in a pod on another kernel; its {lines} relayed times are its own monotonic clock plus the smallest observed (receive time - emit time), so they are upper bounds, late by at most the fastest log line's delivery delay. Client-to-client intervals are exact."
        ),
        ([_], Mapping::OffsetTwoSided) => format!(
            "The client ran in a pod on another kernel; its {lines} relayed times are its own monotonic clock plus an offset bounded from both sides through the probe's wall clock, which client lines on the orchestrator's clock bound too. The estimate is the midpoint; error_bound_ms is half the interval, assuming the probe's wall clock did not step during the trial."
        ),
        ([_], _) => format!(
            "The client ran in a pod on another kernel and its lines carried no emit times: the {lines} client times are the orchestrator's receive times of its log lines (upper bounds)."
        ),
        (domains, worst) => {
            let exact = domains.iter().filter(|d| d.exact()).count();
            format!(
                "The client shards ran on {} kernels (boot ids), each a clock of its own, placed separately (trial.clock.client_domains): {exact} on the orchestrator's kernel, exact; the others by their own offset, their rows marked approximate. The {lines} relayed times are at worst {}; error_bound_ms is the largest bound of any domain, null when one is unknown. Intervals between times of one domain are exact.",
                domains.len(),
                mapping_words(worst),
            )
        }
    };
    SourceClock {
        mapping: c.mapping(),
        approximate: !c.exact(),
        offset_ms: None,
        error_bound_ms: c.bound_ns().map(ns_to_ms_f64),
        samples: lines,
        note,
    }
}

/// A mapping in the words of the multi-domain note.
fn mapping_words(m: Mapping) -> &'static str {
    match m {
        Mapping::SameHostMonotonic => "exact",
        Mapping::OffsetTwoSided => {
            "an offset bounded from both sides through the probe's wall clock (midpoint, ± half the interval)"
        }
        Mapping::OffsetOneSided => {
            "upper bounds: emit time plus the smallest observed (receive time - emit time) of their domain, late by at most its fastest line's delivery delay"
        }
        Mapping::WallClockDifference | Mapping::ReceiveTime | Mapping::NotMeasured => {
            "the orchestrator's receive times of the log lines (upper bounds), where a domain's lines carried no emit time"
        }
    }
}

/// `trial.clock.client_domains`: every domain, only when there are several (one is all of
/// `trial.clock.client`, and older recordings then replay unchanged).
fn client_domains(c: &RelayedClock) -> Option<Vec<ClientDomainClock>> {
    (c.domains.len() > 1).then(|| {
        c.domains
            .iter()
            .map(|d| ClientDomainClock {
                boot_id: d.boot_id.clone(),
                mapping: d.mapping,
                offset_ns: d.offset_ns,
                error_bound_ms: d.bound_ns.map(ns_to_ms_f64),
                approximate: !d.exact(),
                lines: d.lines,
                node: d.node.clone(),
            })
            .collect()
    })
}

/// `trial.clock`: the probe's mapping and, for client pods, how their relayed times were placed.
pub(super) fn report(
    pc: &ProbeClock,
    relayed: Option<&RelayedClock>,
    trigger: Option<&EventLine>,
    trigger_wall: Option<i64>,
) -> ClockReport {
    // θ maps probe wall onto orchestrator monotonic; subtracting the orchestrator's own
    // wall-minus-monotonic (read together on trigger_issued) leaves probe wall − orchestrator
    // wall, the number a reader can interpret.
    let orch_wall_minus_mono = trigger.and_then(|l| Some(trigger_wall? - l.at_ns?));
    let offset_ms = match (pc.offset_ns, orch_wall_minus_mono) {
        (Some(theta), Some(d)) => Some(ns_to_ms_f64(-theta - d)),
        _ => None,
    };
    let error_bound_ms = pc.bound_ns.map(ns_to_ms_f64);
    ClockReport {
        timebase: "orchestrator CLOCK_MONOTONIC".into(),
        probe: SourceClock {
            mapping: pc.mapping,
            approximate: !matches!(
                pc.mapping,
                Mapping::SameHostMonotonic | Mapping::NotMeasured
            ),
            offset_ms,
            error_bound_ms,
            samples: pc.samples,
            note: probe_note(pc),
        },
        client: relayed.map(relayed_note),
        client_domains: relayed.and_then(client_domains),
    }
}
