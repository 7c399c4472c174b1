//! The report schema: `report.json` of one trial and `summary.json` of a run.
//!
//! Field names and null-versus-absent rules follow the Go drainwatch v0.1 where the two share
//! a field. `schema_version` is `MAJOR.MINOR`: adding an optional field bumps MINOR, changing or
//! removing one bumps MAJOR (documented in `schema/README.md`). The hand-written JSON Schema in
//! `schema/report.schema.json` is the contract; tests validate every produced report against it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::attach::AttachReport;
use super::classify::{Mechanism, Outcome};
use super::clock::{ClientDomainClock, SourceClock};
use super::environment::Environment;
use super::event::{EventName, Source};
use super::finding::Finding;
use super::flow::Proto;
use super::plan::{DrainBehavior, TrialConfig};
use super::settings::TerminationSettings;
use super::trigger::Trigger;

/// The schema version of reports written by this build.
///
/// History: 1.0 the first Rust schema; 1.1 adds `trial.config.kubernetes` (image, replicas, client
/// placement, preStop sleep, readiness period, PDB) and `trial.clock.client` (how a client pod's
/// relayed times were placed), both absent when they do not apply; 1.2 adds
/// `trial.config.attach` and `trial.attach` (what an unmodified workload's clients saw), absent
/// on probe trials, and `trial.config.clients` (sharded local clients), absent when one; 1.3
/// adds `environment.cluster` (API server and context), absent off Kubernetes, and
/// `environment.run_id` (the run's id and ownership mark), absent in older reports; 1.4 lets
/// `trial.id` be `trial-NNN-retry-R` (a policy arm's retried attempt); 2.0 adds the `websocket`
/// attach protocol (flow ids `ws-NNNN`), the failure mechanisms `ws-close-abnormal`,
/// `ws-no-close-frame`, `ws-pong-missing`, `tls-alert` and `tls-error` (new values of closed
/// enums: MAJOR by schema/README.md's rule), a connection record's `close_code` /
/// `close_reason`, absent unless a WebSocket close frame ended it, and
/// `trial.config.attach.tls`, absent for plain TCP; 3.0 adds the `http2` and `grpc` attach
/// protocols, their failure mechanisms (GOAWAY, RST_STREAM, gRPC status codes), optional
/// `h2_code` / `grpc_code` on failures and `goaway_*` on connection records (schema/README.md);
/// 3.1 adds `trial.termination_settings`
/// (the workload's grace period, preStop hooks, readiness probes, rollout strategy and PDBs as
/// recorded at the start of the trial), absent off Kubernetes and in replays of recordings
/// that lack it, and `findings` (what went wrong, why, what to change: `evidence::findings`
/// of the report without its findings), absent in reports written before it; 3.2 adds
/// `trial.attach.watches` (`--grpc-watch`); 3.3 adds `trial.attach.context_pods` (pods already
/// terminating before the trigger, never judged) and a pod lane's `endpoint_seen_ready`; 4.0 adds
/// the finding id `sigterm-not-handled` (a new value of a closed enum: MAJOR), a connection
/// record's optional `close` (`announced` / `unannounced-fin`) and the optional counts
/// `closed_announced` / `closed_unannounced_fin`, absent in older reports (schema/README.md);
/// 4.1 adds `trial.attach.data_plane` (each client node's routing to the terminating pods);
/// 4.2 adds `config.kubernetes.shard_placement` (`--clients N` as client pods) and the event
/// field `node` on a shard's `attach_dial` lines (a data-plane view per node); 4.3 lets a lost
/// shard leave only its slice not-measured (event field `shard`) and adds
/// `trial.clock.client_domains` (client shards on several kernels, each placed by its own clock);
/// 5.0 adds the status `not-terminated` and the finding `not-terminated` (a trial whose trigger
/// terminated no pod of the target: never judged), new values of closed enums, so MAJOR.
/// 5.1 puts the pod and readiness of a Kubernetes row in fields of their own (`pod`, `ready`);
/// 5.2 adds `config.attach.host_header` (`--host-header`, for a client that dials an ingress).
pub const SCHEMA_VERSION: &str = "5.2";

