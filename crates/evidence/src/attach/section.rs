//! The report's `trial.attach` section (schema 1.2): counts, records and attribution of what
//! the workload's clients saw. Absence is null: a count that was not measured (no requests on a
//! TCP arm, no dials with the prober off) is null, never zero.

mod mechanism;
pub mod watch;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

use super::names;
use super::ready::NoReadyWindow;
use crate::plan::attach::config::AttachProtocol;
pub use mechanism::FailureMechanism;
use watch::WatchReport;

/// Where in a pod's termination a failure happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Before the pod's deletion was requested.
    BeforeTermination,
    /// Deletion requested, endpoint still ready.
    TerminatingReady,
    /// Endpoint not ready, still present.
    TerminatingNotReady,
    /// Endpoint removed, container not (yet) seen to exit.
    AfterEndpointRemoval,
    /// The container exited.
    AfterExit,
    /// Not tied to one pod.
    Unattributed,
}

impl Phase {
    /// The name written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BeforeTermination => "before-termination",
            Self::TerminatingReady => "terminating-ready",
            Self::TerminatingNotReady => "terminating-not-ready",
            Self::AfterEndpointRemoval => "after-endpoint-removal",
            Self::AfterExit => "after-exit",
            Self::Unattributed => "unattributed",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The pod and phase a failure belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attribution {
    /// The pod; null when unattributed.
    pub pod: Option<String>,
    /// The phase.
    pub phase: Phase,
}

/// How one held connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnOutcome {
    /// The server ended it without a break: a close it announced (`Connection: close`, GOAWAY,
    /// a WebSocket close frame) or a bare FIN while idle. The name predates the distinction
    /// and stays for the schema's sake; [`CloseKind`] says which, and only an announced close
    /// is graceful on the wire (a dying process's kernel sends the same bare FIN).
    GracefulClose,
    /// It broke: reset, timeout, truncated response, error.
    Severed,
    /// Still open when the window closed: not drained, just not observed to end.
    SurvivedObservationWindow,
    /// Never established, or its end was not observed.
    NotMeasured,
}

impl ConnOutcome {
    /// The name written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::GracefulClose => "graceful-close",
            Self::Severed => "severed",
            Self::SurvivedObservationWindow => "survived-observation-window",
            Self::NotMeasured => "not-measured",
        }
    }
}

/// How the server closed a connection it ended without a break (schema 3.3): whether the wire
/// said so before the end. A bare FIN is what a graceful server sends on an idle keep-alive
/// connection, and also what the kernel sends for a process that died without closing its
/// sockets: the client cannot tell the two apart, so it is never called graceful.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CloseKind {
    /// The server announced the close first: HTTP/1.1 `Connection: close` on the last
    /// response, an HTTP/2 or gRPC GOAWAY with NO_ERROR, a WebSocket close frame (1000, 1001 or
    /// no code).
    Announced,
    /// A FIN with nothing said before it: an idle keep-alive connection (HTTP/1.1, HTTP/2 with
    /// no GOAWAY and nothing open) or a held TCP connection.
    UnannouncedFin,
}

impl CloseKind {
    /// The name written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Announced => "announced",
            Self::UnannouncedFin => "unannounced-fin",
        }
    }

    /// What the client's recorded close result says about the announcement; `None` for a
    /// result that names no close the client knows (nothing is invented for it).
    pub fn of_result(result: &str) -> Option<Self> {
        match result {
            names::CLOSE_CONNECTION_HEADER | names::CLOSE_GOAWAY | names::CLOSE_WS => {
                Some(Self::Announced)
            }
            names::CLOSE_FIN_IDLE | names::CLOSE_FIN => Some(Self::UnannouncedFin),
            _ => None,
        }
    }
}

impl fmt::Display for CloseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of observation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    /// A request on a held HTTP connection.
    Request,
    /// A new-connection prober attempt.
    Dial,
    /// A held connection (TCP and WebSocket arms: HTTP connection failures show as requests).
    Connection,
}

/// Request counts (HTTP arms).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestCounts {
    /// Requests recorded; equals ok + failed.
    pub total: u32,
    /// Requests answered with the expected status.
    pub ok: u32,
    /// Requests that failed.
    pub failed: u32,
    /// Failed requests per mechanism; only mechanisms seen.
    pub failed_by_mechanism: BTreeMap<FailureMechanism, u32>,
    /// Median latency of ok requests, ms; null when none.
    pub latency_p50_ms: Option<f64>,
    /// 99th percentile latency of ok requests (nearest rank), ms; null when none.
    pub latency_p99_ms: Option<f64>,
    /// Largest latency of ok requests, ms; null when none.
    pub latency_max_ms: Option<f64>,
}

