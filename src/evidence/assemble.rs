//! Events in, report out: the one function that turns a trial's event lines into its report.
//!
//! A pure function of the lines: the live run and `drainwatch report --events` call it with the
//! same lines and must produce the same bytes.

use std::collections::BTreeMap;

use super::attach::attach_section;
use super::classify::Outcome;
use super::clock::{
    Mapping, OffsetBounds, RelayedClock, SourceClock, ns_to_ms_f64, place_relayed_client,
};
use super::event::{EventLine, EventName, Source, TrialHeader};
use super::flow::{FlowState, Observation, Proto, flow_id, flow_order};
use super::report::{
    ClockReport, Counts, FlowReport, RehomeReport, Report, SCHEMA_VERSION, Summary, TimelineEntry,
    Trial, TrialStatus,
};
use super::timeline;

/// Why a set of event lines cannot become a report.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AssembleError {
    /// The header line that carries config and environment is missing.
    #[error(
        "the events hold no trial_started line with a header: the trial's configuration and environment are unknown"
    )]
    NoHeader,
}

/// Probe events that belong on the timeline; heartbeats, accepts and UDP stats do not.
pub const PROBE_TIMELINE_EVENTS: &[EventName] = &[
    EventName::SigtermReceived,
    EventName::ProbeStarted,
    EventName::Listening,
    EventName::DrainStarted,
    EventName::DrainComplete,
    EventName::DrainDeadlineReached,
    EventName::StoppedAccepting,
    EventName::ReadyzNow503,
    EventName::SigtermIgnored,
    EventName::TcpFlowResetForced,
    EventName::TcpFlowOpenAtExit,
    EventName::TcpFlowClosed,
    EventName::Exiting,
    EventName::Fatal,
];

/// How probe lines are placed on the orchestrator's timebase.
struct ProbeClock {
    mapping: Mapping,
    offset_ns: Option<i64>,
    bound_ns: Option<i64>,
    samples: u32,
    trigger_wall_ns: Option<i64>,
}

