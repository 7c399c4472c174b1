//! The registry of event names: every name a producer writes and the core reads.
//!
//! Producers build lines from these variants, so a misspelt name is a compile error rather
//! than a flow silently misclassified. A line read back (a replay, a Go v0.1 probe, a newer
//! build) may carry a name this build does not know: it parses as [`EventName::Unknown`] and
//! is written back byte for byte, so reports of old and new recordings keep their bytes.

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A name this build does not know, kept as read. Only [`EventName::parse`] makes one, so a
/// producer cannot write an unregistered name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UnknownName(Box<str>);

impl UnknownName {
    /// The name as read.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

macro_rules! registry {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, )*) => {
        /// An event name.
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventName {
            $( $(#[$doc])* $variant, )*
            /// A name this build does not know (another version's, or a harness bug).
            Unknown(UnknownName),
        }

        impl EventName {
            /// Every known name, in registry order.
            pub const ALL: &'static [EventName] = &[$( Self::$variant, )*];

            /// The name written on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $name, )*
                    Self::Unknown(u) => u.as_str(),
                }
            }

            /// The known name `s`, if it is one.
            pub fn known(s: &str) -> Option<Self> {
                match s {
                    $( $name => Some(Self::$variant), )*
                    _ => None,
                }
            }
        }
    };
}

