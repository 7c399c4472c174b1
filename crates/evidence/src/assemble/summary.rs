//! `trial.summary`: outcome counts per protocol, the intervals between the milestones of a
//! termination, and notes on what could not be measured.

use std::collections::BTreeMap;

use crate::classify::Mechanism;
use crate::event::EventName;
use crate::event::{EventLine, Source};
use crate::flow::Proto;
use crate::report::{Counts, FlowReport, Summary, TimelineEntry};

/// What the summary is made of besides the timeline and the flows.
pub(super) struct Inputs<'a> {
    /// The trial's lines.
    pub(super) lines: &'a [EventLine],
    /// Whether a trigger was issued (else t_ms is relative to the trial's start).
    pub(super) triggered: bool,
    /// Probe lines that could not be parsed.
    pub(super) unparseable: u32,
}

/// The first timeline row of each termination milestone.
struct Milestones<'a> {
    sigterm: Option<&'a TimelineEntry>,
    ready_false: Option<&'a TimelineEntry>,
    removed: Option<&'a TimelineEntry>,
    terminated: Option<&'a TimelineEntry>,
}

fn milestones(timeline: &[TimelineEntry]) -> Milestones<'_> {
    // Post-trigger events only: a stale ready:false from before t=0 must not become the answer.
    let first = |source: Option<Source>, event: EventName, after_trigger: bool| {
        timeline.iter().find(|e| {
            e.event == event
                && source.is_none_or(|s| e.source == s)
                && (!after_trigger || e.t_ms >= 0)
        })
    };
    Milestones {
        sigterm: first(Some(Source::Probe), EventName::SigtermReceived, false),
        ready_false: first(Some(Source::K8s), EventName::EndpointsliceReadyFalse, true),
        removed: first(
            Some(Source::K8s),
            EventName::EndpointsliceEndpointRemoved,
            true,
        ),
        terminated: first(None, EventName::ContainerTerminated, true),
    }
}

type MechanismCounts = BTreeMap<Proto, BTreeMap<Mechanism, u32>>;

fn counts(flows: &[FlowReport]) -> (Counts, Counts, MechanismCounts) {
    let mut tcp = Counts::default();
    let mut udp = Counts::default();
    let mut mechanisms: MechanismCounts = BTreeMap::new();
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
    (tcp, udp, mechanisms)
}

/// Summarises a trial from its sorted timeline and its flow reports.
pub(super) fn summarise(
    timeline: &[TimelineEntry],
    flows: &[FlowReport],
    inputs: &Inputs<'_>,
) -> Summary {
    let (tcp, udp, mechanisms) = counts(flows);
    let m = milestones(timeline);
    let exit_code = inputs
        .lines
        .iter()
        .filter(|l| l.event == EventName::ContainerTerminated)
        .find_map(|l| l.exit_code);
    let last_terminal = flows.iter().filter_map(|f| f.t_terminal_ms).max();
    let sigterm_to_ready_false = match (m.sigterm, m.ready_false) {
        (Some(s), Some(r)) => Some(r.t_ms - s.t_ms),
        _ => None,
    };
    Summary {
        tcp,
        udp,
        mechanisms,
        trigger_to_sigterm_ms: m.sigterm.map(|s| s.t_ms),
        sigterm_to_ready_false_ms: sigterm_to_ready_false,
        sigterm_to_last_flow_terminal_ms: match (m.sigterm, last_terminal) {
            (Some(s), Some(l)) => Some(l - s.t_ms),
            _ => None,
        },
        trigger_to_endpoint_removed_ms: m.removed.map(|e| e.t_ms),
        trigger_to_container_terminated_ms: m.terminated.map(|e| e.t_ms),
        container_exit_code: exit_code,
        notes: notes(&m, flows, inputs, sigterm_to_ready_false),
    }
}

fn notes(
    m: &Milestones<'_>,
    flows: &[FlowReport],
    inputs: &Inputs<'_>,
    sigterm_to_ready_false: Option<i64>,
) -> Vec<String> {
    let without_terminal = flows.iter().filter(|f| f.t_terminal_ms.is_none()).count();
    let unparseable = inputs.unparseable;
    let mut notes = Vec::new();
    if !inputs.triggered {
        notes.push("no trigger was issued; t_ms is relative to the start of the trial".to_string());
    }
    if m.sigterm.is_none() {
        notes.push("sigterm_received was not observed in the probe log stream; every interval measured from SIGTERM is not-measured".into());
    }
    if m.ready_false.is_none() {
        notes.push("endpointslice_ready_false was not observed (the local platform has no endpoints; on Kubernetes the endpoint may have been removed without an intermediate not-ready state)".into());
    }
    if without_terminal > 0 {
        notes.push(format!("{without_terminal} flows had no terminal time (survived or not-measured) and are excluded from sigterm -> last flow terminal"));
    }
    if let Some(d) = sigterm_to_ready_false.filter(|d| *d < 0) {
        notes.push(format!("sigterm_to_ready_false_ms is negative ({d} ms): the two ends come from different clocks (see trial.clock), so read it as 'within clock error of simultaneous', not as ready:false preceding SIGTERM"));
    }
    let gaps = inputs
        .lines
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
    notes
}