impl ProbeClock {
    /// The line's time on the orchestrator's timebase (ns), and whether it is approximate.
    fn place(&self, line: &EventLine, t0: i64) -> (i64, bool) {
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

fn probe_clock(lines: &[EventLine], header: &TrialHeader, trigger_wall: Option<i64>) -> ProbeClock {
    let probe_lines: Vec<&EventLine> = lines
        .iter()
        .filter(|l| l.source == Some(Source::Probe))
        .collect();
    let mut bounds = OffsetBounds::default();
    for l in lines.iter().filter(|l| l.source == Some(Source::Client)) {
        if let (Some(w), Some(at)) = (l.peer_wall_ns, l.at_ns) {
            bounds.add(l.sent_ns, w, at);
        }
    }
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

fn probe_note(c: &ProbeClock) -> String {
    match c.mapping {
        Mapping::SameHostMonotonic => "The probe reported the orchestrator's kernel boot id, so its CLOCK_MONOTONIC is the orchestrator's: probe times are exact, on the same clock as the trigger (assumes no time namespace, which Kubernetes does not use). offset_ms is the probe's wall clock minus the orchestrator's, for reference (0 within the bound on one host).".into(),
        Mapping::OffsetTwoSided => "Probe times are the probe's wall clock plus an offset bounded from both sides: a heartbeat cannot arrive before it was sent, and an ack's clock was read between the ping's send and the ack's receipt. The estimate is the midpoint; error_bound_ms is half the tightest interval (half the best round trip), assuming neither wall clock stepped during the trial.".into(),
        Mapping::OffsetOneSided => "Probe times are the probe's wall clock plus an offset bounded from one side only: every heartbeat arrived after it was sent, so the offset is at most the smallest observed (receive time - heartbeat clock). Mapped probe times are therefore upper bounds, late by at most the unmeasured one-way delay of the fastest heartbeat.".into(),
        Mapping::WallClockDifference => "No clock samples were available: probe times are (probe wall clock - orchestrator wall clock at trigger_issued), with an unmeasured host-to-host offset.".into(),
        Mapping::ReceiveTime => "Probe times are the orchestrator's receive times of the probe's log lines: upper bounds that include log delivery latency.".into(),
        Mapping::NotMeasured => "No probe event was recorded.".into(),
    }
}

const CLOCK_NOTE: &str = "t_ms is milliseconds relative to trigger_issued, truncated toward zero. Events from 'orchestrator' and 'client' are taken from one monotonic clock in the orchestrator process and are exact relative to the trigger. Events from 'k8s' are stamped when the watch event was received, so they include API-server write and watch dispatch latency and are an upper bound on when the change happened. Probe events are mapped as trial.clock.probe says; rows marked approximate carry the error stated there.";

/// Builds the report of one trial from its event lines.
pub fn build_report(lines: &[EventLine]) -> Result<Report, AssembleError> {
    let boot = lines
        .iter()
        .find_map(|l| l.header.as_ref().map(|h| h.boot_id.clone()))
        .ok_or(AssembleError::NoHeader)?;
    // Client lines relayed from a client pod are placed on our timebase before anything reads
    // their times; events.jsonl keeps them as received.
    let mut placed = lines.to_vec();
    let relayed = place_relayed_client(&mut placed, &boot);
    assemble(&placed, relayed)
}

fn relayed_note(c: &RelayedClock) -> SourceClock {
    let note = match c.mapping {
        Mapping::SameHostMonotonic => format!(
            "The client ran in a pod on the orchestrator's kernel (same boot id), so the {} client times relayed over its log are its CLOCK_MONOTONIC readings, exact on the orchestrator's timebase.",
            c.lines
        ),
        Mapping::OffsetOneSided => format!(
            "The client ran in a pod on another kernel; its {} relayed times are its own monotonic clock plus the smallest observed (receive time - emit time), so they are upper bounds, late by at most the fastest log line's delivery delay. Client-to-client intervals are exact.",
            c.lines
        ),
        _ => format!(
            "The client ran in a pod on another kernel and its lines carried no emit times: the {} client times are the orchestrator's receive times of its log lines (upper bounds).",
            c.lines
        ),
    };
    SourceClock {
        mapping: c.mapping,
        approximate: c.mapping != Mapping::SameHostMonotonic,
        offset_ms: None,
        error_bound_ms: None,
        samples: c.lines,
        note,
    }
}

fn assemble(lines: &[EventLine], relayed: Option<RelayedClock>) -> Result<Report, AssembleError> {
    let (header_line, header) = lines
        .iter()
        .find_map(|l| match (&l.header, &l.event) {
            (Some(h), EventName::TrialStarted) => Some((l, h.as_ref())),
            _ => None,
        })
        .ok_or(AssembleError::NoHeader)?;
    let trigger = lines
        .iter()
        .find(|l| l.source == Some(Source::Orchestrator) && l.event == EventName::TriggerIssued);
    let t0 = trigger
        .and_then(|l| l.at_ns)
        .or(header_line.at_ns)
        .unwrap_or(0);
    let trigger_wall = trigger
        .and_then(|l| l.wall.as_deref())
        .and_then(timeline::parse_wall_ns);
    let rel = |at: Option<i64>| at.map(|a| (a - t0) / 1_000_000);

    // Flows: every configured flow exists up front, so an unobserved one is not-measured.
    // An attach trial holds no probe flows: its connections are in `trial.attach`.
    let attach = header.config.attach.as_ref();
    let probe_flows = if attach.is_some() {
        [(Proto::Tcp, 0), (Proto::Udp, 0)]
    } else {
        [
            (Proto::Tcp, header.config.tcp_flows),
            (Proto::Udp, header.config.udp_flows),
        ]
    };
    let mut flows: BTreeMap<(Proto, u64, String), FlowState> = BTreeMap::new();
    for (proto, n) in probe_flows {
        for i in 1..=n {
            let id = flow_id(proto, i);
            flows.insert(flow_order(proto, &id), FlowState::new(id, proto));
        }
    }
    for l in lines.iter().filter(|l| l.source == Some(Source::Client)) {
        let (Some(id), Some(obs)) = (l.flow_id.as_deref(), Observation::from_line(l)) else {
            continue;
        };
        let Some(proto) = Proto::of_flow_id(id) else {
            continue;
        };
        flows
            .entry(flow_order(proto, id))
            .or_insert_with(|| FlowState::new(id, proto))
            .step(l.at_ns.unwrap_or(t0), &obs);
    }

    let pc = probe_clock(lines, header, trigger_wall);
    let mut entries: Vec<(i64, TimelineEntry)> = Vec::new();
    let mut unparseable = 0u32;
    for l in lines {
        match l.source {
            Some(Source::Orchestrator | Source::K8s) if l.event != EventName::TrialStarted => {
                let at = l.at_ns.unwrap_or(t0);
                entries.push((
                    at,
                    TimelineEntry {
                        t_ms: (at - t0) / 1_000_000,
                        source: l.source.unwrap_or(Source::Orchestrator),
                        event: l.event.clone(),
                        flow_id: l.flow_id.clone(),
                        detail: l.detail.clone(),
                        approximate: false,
                    },
                ))
            }
            Some(Source::Probe) if l.event == EventName::UnparseableLine => unparseable += 1,
            Some(Source::Probe) if PROBE_TIMELINE_EVENTS.contains(&l.event) => {
                let (placed, approximate) = pc.place(l, t0);
                let detail = match (&l.detail, &l.errno) {
                    (Some(d), Some(e)) => Some(format!("{d} errno={e}")),
                    (None, Some(e)) => Some(format!("errno={e}")),
                    (d, None) => d.clone(),
                };
                entries.push((
                    placed,
                    TimelineEntry {
                        t_ms: (placed - t0) / 1_000_000,
                        source: Source::Probe,
                        event: l.event.clone(),
                        flow_id: l.flow_id.clone(),
                        detail,
                        approximate,
                    },
                ));
            }
            _ => {}
        }
    }

    let client_approximate = relayed.is_some_and(|c| c.mapping != Mapping::SameHostMonotonic);
    let mut flow_reports = Vec::with_capacity(flows.len());
    for f in flows.values() {
        let v = f.verdict();
        if let Some(at) = v.at_ns {
            entries.push((
                at,
                TimelineEntry {
                    t_ms: (at - t0) / 1_000_000,
                    source: Source::Client,
                    event: EventName::FlowTerminal,
                    flow_id: Some(f.id.clone()),
                    detail: Some(format!("{}: {}", v.outcome, v.detail)),
                    approximate: client_approximate,
                },
            ));
        }
        let seq_tcp = (f.proto == Proto::Tcp).then_some(f.last_seq).flatten();
        let seq_udp = (f.proto == Proto::Udp).then_some(f.last_seq).flatten();
        flow_reports.push(FlowReport {
            id: f.id.clone(),
            proto: f.proto,
            outcome: v.outcome,
            mechanism: v.mechanism,
            connected_t_ms: rel(f.connected_ns),
            t_terminal_ms: rel(v.at_ns),
            last_heartbeat_seq: seq_tcp,
            last_answered_seq: seq_udp,
            last_data_t_ms: rel(f.last_data_ns),
            instance: f.instance.clone(),
            rehomed: f.rehome.as_ref().map(|r| RehomeReport {
                from_instance: r.from.clone(),
                to_instance: r.to.clone(),
                last_original_reply_t_ms: rel(r.last_original_ns),
                first_new_reply_t_ms: (r.first_new_ns - t0) / 1_000_000,
            }),
            detail: Some(v.detail).filter(|d| !d.is_empty()),
        });
    }
    let entries = timeline::sorted(entries);

    let (status, status_detail) = status_of(lines);
    let summary = summarise(
        &entries,
        &flow_reports,
        lines,
        trigger.is_some(),
        unparseable,
    );
    // θ maps probe wall onto orchestrator monotonic; subtracting the orchestrator's own
    // wall-minus-monotonic (read together on trigger_issued) leaves probe wall − orchestrator
    // wall, the number a reader can interpret.
    let orch_wall_minus_mono = trigger.and_then(|l| Some(trigger_wall? - l.at_ns?));
    let offset_ms = match (pc.offset_ns, orch_wall_minus_mono) {
        (Some(theta), Some(d)) => Some(ns_to_ms_f64(-theta - d)),
        _ => None,
    };
    let error_bound_ms = pc.bound_ns.map(ns_to_ms_f64);
    Ok(Report {
        schema_version: SCHEMA_VERSION.into(),
        drainwatch_version: header.drainwatch_version.clone(),
        git_commit: header.git_commit.clone(),
        environment: header.environment.clone(),
        trial: Trial {
            id: header.trial_id.clone(),
            status,
            status_detail,
            config: header.config.clone(),
            timeline: entries,
            flows: flow_reports,
            summary,
            clock: ClockReport {
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
                    note: probe_note(&pc),
                },
                client: relayed.as_ref().map(relayed_note),
            },
            clock_note: CLOCK_NOTE.into(),
            probe_clock_offset_note: probe_note(&pc),
            attach: attach.map(|cfg| attach_section(lines, cfg, t0)),
        },
    })
}

fn status_of(lines: &[EventLine]) -> (TrialStatus, Option<String>) {
    for l in lines
        .iter()
        .filter(|l| l.source == Some(Source::Orchestrator))
    {
        match l.event {
            EventName::TrialAborted => return (TrialStatus::Aborted, l.detail.clone()),
            EventName::TrialBlockedByPdb => return (TrialStatus::BlockedByPdb, l.detail.clone()),
            _ => {}
        }
    }
    (TrialStatus::Completed, None)
}

fn summarise(
    timeline: &[TimelineEntry],
    flows: &[FlowReport],
    lines: &[EventLine],
    triggered: bool,
    unparseable: u32,
) -> Summary {
    let mut tcp = Counts::default();
    let mut udp = Counts::default();
    let mut mechanisms: BTreeMap<Proto, BTreeMap<_, u32>> = BTreeMap::new();
    for f in flows {
        match f.proto {
            Proto::Tcp => tcp.add(f.outcome),
            Proto::Udp => udp.add(f.outcome),
        }
        *mechanisms
            .entry(f.proto)
            .or_default()
            .entry(f.mechanism)
            .or_default() += 1;
    }
    // Post-trigger events only: a stale ready:false from before t=0 must not become the answer.
    let first = |source: Option<Source>, event: EventName, after_trigger: bool| {
        timeline.iter().find(|e| {
            e.event == event
                && source.is_none_or(|s| e.source == s)
                && (!after_trigger || e.t_ms >= 0)
        })
    };
    let sigterm = first(Some(Source::Probe), EventName::SigtermReceived, false);
    let ready_false = first(Some(Source::K8s), EventName::EndpointsliceReadyFalse, true);
    let removed = first(
        Some(Source::K8s),
        EventName::EndpointsliceEndpointRemoved,
        true,
    );
    let terminated = first(None, EventName::ContainerTerminated, true);
    let exit_code = lines
        .iter()
        .filter(|l| l.event == EventName::ContainerTerminated)
        .find_map(|l| l.exit_code);
    let last_terminal = flows.iter().filter_map(|f| f.t_terminal_ms).max();
    let without_terminal = flows.iter().filter(|f| f.t_terminal_ms.is_none()).count();

    let mut notes = Vec::new();
    if !triggered {
        notes.push("no trigger was issued; t_ms is relative to the start of the trial".to_string());
    }
    if sigterm.is_none() {
        notes.push("sigterm_received was not observed in the probe log stream; every interval measured from SIGTERM is not-measured".into());
    }
    if ready_false.is_none() {
        notes.push("endpointslice_ready_false was not observed (the local platform has no endpoints; on Kubernetes the endpoint may have been removed without an intermediate not-ready state)".into());
    }
    if without_terminal > 0 {
        notes.push(format!("{without_terminal} flows had no terminal time (survived or not-measured) and are excluded from sigterm -> last flow terminal"));
    }
    let sigterm_to_ready_false = match (sigterm, ready_false) {
        (Some(s), Some(r)) => Some(r.t_ms - s.t_ms),
        _ => None,
    };
    if let Some(d) = sigterm_to_ready_false.filter(|d| *d < 0) {
        notes.push(format!("sigterm_to_ready_false_ms is negative ({d} ms): the two ends come from different clocks (see trial.clock), so read it as 'within clock error of simultaneous', not as ready:false preceding SIGTERM"));
    }
    let gaps = lines
        .iter()
        .filter(|l| l.source == Some(Source::K8s) && l.event == EventName::WatchInterrupted)
        .count();
    if gaps > 0 {
        notes.push(format!("k8s watch: {gaps} interruption(s), each resumed (watch_interrupted / watch_resumed in the timeline); k8s events received inside a gap are stamped at their late receipt, so intervals that end in one are upper bounds"));
    }
    if unparseable > 0 {
        notes.push(format!(
            "probe log: {unparseable} lines could not be parsed and were skipped"
        ));
    }
    Summary {
        tcp,
        udp,
        mechanisms,
        trigger_to_sigterm_ms: sigterm.map(|s| s.t_ms),
        sigterm_to_ready_false_ms: sigterm_to_ready_false,
        sigterm_to_last_flow_terminal_ms: match (sigterm, last_terminal) {
            (Some(s), Some(l)) => Some(l - s.t_ms),
            _ => None,
        },
        trigger_to_endpoint_removed_ms: removed.map(|e| e.t_ms),
        trigger_to_container_terminated_ms: terminated.map(|e| e.t_ms),
        container_exit_code: exit_code,
        notes,
    }
}

/// Whether every count adds up: `total` equals the sum of its buckets for both protocols.
pub fn counts_are_consistent(s: &Summary) -> bool {
    [s.tcp, s.udp]
        .iter()
        .all(|c| Outcome::ALL.iter().map(|o| c.get(*o)).sum::<u32>() == c.total)
}

#[cfg(test)]
pub(crate) mod tests;