/// Connection counts; `total` equals the sum of the four outcomes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectionCounts {
    /// Connections (each reopen is a new one).
    pub total: u32,
    /// Ended by the server without a break, announced or not (the name predates
    /// [`CloseKind`]; the two counts below split it).
    pub graceful_close: u32,
    /// Of `graceful_close`, those the server announced (schema 3.3); absent in reports written
    /// before it, which cannot say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_announced: Option<u32>,
    /// Of `graceful_close`, those ended by a bare FIN (schema 3.3); absent with
    /// `closed_announced`. A close whose result names neither is in neither count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_unannounced_fin: Option<u32>,
    /// Broken.
    pub severed: u32,
    /// Open when the window closed.
    pub survived_observation_window: u32,
    /// Never established or end not observed.
    pub not_measured: u32,
    /// Severed connections per mechanism.
    pub severed_by_mechanism: BTreeMap<FailureMechanism, u32>,
    /// Connections opened after a previous one of the same flow ended.
    pub reopened: u32,
}

/// New-connection prober counts; `total` equals served + failed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DialCounts {
    /// Attempts recorded.
    pub total: u32,
    /// Answered as expected.
    pub served: u32,
    /// Not served.
    pub failed: u32,
    /// Failed attempts per result (refused, reset, timeout, …).
    pub failed_by_result: BTreeMap<FailureMechanism, u32>,
    /// Attempts per endpoint that answered, where the response named it.
    pub served_by_instance: BTreeMap<String, u32>,
}

/// The longest run of failures not interrupted by a success, in time order over requests,
/// dials and (TCP arms) connections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailureWindow {
    /// First failure of the run, ms from the trigger.
    pub start_t_ms: i64,
    /// Last failure of the run, ms from the trigger.
    pub end_t_ms: i64,
    /// end − start, ms (0 for a single failure).
    pub duration_ms: i64,
    /// Failures in the run.
    pub failures: u32,
}

/// One failure, attributed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailureRecord {
    /// When it was recorded, ms from the trigger.
    pub t_ms: i64,
    /// Request, dial or connection.
    pub kind: FailureKind,
    /// Flow (`http-0001`, `dial-000001`, `tcp-0001`).
    pub flow_id: String,
    /// Request number or connection generation; null for dials.
    pub seq: Option<u64>,
    /// How it failed.
    pub mechanism: FailureMechanism,
    /// HTTP status, when a response head arrived.
    pub status: Option<u16>,
    /// Symbolic errno, when a socket error carried one.
    pub errno: Option<String>,
    /// The endpoint that answered, as the response named it; null if unknown.
    pub instance: Option<String>,
    /// The pod it is attributed to; null when unattributed.
    pub pod: Option<String>,
    /// The phase of that pod's termination.
    pub phase: Phase,
    /// HTTP/2 and gRPC (schema 3.0): the RFC 9113 name of the error code of the RST_STREAM
    /// or GOAWAY that failed it (`CANCEL`, `REFUSED_STREAM`, unknown codes in hex); absent
    /// when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2_code: Option<String>,
    /// gRPC (schema 3.0): the call's non-OK status code name (`UNAVAILABLE`, …); absent when
    /// no status arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_code: Option<String>,
    /// Through an ingress (schema 5.2): what the ingress made of the request; absent when it
    /// did not log it, or there is no ingress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<crate::ingress::IngressOutcome>,
    /// Through an ingress (schema 5.2): the upstream `IP:PORT` it chose; absent when it chose
    /// none or did not log the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
}

/// One connection's record (each reopen is its own).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectionRecord {
    /// Flow id.
    pub flow_id: String,
    /// Generation within the flow, from 1.
    pub generation: u64,
    /// How it ended.
    pub outcome: ConnOutcome,
    /// The result as recorded (`connection-close`, `fin-idle`, `fin`, `reset`, `timeout`, …);
    /// null when survived or not observed.
    pub result: Option<String>,
    /// Whether the server announced the close (schema 3.3), from `result`; absent unless the
    /// outcome is graceful-close with a result that says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close: Option<CloseKind>,
    /// When it was established, ms; null if never.
    pub opened_t_ms: Option<i64>,
    /// When it ended, ms; null for survived and not-measured.
    pub ended_t_ms: Option<i64>,
    /// WebSocket (schema 2.0): the status code of the server's close frame; absent when no
    /// close frame arrived (or the arm is not WebSocket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_code: Option<u16>,
    /// WebSocket (schema 2.0): the close frame's reason as sent (possibly empty); absent with
    /// `close_code`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_reason: Option<String>,
    /// HTTP/2 and gRPC (schema 3.0): when the server's first GOAWAY arrived, ms; absent when
    /// none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goaway_t_ms: Option<i64>,
    /// HTTP/2 and gRPC (schema 3.0): the last stream id of the server's last GOAWAY (the
    /// highest stream it may have processed); absent with `goaway_t_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goaway_last_stream_id: Option<u32>,
    /// HTTP/2 and gRPC (schema 3.0): the RFC 9113 name of that GOAWAY's error code
    /// (`NO_ERROR` for a graceful shutdown); absent with `goaway_t_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goaway_code: Option<String>,
}