/// One trial's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// `MAJOR.MINOR` of this schema.
    pub schema_version: String,
    /// drainwatch version that recorded the trial.
    pub drainwatch_version: String,
    /// Commit of that build.
    pub git_commit: String,
    /// What the trial ran on.
    pub environment: Environment,
    /// The trial.
    pub trial: Trial,
    /// What went wrong, why and what to change, most severe first (schema 3.1): computed from
    /// this report without its findings, so a replay yields the same; absent in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findings: Option<Vec<Finding>>,
}

/// How far a trial got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrialStatus {
    /// The window closed normally.
    Completed,
    /// Interrupted; the evidence so far is kept.
    Aborted,
    /// The Eviction API refused (429) because of a PodDisruptionBudget.
    BlockedByPdb,
    /// The window closed, but the trigger terminated no pod of the target in it (schema 5.0):
    /// nothing about shutdown was measured, so nothing is judged; `status_detail` says why.
    NotTerminated,
}

impl TrialStatus {
    /// The name written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Aborted => "aborted",
            Self::BlockedByPdb => "blocked-by-pdb",
            Self::NotTerminated => "not-terminated",
        }
    }
}

/// One trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trial {
    /// `trial-NNN` or `client-manual`.
    pub id: String,
    /// How far it got.
    pub status: TrialStatus,
    /// Why it stopped early; null when completed.
    pub status_detail: Option<String>,
    /// What ran.
    pub config: TrialConfig,
    /// Merged events, ms relative to the trigger.
    pub timeline: Vec<TimelineEntry>,
    /// One record per flow, sorted by id.
    pub flows: Vec<FlowReport>,
    /// Counts and intervals.
    pub summary: Summary,
    /// How each source's times were mapped.
    pub clock: ClockReport,
    /// How to read `t_ms` across sources.
    pub clock_note: String,
    /// How probe times were mapped.
    pub probe_clock_offset_note: String,
    /// What the workload's clients saw (attach trials, schema 1.2); absent on probe trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach: Option<AttachReport>,
    /// The workload's termination settings as recorded at the start of the trial (schema
    /// 3.1); absent off Kubernetes and when the recording has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_settings: Option<TerminationSettings>,
}

/// What a trial measured, which decides what its renderers show: drainwatch's probe's flows,
/// or the clients of a workload drainwatch attached to (which has no probe, no drain behaviour
/// and no SIGTERM it can see).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrialKind {
    /// drainwatch deployed its probe and held flows to it.
    Probe,
    /// drainwatch attached to the user's workload (`trial.config.attach`).
    Attach,
}

impl Trial {
    /// The trial's kind: attach when its plan dialled a workload, even if it ended before
    /// its attach section was filled.
    pub fn kind(&self) -> TrialKind {
        if self.config.attach.is_some() || self.attach.is_some() {
            TrialKind::Attach
        } else {
            TrialKind::Probe
        }
    }
}

/// One timeline row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelineEntry {
    /// Milliseconds relative to the trigger, truncated toward zero; may be negative.
    pub t_ms: i64,
    /// Who saw it.
    pub source: Source,
    /// Event name.
    pub event: EventName,
    /// Flow, when the event is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_id: Option<String>,
    /// Detail text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// True when the time was mapped from another clock with an offset that is not exact.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approximate: bool,
    /// The pod a Kubernetes row is about (schema 5.1; the line's `instance`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// An EndpointSlice row's endpoint readiness (schema 5.1; the line's `ready`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
}

impl TimelineEntry {
    /// The pod of an EndpointSlice row: its `pod`, or in a report before 5.1 the pod its
    /// detail names (`Pod/NAME in SLICE …`).
    pub fn endpoint_pod(&self) -> Option<&str> {
        self.pod.as_deref().or_else(|| {
            self.detail
                .as_deref()
                .and_then(|d| d.strip_prefix("Pod/"))
                .and_then(|d| d.split_once(' '))
                .map(|(name, _)| name)
        })
    }

