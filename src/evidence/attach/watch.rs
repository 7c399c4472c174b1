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

use serde::{Deserialize, Serialize};

use super::lanes::{PodLane, attribute};
use super::section::{FailureMechanism, Phase};
use crate::evidence::event::{EventLine, EventName, Source};

/// `result` of an `attach_grpc_watch_ended` line whose Watch ended with a gRPC status (any
/// code, OK included); the code's name is the line's `grpc_code`.
pub const ENDED_WITH_STATUS: &str = "status";

/// Status lines kept per Watch: a flapping server cannot grow a report without bound.
pub const MAX_WATCH_STATUSES: usize = 32;

/// How a held Watch ended; a closed enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WatchOutcome {
    /// It received NOT_SERVING, then ended with a gRPC status: the server announced its
    /// drain on the Watch and closed the call itself (the good shutdown).
    Drained,
    /// It ended with a gRPC status (the code is on the record) without a NOT_SERVING before:
    /// closed by the server on purpose, but unannounced.
    EndedWithStatus,
    /// It ended without a gRPC status: reset by RST_STREAM, cut by the connection's end (FIN
    /// or RST) or a GOAWAY with an error, or timed out; the mechanism is on the record. A
    /// failure.
    Cut,
    /// Still open when the window closed.
    SurvivedObservationWindow,
    /// Its end was not observed (the client did not close its window).
    NotMeasured,
}

impl WatchOutcome {
    /// The name written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Drained => "drained",
            Self::EndedWithStatus => "ended-with-status",
            Self::Cut => "cut",
            Self::SurvivedObservationWindow => "survived-observation-window",
            Self::NotMeasured => "not-measured",
        }
    }
}

/// A `HealthCheckResponse.ServingStatus` a Watch received; a closed enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServingStatus {
    /// SERVING (1).
    Serving,
    /// NOT_SERVING (2): the server says it is going away, or unhealthy.
    NotServing,
    /// SERVICE_UNKNOWN (3): the server does not know the service watched.
    ServiceUnknown,
    /// UNKNOWN (0), or a value the protocol does not define.
    Unknown,
}

impl ServingStatus {
    /// Every status, in protocol order.
    pub const ALL: [Self; 4] = [
        Self::Serving,
        Self::NotServing,
        Self::ServiceUnknown,
        Self::Unknown,
    ];

    /// The wire's value as a status.
    pub fn of(v: i32) -> Self {
        match v {
            1 => Self::Serving,
            2 => Self::NotServing,
            3 => Self::ServiceUnknown,
            _ => Self::Unknown,
        }
    }

    /// The name written in events and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Serving => "serving",
            Self::NotServing => "not-serving",
            Self::ServiceUnknown => "service-unknown",
            Self::Unknown => "unknown",
        }
    }

    /// The status a line's `result` names.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// One status message, when it arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchStatusRecord {
    /// When it arrived, ms from the trigger.
    pub t_ms: i64,
    /// The serving status.
    pub status: ServingStatus,
}

/// One held Watch (one per connection generation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchRecord {
    /// The flow (`grpc-0001`).
    pub flow_id: String,
    /// The connection generation it was held on.
    pub generation: u64,
    /// How it ended.
    pub outcome: WatchOutcome,
    /// Its HTTP/2 stream; null when unknown.
    pub stream_id: Option<u32>,
    /// When it was answered, ms; null if never.
    pub opened_t_ms: Option<i64>,
    /// When it ended, ms; null for survived and not-measured.
    pub ended_t_ms: Option<i64>,
    /// The first NOT_SERVING it received, ms; null if none.
    pub not_serving_t_ms: Option<i64>,
    /// The status messages received, in order (at most [`MAX_WATCH_STATUSES`]).
    pub statuses: Vec<WatchStatusRecord>,
    /// The gRPC status that ended it (`OK`, `UNAVAILABLE`, …); null when cut or still open.
    pub grpc_code: Option<String>,
    /// Why it was cut; null unless the outcome is `cut`.
    pub mechanism: Option<FailureMechanism>,
    /// The RST_STREAM's or GOAWAY's error code name that cut it; null when none did.
    pub h2_code: Option<String>,
    /// Symbolic errno of the socket error that cut it; null when none.
    pub errno: Option<String>,
    /// Whether its stream was at or below the last stream id of the connection's GOAWAY (the
    /// server had taken it, so owed it an end); null when no GOAWAY arrived or the stream is
    /// unknown.
    pub within_goaway: Option<bool>,
    /// The endpoint that answered it, as its headers named it; null if unknown.
    pub instance: Option<String>,
    /// The pod its end is attributed to; null when unattributed or not ended.
    pub pod: Option<String>,
    /// The phase of that pod's termination at its end; null when not ended.
    pub phase: Option<Phase>,
}

/// `trial.attach.watches`: every held Watch, counted by outcome; `total` is their sum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchReport {
    /// Watches recorded.
    pub total: u32,
    /// NOT_SERVING, then a status.
    pub drained: u32,
    /// A status without NOT_SERVING before it.
    pub ended_with_status: u32,
    /// Cut without a status: the failures `no-watch-cut` counts.
    pub cut: u32,
    /// Open when the window closed.
    pub survived_observation_window: u32,
    /// End not observed.
    pub not_measured: u32,
    /// Cut Watches per mechanism.
    pub cut_by_mechanism: BTreeMap<FailureMechanism, u32>,
    /// Every Watch, by flow and generation.
    pub records: Vec<WatchRecord>,
}

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
pub fn outcome(end: Option<&EventLine>, statuses: &[ServingStatus], open_at_end: bool) -> WatchOutcome {
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
        grpc_code: end
            .filter(|_| !cut)
            .and_then(|l| l.grpc_code.clone()),
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
