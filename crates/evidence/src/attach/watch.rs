//! gRPC `--grpc-watch` (schema 3.2): the one `grpc.health.v1.Health/Watch` each connection
//! holds, folded from the client's `attach_grpc_watch_*` lines into `trial.attach.watches`.
//!
//! A held Watch is the streaming call a load balancer or a service mesh keeps open to learn a
//! backend's health: the good shutdown tells it NOT_SERVING while the pod still serves, then
//! ends the call with a gRPC status (trailers) before, or after, the GOAWAY that closes the
//! connection. The bad ones cut it: RST_STREAM, the connection's RST or FIN without trailers,
//! a GOAWAY with an error. How each Watch ended is a closed [`WatchOutcome`]; a cut one carries
//! the failure mechanism the client named from the wire (the same names a request's failure
//! has: `rst-stream`, `goaway-then-reset`, `no-goaway`, `goaway-error`, `reset`, `timeout`, …).
//!
//! A cut Watch is not a failed request: the unary calls are counted per interval, a Watch is
//! one stream per connection, and mixing the two would make `failed-requests` mean two units.
//! It is gated on its own (`no-watch-cut`) and is attributed to a pod and phase on its record.
//!
//! | event | fields | meaning |
//! | --- | --- | --- |
//! | `attach_grpc_watch_opened` | flow, seq (generation), stream_id, status, instance | the Watch was answered (headers without a status) |
//! | `attach_grpc_watch_status` | flow, seq, stream_id, result (`serving`, `not-serving`, `service-unknown`, `unknown`) | one status message received |
//! | `attach_grpc_watch_ended` | flow, seq, stream_id, result `status` + grpc_code, or a mechanism + errno / h2_code | how it ended |
//! | `attach_grpc_watch_observation_end` | flow, seq, stream_id | still open when the window closed |

use std::collections::BTreeMap;

use super::lanes::{PodLane, attribute};
use super::section::FailureMechanism;
pub use super::section::watch::{
    ServingStatus, WatchOutcome, WatchRecord, WatchReport, WatchStatusRecord,
};
use crate::event::{EventLine, EventName, Source};

/// `result` of an `attach_grpc_watch_ended` line whose Watch ended with a gRPC status (any
/// code, OK included); the code's name is the line's `grpc_code`.
pub const ENDED_WITH_STATUS: &str = "status";

/// Status lines kept per Watch: a flapping server cannot grow a report without bound.
pub const MAX_WATCH_STATUSES: usize = 32;

/// One Watch as its lines saw it.
#[derive(Default)]
struct Seen<'a> {
    opened_ns: Option<i64>,
    stream_id: Option<u32>,
    instance: Option<String>,
    statuses: Vec<(i64, ServingStatus)>,
    ended: Option<(i64, &'a EventLine)>,
    observation_end: bool,
}

