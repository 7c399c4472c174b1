//! The types of a finding (`report.json`'s `findings`, schema 3.1): apart from
//! `evidence::findings`, which computes them from a report, so that the report can hold them
//! without the two modules importing each other.

use serde::{Deserialize, Serialize};
use std::fmt;

use super::event::EventName;

/// What a finding is about; a closed set with stable kebab-case names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingId {
    /// New connections or requests failed on a pod that was terminating: traffic still reached
    /// it after it stopped serving.
    EndpointLag,
    /// The kubelet's SIGKILL at the end of the grace period ended connections still open.
    SigkillAtGrace,
    /// Established TCP connections were reset rather than closed.
    RstInsteadOfClose,
    /// Requests on held keep-alive connections were cut (truncated or reset) in flight.
    KeepaliveClosedInFlight,
    /// UDP flows were re-homed onto another pod.
    UdpRehomed,
    /// The endpoint stayed ready until the container exited.
    ReadinessNotFailed,
    /// A PodDisruptionBudget refused the eviction.
    PdbBlockedEviction,
    /// During a rollout no endpoint of the Service was ready for a while.
    RolloutNoReadyEndpoint,
    /// A container's exit code shows SIGTERM reached a process with no handler (143, or 2 from
    /// a Go program as PID 1) (schema 4.0).
    SigtermNotHandled,
    /// The trigger terminated no pod of the target: nothing about shutdown was measured
    /// (schema 5.0).
    NotTerminated,
    /// Through an ingress: it answered requests 503 itself, no server of the service to choose
    /// (every endpoint terminating or gone) (schema 5.2).
    IngressNoAvailableServer,
    /// Through an ingress: it answered requests 404 itself, the route gone with the service's
    /// last endpoint (schema 5.2).
    IngressNoRoute,
    /// Through an ingress: clients timed out while it still waited on a pod that had exited
    /// (schema 5.2).
    IngressUpstreamHang,
    /// Through an ingress: it answered an upstream error (Traefik's 502, Envoy's 503) for
    /// requests sent to a pod that was not terminating (context: the upstream keep-alive race,
    /// or the pod's own errors) (schema 5.2).
    IngressErrorOnServingPod,
    /// Through an ingress: its counters or its log's attempt counts show failed attempts it
    /// retried, unseen by the clients (schema 5.2).
    IngressHiddenRetry,
    /// Nothing failed.
    NothingWrong,
}

impl FindingId {
    /// Every id.
    pub const ALL: [Self; 16] = [
        Self::EndpointLag,
        Self::SigkillAtGrace,
        Self::RstInsteadOfClose,
        Self::KeepaliveClosedInFlight,
        Self::UdpRehomed,
        Self::ReadinessNotFailed,
        Self::PdbBlockedEviction,
        Self::RolloutNoReadyEndpoint,
        Self::SigtermNotHandled,
        Self::NotTerminated,
        Self::IngressNoAvailableServer,
        Self::IngressNoRoute,
        Self::IngressUpstreamHang,
        Self::IngressErrorOnServingPod,
        Self::IngressHiddenRetry,
        Self::NothingWrong,
    ];

    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EndpointLag => "endpoint-lag",
            Self::SigkillAtGrace => "sigkill-at-grace",
            Self::RstInsteadOfClose => "rst-instead-of-close",
            Self::KeepaliveClosedInFlight => "keepalive-closed-in-flight",
            Self::UdpRehomed => "udp-rehomed",
            Self::ReadinessNotFailed => "readiness-not-failed",
            Self::PdbBlockedEviction => "pdb-blocked-eviction",
            Self::RolloutNoReadyEndpoint => "rollout-no-ready-endpoint",
            Self::SigtermNotHandled => "sigterm-not-handled",
            Self::NotTerminated => "not-terminated",
            Self::IngressNoAvailableServer => "ingress-no-available-server",
            Self::IngressNoRoute => "ingress-no-route",
            Self::IngressUpstreamHang => "ingress-upstream-hang",
            Self::IngressErrorOnServingPod => "ingress-error-on-serving-pod",
            Self::IngressHiddenRetry => "ingress-hidden-retry",
            Self::NothingWrong => "nothing-wrong",
        }
    }
}

impl fmt::Display for FindingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How bad a finding is; ordered from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// Worth knowing; nothing broke.
    Info,
    /// A client-visible change a client may or may not tolerate.
    Warning,
    /// Clients saw failures.
    Failure,
}

impl Severity {
    /// The name written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Failure => "failure",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The unit of a recommended value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unit {
    /// Seconds.
    #[serde(rename = "s")]
    Seconds,
    /// Milliseconds.
    #[serde(rename = "ms")]
    Milliseconds,
    /// A count of pods (replicas).
    #[serde(rename = "pods")]
    Pods,
}

impl Unit {
    /// The symbol.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Seconds => "s",
            Self::Milliseconds => "ms",
            Self::Pods => "pods",
        }
    }
}

/// A number derived from the measurement, with the rule that derived it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Derived {
    /// The value.
    pub value: u64,
    /// Its unit.
    pub unit: Unit,
    /// How it was derived from the measured numbers, in one sentence.
    pub rule: String,
}

/// What to change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recommendation {
    /// The change, in one sentence.
    pub text: String,
    /// The number the change needs, when the measurement gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived: Option<Derived>,
}

/// A reference into the report a finding rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum EvidenceRef {
    /// `trial.timeline[index]`, whose event is `event`.
    TimelineRow {
        /// Row index.
        index: usize,
        /// Its event name.
        event: EventName,
    },
    /// `trial.flows[]` by id.
    Flow {
        /// Flow id.
        id: String,
    },
    /// `trial.attach.failures[index]`.
    AttachFailure {
        /// Index into the failure list.
        index: usize,
    },
    /// `trial.attach.pods[]` by name.
    Pod {
        /// Pod name.
        pod: String,
    },
    /// A count or interval, by its JSON path in the report.
    Field {
        /// Dotted path, e.g. `trial.summary.container_exit_code`.
        path: String,
    },
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    /// What it is about.
    pub id: FindingId,
    /// How bad.
    pub severity: Severity,
    /// What broke, with the measured numbers, in one sentence.
    pub title: String,
    /// Why, citing measured intervals, in one sentence.
    pub why: String,
    /// What to change; null when the finding needs no change.
    pub recommendation: Option<Recommendation>,
    /// What it rests on, by reference.
    pub evidence: Vec<EvidenceRef>,
}