    /// An EndpointSlice row's readiness: its `ready`, or in a report before 5.1 the
    /// `ready=` its detail says.
    pub fn endpoint_ready(&self) -> Option<bool> {
        self.ready.or_else(|| {
            let d = self.detail.as_deref()?;
            if d.contains(" ready=true") {
                Some(true)
            } else if d.contains(" ready=false") {
                Some(false)
            } else {
                None
            }
        })
    }
}

/// Both ends of a re-homed flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RehomeReport {
    /// The instance that answered first.
    pub from_instance: String,
    /// The instance that answered later.
    pub to_instance: String,
    /// Last reply from the original instance, ms; null if it never answered with a time.
    pub last_original_reply_t_ms: Option<i64>,
    /// First reply from the new instance, ms.
    pub first_new_reply_t_ms: i64,
}

/// One flow's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowReport {
    /// `tcp-0001`.
    pub id: String,
    /// Transport.
    pub proto: Proto,
    /// The closed outcome.
    pub outcome: Outcome,
    /// What the wire showed.
    pub mechanism: Mechanism,
    /// When the dial succeeded; null if it never did.
    pub connected_t_ms: Option<i64>,
    /// When the flow ended; null for survived and not-measured.
    pub t_terminal_ms: Option<i64>,
    /// TCP only; omitted when no heartbeat arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat_seq: Option<u64>,
    /// UDP only; omitted when no ack arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_answered_seq: Option<u64>,
    /// Last reply from the original instance; null if none.
    pub last_data_t_ms: Option<i64>,
    /// First instance that answered; null if none.
    pub instance: Option<String>,
    /// Both ends of a re-homing; null otherwise.
    pub rehomed: Option<RehomeReport>,
    /// Human detail; omitted if empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Outcome counts of one protocol; `total` always equals the sum of the buckets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    /// All flows.
    pub total: u32,
    /// drained-clean-close.
    pub drained: u32,
    /// severed.
    pub severed: u32,
    /// read-timeout.
    pub read_timeout: u32,
    /// survived-observation-window.
    pub survived_window: u32,
    /// not-measured.
    pub not_measured: u32,
}

impl Counts {
    /// Counts one outcome.
    pub fn add(&mut self, o: Outcome) {
        self.total += 1;
        match o {
            Outcome::DrainedCleanClose => self.drained += 1,
            Outcome::Severed => self.severed += 1,
            Outcome::ReadTimeout => self.read_timeout += 1,
            Outcome::SurvivedObservationWindow => self.survived_window += 1,
            Outcome::NotMeasured => self.not_measured += 1,
        }
    }

    /// The count of one outcome.
    pub fn get(&self, o: Outcome) -> u32 {
        match o {
            Outcome::DrainedCleanClose => self.drained,
            Outcome::Severed => self.severed,
            Outcome::ReadTimeout => self.read_timeout,
            Outcome::SurvivedObservationWindow => self.survived_window,
            Outcome::NotMeasured => self.not_measured,
        }
    }
}

/// Counts and intervals of one trial. Every interval is null when either end was not observed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// TCP outcome counts.
    pub tcp: Counts,
    /// UDP outcome counts.
    pub udp: Counts,
    /// Flows per mechanism, per protocol.
    pub mechanisms: BTreeMap<Proto, BTreeMap<Mechanism, u32>>,
    /// Trigger to the probe's SIGTERM receipt.
    pub trigger_to_sigterm_ms: Option<i64>,
    /// SIGTERM to the endpoint's ready:false.
    pub sigterm_to_ready_false_ms: Option<i64>,
    /// SIGTERM to the last flow's terminal event.
    pub sigterm_to_last_flow_terminal_ms: Option<i64>,
    /// Trigger to the endpoint's removal.
    pub trigger_to_endpoint_removed_ms: Option<i64>,
    /// Trigger to the container's termination.
    pub trigger_to_container_terminated_ms: Option<i64>,
    /// Exit code of the terminated container or process.
    pub container_exit_code: Option<i32>,
    /// Sentences a reader needs to interpret the numbers.
    pub notes: Vec<String>,
}

