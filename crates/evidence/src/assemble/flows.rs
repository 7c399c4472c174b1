//! The probe flows: every configured flow up front (so an unobserved one is not-measured),
//! stepped through the client's observations, then reported.

use std::collections::{BTreeMap, BTreeSet};

use crate::classify::{Mechanism, Outcome};
use crate::event::{EventLine, EventName, Source};
use crate::flow::{FlowState, Observation, Proto, Terminal, flow_id, flow_order};
use crate::plan::TrialConfig;
use crate::report::{FlowReport, RehomeReport, TimelineEntry};
use crate::shard::Losses;

/// Flow states in report order.
pub(super) type Flows = BTreeMap<(Proto, u64, String), FlowState>;

/// Every configured flow, stepped through the client's lines in order.
pub(super) fn fold(lines: &[EventLine], config: &TrialConfig, t0: i64) -> Flows {
    // Flows: every configured flow exists up front, so an unobserved one is not-measured.
    // An attach trial holds no probe flows: its connections are in `trial.attach`.
    let probe_flows = if config.attach.is_some() {
        [(Proto::Tcp, 0), (Proto::Udp, 0)]
    } else {
        [
            (Proto::Tcp, config.tcp_flows),
            (Proto::Udp, config.udp_flows),
        ]
    };
    let mut flows: Flows = BTreeMap::new();
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
    flows
}

/// A flow's verdict when its client (or its shard) was lost (`lost`) before the window closed: a flow still
/// open then, or one whose `observation_end` the client wrote as it was stopped (not because
/// the orchestrator closed the window), survived nothing that was watched: it is not-measured,
/// saying why. A flow that ended before (FIN, RST, timeout) keeps its outcome: that was seen.
fn unobserved(f: &FlowState, v: Terminal, lost: Option<&str>) -> Terminal {
    let Some(why) = lost else {
        return v;
    };
    let open = v.outcome == Outcome::NotMeasured && f.connected_ns.is_some();
    if v.outcome != Outcome::SurvivedObservationWindow && !open {
        return v;
    }
    Terminal {
        at_ns: None,
        outcome: Outcome::NotMeasured,
        mechanism: Mechanism::None,
        detail: format!(
            "the client was lost before the observation window closed ({why}); what happened to this flow after that was not observed"
        ),
    }
}

/// One report per flow; each flow that ended adds its `flow_terminal` row to `entries`, marked
/// approximate when the flow is in `inexact` (its lines were placed from another kernel's
/// clock). With `lost` (the trial's `client_lost` lines) the flows a lost client or shard
/// stopped watching are not-measured ([`unobserved`]); the other shards' flows keep their
/// outcomes.
pub(super) fn reports(
    flows: &Flows,
    t0: i64,
    inexact: &BTreeSet<&str>,
    lost: &Losses<'_>,
    entries: &mut Vec<(i64, TimelineEntry)>,
) -> Vec<FlowReport> {
    let rel = |at: Option<i64>| at.map(|a| (a - t0) / 1_000_000);
    let mut flow_reports = Vec::with_capacity(flows.len());
    for f in flows.values() {
        let v = unobserved(f, f.verdict(), lost.why(&f.id));
        if let Some(at) = v.at_ns {
            entries.push((
                at,
                TimelineEntry {
                    t_ms: (at - t0) / 1_000_000,
                    source: Source::Client,
                    event: EventName::FlowTerminal,
                    flow_id: Some(f.id.clone()),
                    detail: Some(format!("{}: {}", v.outcome, v.detail)),
                    approximate: inexact.contains(f.id.as_str()),
                    pod: None,
                    ready: None,
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
    flow_reports
}