registry! {
    // The trial loop (source `orchestrator`).
    /// First line of events.jsonl; carries the trial header.
    TrialStarted = "trial_started",
    /// The trial stopped before its observation completed.
    TrialAborted = "trial_aborted",
    /// Last line of a streamed events.jsonl: teardown is done and every line of the trial is
    /// above it. A streamed recording without it was cut off (the orchestrator killed, the
    /// disk full) and replays as aborted.
    TrialEnded = "trial_ended",
    /// A PodDisruptionBudget refused the eviction for the whole trial.
    TrialBlockedByPdb = "trial_blocked_by_pdb",
    /// The preflight checks passed.
    PreflightPassed = "preflight_passed",
    /// The workload under test was applied.
    WorkloadApplied = "workload_applied",
    /// The workload under test was deleted at the end.
    WorkloadDeleted = "workload_deleted",
    /// The local workload process was killed.
    WorkloadKilled = "workload_killed",
    /// The user's workload was restored after the trial.
    WorkloadRestored = "workload_restored",
    /// Restoring the user's workload failed.
    WorkloadRestoreFailed = "workload_restore_failed",
    /// The target address was resolved.
    TargetResolved = "target_resolved",
    /// The workload's termination settings were recorded (grace period, preStop, readiness,
    /// rollout strategy, PDBs); the line carries them in `termination_settings`.
    TerminationSettingsRecorded = "termination_settings_recorded",
    /// The pod under test was chosen.
    PodUnderTestChosen = "pod_under_test_chosen",
    /// Every endpoint of the attached Service was ready and had settled (after how long).
    TargetEndpointsSettled = "target_endpoints_settled",
    /// The flows settled before the trigger.
    SettleComplete = "settle_complete",
    /// The trigger was issued: time zero of the report.
    TriggerIssued = "trigger_issued",
    /// The trigger's API call returned.
    TriggerApiReturned = "trigger_api_returned",
    /// The observation window closed.
    ObservationWindowClosed = "observation_window_closed",
    /// Every flow reached a terminal.
    AllFlowsTerminal = "all_flows_terminal",
    /// SIGKILL was sent at the end of the grace period (local platform).
    SigkillSent = "sigkill_sent",
    /// The node for the client pod was chosen.
    ClientNodeChosen = "client_node_chosen",
    /// The client pod was created.
    ClientPodCreated = "client_pod_created",
    /// The client pod is running.
    ClientPodRunning = "client_pod_running",
    /// Deleting the client pod failed.
    ClientPodDeleteFailed = "client_pod_delete_failed",
    /// The client ended before the orchestrator closed the observation window (its pod was
    /// deleted, its container ended, or its pod left the API): what its flows did after that
    /// was not observed.
    ClientLost = "client_lost",
    /// A client child process started.
    ClientProcessStarted = "client_process_started",
    /// A client child process exited.
    ClientProcessExited = "client_process_exited",
    /// A client child process was killed.
    ClientProcessKilled = "client_process_killed",
    /// The disruption settled (every pod replaced).
    DisruptionSettled = "disruption_settled",
    /// The disruption did not settle in time.
    DisruptionNotSettled = "disruption_not_settled",
    /// The node was cordoned.
    NodeCordoned = "node_cordoned",
    /// A pod was evicted.
    PodEvicted = "pod_evicted",
    /// An eviction was refused (PodDisruptionBudget).
    EvictionRefused = "eviction_refused",
    /// An eviction failed.
    EvictionFailed = "eviction_failed",
    /// Evictions were retried until the deadline and given up.
    EvictionGaveUp = "eviction_gave_up",
    /// Every eviction of a drain was done.
    DrainEvictionsDone = "drain_evictions_done",
    /// The pod-deletion-cost annotation was set.
    PodDeletionCostSet = "pod_deletion_cost_set",
    /// The NodePort answered.
    NodeportReachable = "nodeport_reachable",
    /// A rollout made progress.
    RolloutProgress = "rollout_progress",
    /// A rollout completed.
    RolloutComplete = "rollout_complete",
    /// The rollout watch broke.
    RolloutWatchInterrupted = "rollout_watch_interrupted",
    /// A pod log stream opened.
    LogStreamOpened = "log_stream_opened",
    /// A pod log stream broke.
    LogStreamInterrupted = "log_stream_interrupted",
    /// A pod log stream resumed.
    LogStreamResumed = "log_stream_resumed",
    /// A pod log stream failed.
    LogStreamError = "log_stream_error",
    /// A pod log stream was given up.
    LogStreamAbandoned = "log_stream_abandoned",

    // Kubernetes watches (source `k8s`).
    /// First sight of a pod.
    PodObserved = "pod_observed",
    /// Another pod of the trial became Ready.
    OtherPodReady = "other_pod_ready",
    /// The pod's deletionTimestamp was set.
    PodDeletionTimestampSet = "pod_deletion_timestamp_set",
    /// The pod's Ready condition became True.
    PodReadyTrue = "pod_ready_true",
    /// The pod's Ready condition became False.
    PodReadyFalse = "pod_ready_false",
    /// The container terminated (also written by the local platform).
    ContainerTerminated = "container_terminated",
    /// The container restarted.
    ContainerRestarted = "container_restarted",
    /// The scheduler could not place the pod (PodScheduled False, reason Unschedulable); the
    /// detail carries the scheduler's message.
    PodUnschedulable = "pod_unschedulable",
    /// The container is waiting.
    ContainerWaiting = "container_waiting",
    /// The pod object left the API.
    PodObjectDeleted = "pod_object_deleted",
    /// First sight of an EndpointSlice.
    EndpointsliceObserved = "endpointslice_observed",
    /// An endpoint was added.
    EndpointsliceEndpointAdded = "endpointslice_endpoint_added",
    /// An endpoint was removed.
    EndpointsliceEndpointRemoved = "endpointslice_endpoint_removed",
    /// An endpoint's ready became false.
    EndpointsliceReadyFalse = "endpointslice_ready_false",
    /// An endpoint's ready became true.
    EndpointsliceReadyTrue = "endpointslice_ready_true",
    /// An endpoint's serving became true.
    EndpointsliceServingTrue = "endpointslice_serving_true",
    /// An endpoint's serving became false.
    EndpointsliceServingFalse = "endpointslice_serving_false",
    /// An endpoint's terminating became true.
    EndpointsliceTerminatingTrue = "endpointslice_terminating_true",
    /// Another pod's endpoint became ready.
    OtherEndpointReady = "other_endpoint_ready",
    /// A watch broke.
    WatchInterrupted = "watch_interrupted",
    /// A watch resumed.
    WatchResumed = "watch_resumed",

    // The probe (source `probe`).
    /// The probe started.
    ProbeStarted = "probe_started",
    /// The probe is listening.
    Listening = "listening",
    /// The probe's file and backlog limits.
    Limits = "limits",
    /// The probe's UDP counters.
    UdpStats = "udp_stats",
    /// The probe received SIGTERM.
    SigtermReceived = "sigterm_received",
    /// The probe ignores SIGTERM.
    SigtermIgnored = "sigterm_ignored",
    /// SIGUSR1 asked to close one connection but the probe has none to close.
    BenchCloseOneUnavailable = "bench_close_one_unavailable",
    /// SIGUSR1 asked to close one connection but none was open.
    BenchCloseOneNone = "bench_close_one_none",
    /// `/readyz` now answers 503.
    ReadyzNow503 = "readyz_now_503",
    /// The probe stopped accepting.
    StoppedAccepting = "stopped_accepting",
    /// The probe started draining.
    DrainStarted = "drain_started",
    /// The drain completed.
    DrainComplete = "drain_complete",
    /// The drain hit its deadline.
    DrainDeadlineReached = "drain_deadline_reached",
    /// The probe is exiting.
    Exiting = "exiting",
    /// The probe failed.
    Fatal = "fatal",
    /// A TCP connection was accepted.
    TcpAccept = "tcp_accept",
    /// An accept failed.
    TcpAcceptFailed = "tcp_accept_failed",
    /// A heartbeat was sent.
    TcpHeartbeat = "tcp_heartbeat",
    /// A connection was left open for the exit to close.
    TcpFlowOpenAtExit = "tcp_flow_open_at_exit",
    /// A connection was closed.
    TcpFlowClosed = "tcp_flow_closed",
    /// A connection was reset on purpose (SO_LINGER 0).
    TcpFlowResetForced = "tcp_flow_reset_forced",
    /// A forced reset failed.
    TcpFlowResetFailed = "tcp_flow_reset_failed",
    /// First datagram of a UDP flow.
    UdpFlowFirstSeen = "udp_flow_first_seen",
    /// Lines on a TCP flow that were not pings (counted; logged at counts 1, 10, 100, …).
    TcpInputUnrecognised = "tcp_input_unrecognised",
    /// A line on a TCP flow longer than the probe reads as a line (counted like the above).
    TcpInputLineTooLong = "tcp_input_line_too_long",
    /// A TCP connection refused at the probe's connection cap (counted like the above).
    TcpConnectionRefused = "tcp_connection_refused",
    /// A UDP datagram that was not a ping, empty ones included (counted like the above).
    UdpDatagramUnrecognised = "udp_datagram_unrecognised",
    /// A UDP datagram larger than a ping can be (counted like the above).
    UdpDatagramOversized = "udp_datagram_oversized",
    /// A new UDP peer past the probe's peer table cap: acked, not counted as a flow.
    UdpPeerTableFull = "udp_peer_table_full",
    /// A `/readyz` or `/healthz` request not complete by its deadline (slowloris).
    HealthRequestTimeout = "health_request_timeout",
    /// A `/readyz` or `/healthz` request head larger than the probe reads.
    HealthRequestTooLarge = "health_request_too_large",
    /// A health connection refused at the health connection cap.
    HealthConnectionRefused = "health_connection_refused",
    /// Every hostile-input count at SIGTERM, one line per kind seen.
    ProbeInputTotals = "probe_input_totals",
    /// Event lines the probe could not queue (its queue was full): how many, in place.
    ProbeEventsDropped = "probe_events_dropped",
    /// A probe line that was not JSON (written by the relay for source `probe`).
    UnparseableLine = "unparseable_line",

    // The client's probe flows (source `client`).
    /// The dial succeeded.
    FlowConnected = "flow_connected",
    /// The dial gave up.
    FlowDialFailed = "flow_dial_failed",
    /// A heartbeat or ack.
    FlowData = "flow_data",
    /// The server's drain announcement.
    FlowBye = "flow_bye",
    /// A silence longer than the gap threshold.
    FlowGap = "flow_gap",
    /// A line the client did not understand.
    FlowUnrecognised = "flow_unrecognised",
    /// The server closed its side.
    FlowEof = "flow_eof",
    /// A socket error.
    FlowSocketError = "flow_socket_error",
    /// Too many unanswered datagrams.
    FlowSilence = "flow_silence",
    /// No bytes for the whole flow timeout.
    FlowReadTimeout = "flow_read_timeout",
    /// drainwatch closed the flow at the end of the window.
    FlowObservationEnd = "flow_observation_end",
    /// A clock-offset sample (not an observation).
    FlowClockSample = "flow_clock_sample",
    /// A datagram sent (Go v0.1 client; not an observation).
    FlowSent = "flow_sent",

    // The attach client (source `client`); `evidence::attach` says what each means.
    /// The observation window opens.
    AttachWindowStarted = "attach_window_started",
    /// The observation window closes.
    AttachWindowEnded = "attach_window_ended",
    /// A flow's first connection is established.
    AttachConnOpened = "attach_conn_opened",
    /// A flow's next connection is established.
    AttachConnReopened = "attach_conn_reopened",
    /// A dial of a held connection failed.
    AttachConnOpenFailed = "attach_conn_open_failed",
    /// The server ended a connection cleanly.
    AttachConnClosedGraceful = "attach_conn_closed_graceful",
    /// A connection broke.
    AttachConnSevered = "attach_conn_severed",
    /// A connection was open when the window closed.
    AttachConnObservationEnd = "attach_conn_observation_end",
    /// One HTTP request.
    AttachRequest = "attach_request",
    /// One new-connection prober attempt.
    AttachDial = "attach_dial",
    /// Through an ingress, one attempt of the direct prober (schema 5.2): a new connection to
    /// the target's Service itself, through kube-proxy, beside the dials through the ingress.
    AttachDirectDial = "attach_direct_dial",
    /// An HTTP/2 connection's GOAWAY from the server, at its arrival.
    AttachGoaway = "attach_goaway",
    /// gRPC `--grpc-watch`: the connection's held `grpc.health.v1.Health/Watch` was answered
    /// (response headers without a status), on stream `stream_id`.
    AttachGrpcWatchOpened = "attach_grpc_watch_opened",
    /// gRPC `--grpc-watch`: a serving status the Watch received (`result`).
    AttachGrpcWatchStatus = "attach_grpc_watch_status",
    /// gRPC `--grpc-watch`: the Watch ended: with a gRPC status (`result` `status`,
    /// `grpc_code`), or cut (`result` the failure mechanism).
    AttachGrpcWatchEnded = "attach_grpc_watch_ended",
    /// gRPC `--grpc-watch`: the Watch was still open when the window closed.
    AttachGrpcWatchObservationEnd = "attach_grpc_watch_observation_end",

    // Read from an ingress controller's access log (source `ingress`).
    /// One request as the ingress logged it: `flow_id` and `seq` the request's
    /// `X-Drainwatch-Request` id, `status` what the ingress sent, `result` what it made of
    /// the request (`evidence::ingress::IngressOutcome`), `upstream` the `IP:PORT` it chose,
    /// `detail` the routing rule that matched, `replica` the controller pod whose log had it.
    IngressAccess = "ingress_access",
    /// One attempt the ingress made upstream for a request, when its log has a line per
    /// attempt (Envoy's upstream log): `flow_id` and `seq` the request's id, `upstream` the
    /// `IP:PORT` tried, `status` what it answered (absent: nothing), `result` what became of the
    /// attempt, `replica` the controller pod. A request's attempts are in the order logged; each
    /// before its last was retried unseen.
    IngressAttempt = "ingress_attempt",
    /// One scrape of a controller replica's request counters (`replica`; `seq` the scrape's
    /// number: 1 before the trial's first request, 2 after its last, 3 once the access log went
    /// quiet after that; the last two must agree): a line without `service` marks the scrape
    /// itself, one with `service`, `status` and `count` is the requests (each attempt, retries
    /// too) that service had answered with that status until then.
    IngressMetric = "ingress_metric",
    /// One server of a controller replica's endpoint view that changed since its previous poll
    /// (`replica`, `service`, `upstream` the server's `IP:PORT`, `result` one of `added`,
    /// `fenced`, `unfenced`, `removed`; `evidence::ingress::view`).
    IngressView = "ingress_view",
    /// A poll of a controller replica's endpoint view that was read (`replica`), after the
    /// `ingress_view` lines of what it changed.
    IngressViewPolled = "ingress_view_polled",

    // Written by the core itself, on the report's timeline only.
    /// A flow's terminal, as a timeline entry.
    FlowTerminal = "flow_terminal",
}

