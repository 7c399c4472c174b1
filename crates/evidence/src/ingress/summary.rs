//! The report's view of an ingress (`trial.attach.ingress`, schema 5.2): how many of the
//! client's requests the ingress logged, and for each upstream pod what it made of them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::IngressOutcome;
use super::join::Joined;
use super::retries::HiddenRetries;
use super::routing::IngressRouting;
use super::view::ReplicaView;

/// What the ingress in front of the pods made of the client's requests and dials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngressReport {
    /// Client requests and dials the ingress logged.
    pub logged: u64,
    /// Client requests and dials it did not log: not measured.
    pub not_logged: u64,
    /// Logged ids no client request has (the log and the client disagree).
    pub unclaimed: u64,
    /// Logged ids of the request a flow had in flight when the client's window closed, which
    /// the client abandons unrecorded; neither joined nor a disagreement.
    pub abandoned: u64,
    /// Ids the ingress logged more than once (the first is joined).
    pub duplicates: u64,
    /// Per upstream: the pod at its address (null when no endpoint had it, or the ingress
    /// chose none) and how many logged requests had each outcome; by pod name, null last.
    pub upstreams: Vec<UpstreamCounts>,
    /// When the ingress stopped sending requests to each pod the trial terminated, per
    /// controller replica; null when no logged request was answered by a known pod.
    #[serde(default)]
    pub routing: Option<IngressRouting>,
    /// Failed attempts the ingress retried, hidden from the clients, from its request
    /// counters; null when the controller's counters were not scraped.
    #[serde(default)]
    pub hidden_retries: Option<HiddenRetries>,
    /// When each controller replica's own endpoint view (its API, polled) stopped listing each
    /// terminated pod as choosable; absent when its API was not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<Vec<ReplicaView>>,
}

/// The outcomes of one upstream pod's requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamCounts {
    /// The pod; null: no endpoint had the address, or no upstream was chosen.
    pub pod: Option<String>,
    /// Requests by outcome, only the outcomes that occurred.
    pub outcomes: BTreeMap<IngressOutcome, u64>,
}

impl UpstreamCounts {
    /// Its outcomes in words: "90 upstream-status, 8 upstream-error".
    pub fn outcomes_phrase(&self) -> String {
        self.outcomes
            .iter()
            .map(|(o, n)| format!("{n} {}", o.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The summary of `joined`, with the ingress's `routing` around the terminations and the
/// retries it hid.
pub fn summary(
    joined: &Joined,
    routing: Option<IngressRouting>,
    hidden_retries: Option<HiddenRetries>,
    view: Option<Vec<ReplicaView>>,
) -> IngressReport {
    let mut upstreams: Vec<UpstreamCounts> = joined
        .outcomes_by_pod()
        .into_iter()
        .map(|(pod, outcomes)| UpstreamCounts { pod, outcomes })
        .collect();
    // BTreeMap puts None first; the unnamed row reads better last.
    upstreams.sort_by_key(|u| (u.pod.is_none(), u.pod.clone()));
    IngressReport {
        logged: joined.requests.len() as u64 - joined.not_logged,
        not_logged: joined.not_logged,
        unclaimed: joined.unclaimed,
        abandoned: joined.abandoned,
        duplicates: joined.duplicates,
        upstreams,
        routing,
        hidden_retries,
        view,
    }
}