/// One terminated pod's lane, times in ms from the trigger; null when not observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PodLaneReport {
    /// Pod name.
    pub pod: String,
    /// Deletion requested.
    pub deletion_requested_t_ms: Option<i64>,
    /// The endpoint stopped being ready (or serving).
    pub endpoint_not_ready_t_ms: Option<i64>,
    /// The endpoint left the EndpointSlice.
    pub endpoint_removed_t_ms: Option<i64>,
    /// The container was seen terminated.
    pub exited_t_ms: Option<i64>,
    /// Its exit code, when seen.
    pub exit_code: Option<i32>,
    /// Failures attributed to this pod.
    pub failures: u32,
    /// Whether its endpoint was ever seen ready (schema 3.3): false when its first
    /// observation already said not ready and none said ready later, so it cannot have
    /// "stayed ready"; null when the recording cannot say.
    #[serde(default)]
    pub endpoint_seen_ready: Option<bool>,
    /// Whether its endpoint left the ready set (not ready, not serving, or removed) before its
    /// container exited, on the full-precision times that the whole milliseconds above may tie
    /// (schema 5.0); null when either was not seen, and in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_ready_before_exit: Option<bool>,
}

/// `trial.attach`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachReport {
    /// The protocol spoken.
    pub protocol: AttachProtocol,
    /// Window start, ms from the trigger; null if not recorded.
    pub window_start_t_ms: Option<i64>,
    /// Window end, ms from the trigger; null if not recorded (the client did not finish).
    pub window_end_t_ms: Option<i64>,
    /// Request counts (HTTP, HTTP/2 and gRPC arms); null on TCP and WebSocket arms.
    pub requests: Option<RequestCounts>,
    /// Held connections.
    pub connections: ConnectionCounts,
    /// Prober counts; null when the prober was off or recorded nothing.
    pub dials: Option<DialCounts>,
    /// The longest run of failures; null when nothing failed.
    pub longest_failure_window: Option<FailureWindow>,
    /// Failures per phase (attributed or not).
    pub failures_by_phase: BTreeMap<Phase, u32>,
    /// The pods the trial terminated, by name: the ones judged.
    pub pods: Vec<PodLaneReport>,
    /// Pods whose deletion was requested before the trigger (schema 3.3): already leaving when
    /// the trial began (an earlier rollout still terminating). Shown as context, never judged;
    /// failures they answered are attributed to them and counted, but no finding reads them.
    #[serde(default)]
    pub context_pods: Vec<PodLaneReport>,
    /// Every failure in time order.
    pub failures: Vec<FailureRecord>,
    /// Every connection, by flow and generation.
    pub connection_records: Vec<ConnectionRecord>,
    /// Sentences a reader needs to interpret the numbers.
    pub notes: Vec<String>,
    /// When the Service had no ready endpoint (schema 3.1); absent when the recording cannot
    /// say (its added endpoints do not carry `ready`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_ready_endpoint_windows: Option<Vec<NoReadyWindow>>,
    /// gRPC `--grpc-watch` (schema 3.2): the held `grpc.health.v1.Health/Watch` of each
    /// connection and how it ended; absent when no Watch was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watches: Option<WatchReport>,
    /// Each client node's routing to the terminating pods (schema 4.1); absent when the
    /// prober saw no pod answer, and in reports written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_plane: Option<Vec<super::data_plane::NodeView>>,
    /// Through an ingress, the direct prober's dials to the target Service (schema 5.2):
    /// kube-proxy's path, which `data_plane` is then read from; they are not the arm's dials
    /// and their failures are judged by no threshold (`node-propagation-lag` reads kube-proxy's
    /// lag from them, through `data_plane`). Absent without a direct prober.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_dials: Option<DialCounts>,
    /// Client shards lost before the window closed (schema 5.0): what each left not measured
    /// (its held connections from then on, and its share of requests and dials); absent when
    /// none was lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_clients: Option<Vec<LostClient>>,
    /// Through an ingress (schema 5.2): how many requests it logged and what it made of each
    /// upstream pod's; absent when the recording has no `ingress_access` line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<crate::ingress::summary::IngressReport>,
}

/// A client shard lost under the trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LostClient {
    /// The held connections of its slice, e.g. `http-0003..http-0004`.
    pub slice: String,
    /// Why it was lost (its pod deleted, gone, or its container failed).
    pub why: String,
}

impl AttachReport {
    /// The client nodes' views of kube-proxy's routing, when the direct prober dialled the
    /// target's Service beside an ingress (`data_plane` is then read from those dials).
    pub fn kube_proxy_views(&self) -> Option<&[super::data_plane::NodeView]> {
        self.direct_dials.as_ref().and(self.data_plane.as_deref())
    }

    /// Held connections the client lost: severed ones, and on held arms (TCP, WebSocket) those
    /// that failed to (re)open. Each of those has a failure record of kind connection; an HTTP
    /// arm's severed connection has none (its requests carry the failure), so the larger of the
    /// record count and `connections.severed`.
    pub fn connections_lost(&self) -> u32 {
        let records = self
            .failures
            .iter()
            .filter(|f| f.kind == FailureKind::Connection)
            .count();
        u32::try_from(records)
            .unwrap_or(u32::MAX)
            .max(self.connections.severed)
    }

    /// When terminated pod `pod`'s endpoint turned not ready, if seen.
    pub fn not_ready_of(&self, pod: &str) -> Option<i64> {
        self.pods
            .iter()
            .find(|l| l.pod == pod)
            .and_then(|l| l.endpoint_not_ready_t_ms)
    }
}