/// Folds the Watch lines of a trial; `goaway_last` gives the last stream id of a connection's
/// GOAWAY (flow, generation), `rel` places a time relative to the trigger.
pub fn watches(
    lines: &[EventLine],
    pod_lanes: &[PodLane],
    goaway_last: impl Fn(&str, u64) -> Option<u32>,
    rel: impl Fn(i64) -> i64,
) -> WatchReport {
    let mut seen: BTreeMap<(String, u64), Seen<'_>> = BTreeMap::new();
    for l in lines.iter().filter(|l| l.source == Some(Source::Client)) {
        let (Some(at), Some(flow)) = (l.at_ns, l.flow_id.as_ref()) else {
            continue;
        };
        let key = (flow.clone(), l.seq.unwrap_or(1));
        let w = match l.event {
            EventName::AttachGrpcWatchOpened
            | EventName::AttachGrpcWatchStatus
            | EventName::AttachGrpcWatchEnded
            | EventName::AttachGrpcWatchObservationEnd => seen.entry(key).or_default(),
            _ => continue,
        };
        w.stream_id = w.stream_id.or(l.stream_id);
        w.instance = w.instance.take().or_else(|| l.instance.clone());
        match l.event {
            EventName::AttachGrpcWatchOpened => w.opened_ns = w.opened_ns.or(Some(at)),
            EventName::AttachGrpcWatchStatus => {
                let s = l
                    .result
                    .as_deref()
                    .and_then(ServingStatus::parse)
                    .unwrap_or(ServingStatus::Unknown);
                if w.ended.is_none() && w.statuses.len() < MAX_WATCH_STATUSES {
                    w.statuses.push((at, s));
                }
            }
            EventName::AttachGrpcWatchEnded => {
                if w.ended.is_none() && !w.observation_end {
                    w.ended = Some((at, l));
                }
            }
            _ => w.observation_end = w.ended.is_none(),
        }
    }
    let mut r = WatchReport {
        total: 0,
        drained: 0,
        ended_with_status: 0,
        cut: 0,
        survived_observation_window: 0,
        not_measured: 0,
        cut_by_mechanism: BTreeMap::new(),
        records: Vec::with_capacity(seen.len()),
    };
    for ((flow_id, generation), w) in seen {
        let rec = record(flow_id, generation, &w, pod_lanes, &goaway_last, &rel);
        r.total += 1;
        match rec.outcome {
            WatchOutcome::Drained => r.drained += 1,
            WatchOutcome::EndedWithStatus => r.ended_with_status += 1,
            WatchOutcome::Cut => {
                r.cut += 1;
                let m = rec.mechanism.unwrap_or(FailureMechanism::Error);
                *r.cut_by_mechanism.entry(m).or_default() += 1;
            }
            WatchOutcome::SurvivedObservationWindow => r.survived_observation_window += 1,
            WatchOutcome::NotMeasured => r.not_measured += 1,
        }
        r.records.push(rec);
    }
    r
}

/// How a Watch ended, from its end line and the statuses before it.
pub fn outcome(
    end: Option<&EventLine>,
    statuses: &[ServingStatus],
    open_at_end: bool,
) -> WatchOutcome {
    match end {
        Some(l) if l.result.as_deref() == Some(ENDED_WITH_STATUS) => {
            if statuses.contains(&ServingStatus::NotServing) {
                WatchOutcome::Drained
            } else {
                WatchOutcome::EndedWithStatus
            }
        }
        Some(_) => WatchOutcome::Cut,
        None if open_at_end => WatchOutcome::SurvivedObservationWindow,
        None => WatchOutcome::NotMeasured,
    }
}

fn record(
    flow_id: String,
    generation: u64,
    w: &Seen<'_>,
    pod_lanes: &[PodLane],
    goaway_last: &impl Fn(&str, u64) -> Option<u32>,
    rel: &impl Fn(i64) -> i64,
) -> WatchRecord {
    let end = w.ended.map(|(_, l)| l);
    let statuses: Vec<ServingStatus> = w.statuses.iter().map(|(_, s)| *s).collect();
    let outcome = outcome(end, &statuses, w.observation_end);
    let cut = outcome == WatchOutcome::Cut;
    let attributed = w
        .ended
        .map(|(at, _)| attribute(pod_lanes, at, w.instance.as_deref()));
    let within_goaway = match (w.stream_id, goaway_last(&flow_id, generation)) {
        (Some(s), Some(last)) => Some(s <= last),
        _ => None,
    };
    WatchRecord {
        flow_id,
        generation,
        outcome,
        stream_id: w.stream_id,
        opened_t_ms: w.opened_ns.map(rel),
        ended_t_ms: w.ended.map(|(at, _)| rel(at)),
        not_serving_t_ms: w
            .statuses
            .iter()
            .find(|(_, s)| *s == ServingStatus::NotServing)
            .map(|(at, _)| rel(*at)),
        statuses: w
            .statuses
            .iter()
            .map(|(at, s)| WatchStatusRecord {
                t_ms: rel(*at),
                status: *s,
            })
            .collect(),
        grpc_code: end.filter(|_| !cut).and_then(|l| l.grpc_code.clone()),
        mechanism: end.filter(|_| cut).map(|l| {
            l.result
                .as_deref()
                .and_then(FailureMechanism::parse)
                .unwrap_or(FailureMechanism::Error)
        }),
        h2_code: end.filter(|_| cut).and_then(|l| l.h2_code.clone()),
        errno: end.filter(|_| cut).and_then(|l| l.errno.clone()),
        within_goaway,
        instance: w.instance.clone(),
        pod: attributed.as_ref().and_then(|a| a.pod.clone()),
        phase: attributed.map(|a| a.phase),
    }
}