impl EventName {
    /// The name `s`: a known one, or kept as read.
    pub fn parse(s: &str) -> Self {
        Self::known(s).unwrap_or_else(|| Self::Unknown(UnknownName(s.into())))
    }

    /// Whether this build knows the name.
    pub fn is_known(&self) -> bool {
        !matches!(self, Self::Unknown(_))
    }
}

impl FromStr for EventName {
    type Err = Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self::parse(s))
    }
}

impl fmt::Display for EventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EventName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EventName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(Self::parse(&s))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_known_name_round_trips_through_its_string() {
        assert_eq!(EventName::ALL.len(), 137);
        for n in EventName::ALL {
            assert_eq!(&EventName::parse(n.as_str()), n);
            assert!(n.is_known());
            let json = serde_json::to_string(n).unwrap();
            assert_eq!(json, format!("\"{}\"", n.as_str()));
            assert_eq!(&serde_json::from_str::<EventName>(&json).unwrap(), n);
        }
    }

    #[test]
    fn names_are_distinct_snake_case() {
        let names: BTreeSet<&str> = EventName::ALL.iter().map(EventName::as_str).collect();
        assert_eq!(names.len(), EventName::ALL.len());
        for n in names {
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{n}"
            );
        }
    }

    #[test]
    fn an_unknown_name_is_kept_as_read() {
        let n = EventName::parse("flow_from_the_future");
        assert!(!n.is_known());
        assert_eq!(n.as_str(), "flow_from_the_future");
        assert_eq!(
            serde_json::to_string(&n).unwrap(),
            "\"flow_from_the_future\""
        );
    }
}