/// How each source's times were mapped onto the orchestrator's clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockReport {
    /// The orchestrator's CLOCK_MONOTONIC; `client` shares it when in-process.
    pub timebase: String,
    /// The probe's clock.
    pub probe: SourceClock,
    /// The client's clock when the client ran in another process (a pod) and its times were
    /// relayed over its log; absent when the client ran inside the orchestrator (schema 1.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<SourceClock>,
    /// Each clock domain (emitter kernel) of the relayed client lines, first-seen first, when
    /// client shards ran on more than one kernel; absent with one (schema 4.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_domains: Option<Vec<ClientDomainClock>>,
}

/// One trial's line in `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrialSummary {
    /// `trial-NNN`.
    pub trial_id: String,
    /// Path of its report, relative to the summary.
    pub report_path: String,
    /// How far it got.
    pub status: TrialStatus,
    /// Behaviour; null when the workload is not the probe.
    pub drain_behavior: Option<DrainBehavior>,
    /// Trigger.
    pub trigger: Trigger,
    /// TCP counts.
    pub tcp: Counts,
    /// UDP counts.
    pub udp: Counts,
    /// Mechanisms.
    pub mechanisms: BTreeMap<Proto, BTreeMap<Mechanism, u32>>,
    /// Exit code.
    pub container_exit_code: Option<i32>,
    /// Trigger to SIGTERM.
    pub trigger_to_sigterm_ms: Option<i64>,
    /// SIGTERM to ready:false.
    pub sigterm_to_ready_false_ms: Option<i64>,
    /// SIGTERM to the last flow end.
    pub sigterm_to_last_flow_terminal_ms: Option<i64>,
}

/// `summary.json`: every trial of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSummary {
    /// Schema version.
    pub schema_version: String,
    /// drainwatch version.
    pub drainwatch_version: String,
    /// Commit.
    pub git_commit: String,
    /// Environment of the run.
    pub environment: Environment,
    /// Trials in order.
    pub trials: Vec<TrialSummary>,
    /// Where trials disagree with each other, one sentence each; `[]` when they agree.
    pub disagreements: Vec<String>,
}

impl TrialSummary {
    /// The summary line of a report stored at `report_path`.
    pub fn of(report: &Report, report_path: String) -> Self {
        let s = &report.trial.summary;
        Self {
            trial_id: report.trial.id.clone(),
            report_path,
            status: report.trial.status,
            drain_behavior: report.trial.config.drain_behavior,
            trigger: report.trial.config.trigger,
            tcp: s.tcp,
            udp: s.udp,
            mechanisms: s.mechanisms.clone(),
            container_exit_code: s.container_exit_code,
            trigger_to_sigterm_ms: s.trigger_to_sigterm_ms,
            sigterm_to_ready_false_ms: s.sigterm_to_ready_false_ms,
            sigterm_to_last_flow_terminal_ms: s.sigterm_to_last_flow_terminal_ms,
        }
    }
}

/// Compares every trial with every other on outcome counts, mechanisms and exit code; each
/// difference is one sentence naming the trials, so no single odd trial colours the rest.
pub fn disagreements(trials: &[TrialSummary]) -> Vec<String> {
    let mut out = Vec::new();
    let keyed = |t: &TrialSummary| {
        format!(
            "tcp {}/{}/{}/{}/{} udp {}/{}/{}/{}/{} exit {} mechanisms {}",
            t.tcp.drained,
            t.tcp.severed,
            t.tcp.read_timeout,
            t.tcp.survived_window,
            t.tcp.not_measured,
            t.udp.drained,
            t.udp.severed,
            t.udp.read_timeout,
            t.udp.survived_window,
            t.udp.not_measured,
            t.container_exit_code
                .map_or_else(|| "not-measured".to_string(), |c| c.to_string()),
            serde_json::to_string(&t.mechanisms).unwrap_or_default(),
        )
    };
    let mut groups: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for t in trials {
        groups.entry(keyed(t)).or_default().push(&t.trial_id);
    }
    if groups.len() > 1 {
        for (key, ids) in groups {
            out.push(format!("{}: {key}", ids.join(", ")));
        }
    }
    out
}
