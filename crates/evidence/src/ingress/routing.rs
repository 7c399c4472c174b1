//! When the ingress stopped sending requests to each pod the trial terminated, read from its
//! own access log: every logged request names the pod it went to, so each is a routing
//! decision of the replica that logged it, made when the client sent it. A controller balances
//! from its own view of the EndpointSlices, one view per replica, so each replica is judged on
//! its own, as a node is for the Service path ([`crate::attach::data_plane`], whose bounds
//! this reuses): its lag after a terminated pod's endpoint turned not ready is at least until
//! the last request it sent the pod, and at most until the first of a run of later requests
//! other pods answered.
//!
//! A request the ingress did not log may have gone anywhere: it breaks every replica's run, and
//! while one sent after a pod turned not ready is unlogged, the last request that pod got is
//! not known (`ingress-last-request-lag` is then not measured, never a pass).

use serde::{Deserialize, Serialize};

use super::IngressOutcome;
use super::join::{Attributed, Joined};
use crate::data_plane::{PodRouting, Routed, Signals, run_needed, view};

/// What one controller replica routed to the terminated pods.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaRouting {
    /// The controller pod whose log had the requests; null when the recording did not name it.
    pub replica: Option<String>,
    /// Its logged requests that a pod answered.
    pub requests_answered: u32,
    /// One entry per pod the trial terminated, in the order of the report's `pods`: the last
    /// request this replica sent it that it answered (`last_served_t_ms`) and the last it sent
    /// it at all (`last_routed_t_ms`), the lags and bounds after its endpoint turned not ready.
    pub pods: Vec<PodRouting>,
    /// The replica's lag after not-ready is at least this: the largest of `pods`'
    /// `lag_at_least_ms`; null when no pod's not-ready was seen.
    pub lag_at_least_ms: Option<i64>,
    /// ... and at most this: the largest of `pods`' `lag_at_most_ms`; null when any pod's is
    /// (no later run of requests other pods answered bounds it: not measured).
    pub lag_at_most_ms: Option<i64>,
}

/// The ingress's routing around the trial's terminations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngressRouting {
    /// Per controller replica, by name (null last).
    pub replicas: Vec<ReplicaRouting>,
    /// Client requests and dials sent at or after the last terminated pod's endpoint turned
    /// not ready that the ingress logged with the pod it sent them to (or with no upstream at
    /// all): the ingress was seen choosing after every edge; null when a terminated pod's
    /// not-ready was not seen.
    pub logged_after_not_ready: Option<u64>,
    /// Those sent at or after the first edge that the log names no pod for (not logged, or an
    /// upstream no endpoint had): each may have gone to a terminated pod; null as above.
    pub not_logged_after_not_ready: Option<u64>,
    /// The last request any replica sent a terminated pod after its endpoint turned not ready,
    /// ms after that edge (0 when none came after it); null when a terminated pod's not-ready
    /// was not seen. Exact only when `not_logged_after_not_ready` is 0, else a lower bound.
    pub last_request_lag_ms: Option<i64>,
}

/// The routing of `joined`'s logged requests to the terminated `pods`; `None` when no logged
/// request was answered by a known pod, since then no routing of the ingress was seen. `rel`
/// turns a time into ms from the trigger.
pub fn routing(
    joined: &Joined,
    pods: &[Signals<'_>],
    rel: impl Fn(i64) -> i64,
) -> Option<IngressRouting> {
    // Each request with whether the ingress logged it: an unlogged one may have gone to any
    // pod through any replica, so it stands in every replica's list, breaking their runs.
    let sent: Vec<(bool, Routed<'_>)> = joined
        .requests
        .iter()
        .filter_map(|r| {
            let at = r.sent_ns?;
            Some(match r.ingress.as_ref() {
                None => (
                    false,
                    Routed {
                        at,
                        node: None,
                        to: None,
                        served: false,
                    },
                ),
                Some(g) => (
                    true,
                    Routed {
                        at,
                        node: g.replica.as_deref(),
                        to: g.pod.as_deref(),
                        served: g.outcome == IngressOutcome::UpstreamStatus,
                    },
                ),
            })
        })
        .collect();
    let mut answering: Vec<&str> = sent
        .iter()
        .filter(|(_, r)| r.served)
        .filter_map(|(_, r)| r.to)
        .collect();
    if answering.is_empty() {
        return None;
    }
    answering.sort_unstable();
    answering.dedup();
    let run = run_needed(answering.len());
    let mut names: Vec<Option<&str>> = sent
        .iter()
        .filter(|(logged, _)| *logged)
        .map(|(_, r)| r.node)
        .collect();
    names.sort_unstable_by_key(|n| (n.is_none(), *n));
    names.dedup();
    let replicas = names
        .into_iter()
        .map(|name| {
            let mine: Vec<Routed<'_>> = sent
                .iter()
                .filter(|(logged, r)| !logged || r.node == name)
                .map(|(_, r)| *r)
                .collect();
            let v = view(name, &mine, pods, run, &rel);
            ReplicaRouting {
                replica: v.node,
                requests_answered: v.dials_served,
                pods: v.pods,
                lag_at_least_ms: v.lag_at_least_ms,
                lag_at_most_ms: v.lag_at_most_ms,
            }
        })
        .collect::<Vec<_>>();
    // Every terminated pod's edge must have been seen: a pod whose endpoint was not seen
    // turning not ready has no lag to read, and leaving it out would pass on the others.
    let edges: Option<Vec<i64>> = pods.iter().map(|p| p.not_ready_ns).collect();
    let edges = edges.filter(|e| !e.is_empty());
    // A request the log names no pod for (unlogged, or an upstream no endpoint had) may have
    // gone to a terminated pod; one with no upstream at all (no route, none available) did not.
    let placed = |r: &&Attributed| {
        r.ingress
            .as_ref()
            .is_some_and(|g| g.upstream.is_none() || g.pod.is_some())
    };
    let sent_from = |edge: i64| move |r: &&Attributed| r.sent_ns.is_some_and(|at| at >= edge);
    // Placed requests after the last pod's edge (the ingress was seen choosing after every
    // edge), and unplaced ones after the first (any of them may have gone to a terminated pod).
    let placed_after = edges.as_ref().and_then(|e| e.iter().max()).map(|&last| {
        joined
            .requests
            .iter()
            .filter(sent_from(last))
            .filter(placed)
            .count() as u64
    });
    let unplaced_after = edges.as_ref().and_then(|e| e.iter().min()).map(|&first| {
        joined
            .requests
            .iter()
            .filter(sent_from(first))
            .filter(|r| !placed(r))
            .count() as u64
    });
    let last_request_lag_ms = edges
        .is_some()
        .then(|| replicas.iter().filter_map(|r| r.lag_at_least_ms).max())
        .flatten();
    Some(IngressRouting {
        last_request_lag_ms,
        logged_after_not_ready: placed_after,
        not_logged_after_not_ready: unplaced_after,
        replicas,
    })
}
