//! The report's `trial.attach.watches` (schema 3.2): how each held gRPC
//! `grpc.health.v1.Health/Watch` ended, as closed enums; `attach::watch` folds the client's
//! lines into them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{FailureMechanism, Phase};

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
    /// The status messages received, in order (at most `attach::watch::MAX_WATCH_STATUSES`).
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
