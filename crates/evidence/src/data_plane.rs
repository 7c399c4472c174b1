//! The data plane as each client's node saw it (`trial.attach.data_plane`, schema 4.1): for
//! every pod the trial terminated, how long after its endpoint turned not ready, and after it
//! left the EndpointSlice, that node still routed a new connection to it.
//!
//! A Service is programmed on every node separately (kube-proxy or the CNI), so the lag is a
//! property of the client's node, not of the cluster. The evidence is the new-connection
//! prober's dials that the terminating pod answered (`attach_dial`, result `served`, `instance`
//! the pod): the last one is the latest moment that node is known to have sent a new
//! connection there. It is a lower bound of the node's lag: the node may have gone on routing
//! there between two dials that happened to pick another endpoint.
//!
//! The bounds (schema 5.0) are what a threshold judges: the lag is at least until the last dial
//! routed to the pod (answered by it, or failed inside its own termination and attributed to it
//! by the report), and at most until the first of a run of later dials that other pods answered,
//! long enough that a node still choosing the pod at random would have sent it one with 95 %
//! certainty ([`run_needed`]). A node with no such run has no upper bound: its lag is not
//! measured, never dropped.
//!
//! Lags are signed: a negative one says the last new connection the pod answered came before
//! the control plane's signal, so this node was not seen routing there after it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::event::{EventLine, EventName, Source};
use crate::format::ms;

/// One client's node and what it routed to the terminating pods.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeView {
    /// The node the client ran on (`client_pod_running`'s `node`); null when not recorded (a
    /// client on the orchestrator's host, or a recording from before schema 4.1).
    pub node: Option<String>,
    /// The prober's dials from this node that a pod answered.
    pub dials_served: u32,
    /// One entry per pod the trial terminated, in the order of the report's `pods`.
    pub pods: Vec<PodRouting>,
    /// The largest `lag_after_not_ready_ms` of `pods`; null when none was measured.
    pub max_lag_after_not_ready_ms: Option<i64>,
    /// The largest `lag_after_removed_ms` of `pods`; null when none was measured.
    pub max_lag_after_removed_ms: Option<i64>,
    /// The node's lag after not-ready is at least this (schema 5.0): the largest of `pods`'
    /// `lag_at_least_ms`; null when no pod's not-ready was seen.
    #[serde(default)]
    pub lag_at_least_ms: Option<i64>,
    /// ... and at most this (schema 5.0): the largest of `pods`' `lag_at_most_ms`; null when any
    /// pod's is (no later dial from this node bounds it: not measured).
    #[serde(default)]
    pub lag_at_most_ms: Option<i64>,
}

/// What one node routed to one terminating pod, ms from the trigger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PodRouting {
    /// Pod name.
    pub pod: String,
    /// The last new connection this node sent that the pod answered; null when none did.
    pub last_served_t_ms: Option<i64>,
    /// `last_served_t_ms` minus the lane's `endpoint_not_ready_t_ms`; null when either is.
    pub lag_after_not_ready_ms: Option<i64>,
    /// `last_served_t_ms` minus the lane's `endpoint_removed_t_ms`; null when either is.
    pub lag_after_removed_ms: Option<i64>,
    /// The last dial from this node routed to the pod (schema 5.0): answered by it, or failed
    /// and attributed to it; null when none was.
    #[serde(default)]
    pub last_routed_t_ms: Option<i64>,
    /// The lag after not-ready is at least this (schema 5.0): `last_routed_t_ms` minus the
    /// not-ready time, 0 when that is earlier; null when not-ready was not seen.
    #[serde(default)]
    pub lag_at_least_ms: Option<i64>,
    /// ... and at most this (schema 5.0): the first of a run of later dials from this node that
    /// other pods answered ([`run_needed`] long), minus the not-ready time; null when no such run
    /// came (not bounded).
    #[serde(default)]
    pub lag_at_most_ms: Option<i64>,
    /// How many dials from this node (through an ingress: requests from this replica) were
    /// routed to the pod at or after its endpoint turned not ready (schema 5.2), answered or
    /// failed and attributed to it; null when not-ready was not seen.
    #[serde(default)]
    pub routed_after_not_ready: Option<u32>,
}

impl NodeView {
    /// Each terminated pod this node sent a new connection to, with the time of the last one
    /// and, when that came after the pod's endpoint turned not ready (`not_ready` of a pod's
    /// name), the start of that window: the node's routing lag, as the renderers draw it.
    pub fn last_served<'a>(
        &'a self,
        not_ready: impl Fn(&str) -> Option<i64> + 'a,
    ) -> impl Iterator<Item = (&'a PodRouting, i64, Option<i64>)> + 'a {
        self.pods.iter().filter_map(move |p| {
            let last = p.last_served_t_ms?;
            Some((p, last, not_ready(&p.pod).filter(|t0| *t0 < last)))
        })
    }
}

/// A terminated pod's control-plane signals, ns on the orchestrator's timebase (from its lane).
#[derive(Debug, Clone, Copy)]
pub struct Signals<'a> {
    /// Pod name.
    pub pod: &'a str,
    /// Its endpoint turned not ready (or not serving).
    pub not_ready_ns: Option<i64>,
    /// Its endpoint left the EndpointSlice.
    pub removed_ns: Option<i64>,
}

/// One routing decision as the data plane reads it: a prober dial (when, from which node) or,
/// through an ingress, a request (when, from which controller replica), and the pod it is
/// known to have been routed to (the pod that answered it, or for a failure the pod the report
/// attributes it to; `None`: unknown, which breaks any run of choices elsewhere).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Routed<'a> {
    /// When it was sent, ns on the orchestrator's timebase.
    pub at: i64,
    /// The node (or ingress replica) that routed it.
    pub node: Option<&'a str>,
    /// The pod it went to, when known.
    pub to: Option<&'a str>,
    /// Whether that pod answered it.
    pub served: bool,
}

/// The per-node view of the trial's own terminated `pods`; None when the prober recorded no
/// served dial (it was off, or nothing answered), since then no node's routing was seen.
/// `failed_to` names, by dial id, the pod each failed dial is attributed to.
///
/// One client: every dial is its node's (`client_pod_running`'s `node`). Client shards
/// (`--clients N`): each dial carries its shard's node, and each node a shard ran on is a view,
/// in node-name order.
///
/// Through an ingress with the direct prober on, the views are read from its dials
/// (`attach_direct_dial`, to the Service itself): kube-proxy's routing, beside the ingress's own
/// (`trial.attach.ingress.routing`); a failed direct dial names no pod and breaks any run.
pub fn data_plane(
    lines: &[EventLine],
    pods: &[Signals<'_>],
    failed_to: &BTreeMap<&str, &str>,
    rel: impl Fn(i64) -> i64,
) -> Option<Vec<NodeView>> {
    let direct = lines.iter().any(|l| l.event == EventName::AttachDirectDial);
    let prober = if direct {
        EventName::AttachDirectDial
    } else {
        EventName::AttachDial
    };
    let dials: Vec<Routed<'_>> = lines
        .iter()
        .filter(|l| l.source == Some(Source::Client) && l.event == prober)
        .filter_map(|l| {
            let served = l.result.as_deref() == Some("served");
            let to = if served {
                l.instance.as_deref()
            } else {
                l.flow_id
                    .as_deref()
                    .and_then(|id| failed_to.get(id).copied())
            };
            Some(Routed {
                at: l.at_ns?,
                node: l.node.as_deref(),
                to,
                served,
            })
        })
        .collect();
    if !dials.iter().any(|d| d.served && d.to.is_some()) {
        return None;
    }
    let mut answering: Vec<&str> = dials
        .iter()
        .filter(|d| d.served)
        .filter_map(|d| d.to)
        .collect();
    answering.sort_unstable();
    answering.dedup();
    let run = run_needed(answering.len());
    let client_nodes: Vec<Option<&str>> = lines
        .iter()
        .filter(|l| l.event == EventName::ClientPodRunning)
        .map(|l| l.node.as_deref())
        .collect();
    if dials.iter().all(|d| d.node.is_none()) {
        let node = client_nodes.first().copied().flatten();
        return Some(vec![view(node, &dials, pods, run, &rel)]);
    }
    let mut nodes: Vec<Option<&str>> = client_nodes
        .into_iter()
        .chain(dials.iter().filter(|d| d.served).map(|d| d.node))
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    Some(
        nodes
            .into_iter()
            .map(|node| {
                let mine: Vec<Routed<'_>> =
                    dials.iter().filter(|d| d.node == node).copied().collect();
                view(node, &mine, pods, run, &rel)
            })
            .collect(),
    )
}

/// The dials in a row that other pods must answer before a node is taken to have stopped
/// routing to a pod, when `answering` pods answered the trial's dials: the fewest `k` with
/// ((answering − 1) / answering)^k ≤ [`STOPPED_AT_MOST`], so that a node still choosing the pod
/// at random among them would have sent it one of the `k` with 95 % certainty (kube-proxy's
/// iptables and nftables modes choose at random; round robin would show it sooner). `None`
/// with fewer than two: no dial can go elsewhere.
pub fn run_needed(answering: usize) -> Option<usize> {
    if answering < 2 {
        return None;
    }
    let miss = (answering - 1) as f64 / answering as f64;
    let (mut p, mut k) = (1.0_f64, 0usize);
    while p > STOPPED_AT_MOST && k < MAX_RUN {
        p *= miss;
        k += 1;
    }
    Some(k)
}

/// The chance, at most, that a node still routing to a pod at random shows a run of dials all
/// answered elsewhere ([`run_needed`]).
pub const STOPPED_AT_MOST: f64 = 0.05;

/// The longest run asked for, whatever the number of pods: a bound on the scan.
const MAX_RUN: usize = 200;

/// When this node is taken to have stopped routing to `pod`: the first of `run` dials in a row
/// after `after` that other pods answered; a failed dial, or one answered by no named pod,
/// breaks the run (it may have gone to `pod`). `None` when no such run came.
fn stopped_by(dials: &[Routed<'_>], pod: &str, after: i64, run: Option<usize>) -> Option<i64> {
    let run = run?;
    let mut later: Vec<&Routed<'_>> = dials.iter().filter(|d| d.at > after).collect();
    later.sort_by_key(|d| d.at);
    let (mut start, mut len) = (None, 0usize);
    for d in later {
        if d.served && d.to.is_some_and(|p| p != pod) {
            start = start.or(Some(d.at));
            len += 1;
            if len >= run {
                return start;
            }
        } else {
            (start, len) = (None, 0);
        }
    }
    None
}

/// One node's view: the last dial it sent that each terminated pod answered, the lags, and the
/// bounds of the lag after not-ready: at least until the last dial routed to the pod (answered,
/// or failed and attributed to it), at most until the first of `run` later dials in a row that
/// other pods answered ([`run_needed`]).
pub(crate) fn view(
    node: Option<&str>,
    dials: &[Routed<'_>],
    pods: &[Signals<'_>],
    run: Option<usize>,
    rel: &impl Fn(i64) -> i64,
) -> NodeView {
    let routing: Vec<PodRouting> = pods
        .iter()
        .map(|lane| {
            let to_pod = |d: &&Routed<'_>| d.to == Some(lane.pod);
            let last = dials
                .iter()
                .filter(|d| d.served)
                .filter(to_pod)
                .map(|d| d.at)
                .max();
            let lag = |signal: Option<i64>| Some((last? - signal?) / 1_000_000);
            let routed = dials.iter().filter(to_pod).map(|d| d.at).max();
            let routed_after = lane.not_ready_ns.map(|nr| {
                let n = dials.iter().filter(to_pod).filter(|d| d.at >= nr).count();
                u32::try_from(n).unwrap_or(u32::MAX)
            });
            let (at_least, at_most) = match lane.not_ready_ns {
                None => (None, None),
                Some(nr) => {
                    let after = routed.map_or(nr, |r| r.max(nr));
                    (
                        Some(routed.map_or(0, |r| (r - nr).max(0) / 1_000_000)),
                        stopped_by(dials, lane.pod, after, run).map(|e| (e - nr) / 1_000_000),
                    )
                }
            };
            PodRouting {
                pod: lane.pod.to_string(),
                last_served_t_ms: last.map(rel),
                lag_after_not_ready_ms: lag(lane.not_ready_ns),
                lag_after_removed_ms: lag(lane.removed_ns),
                last_routed_t_ms: routed.map(rel),
                lag_at_least_ms: at_least,
                lag_at_most_ms: at_most,
                routed_after_not_ready: routed_after,
            }
        })
        .collect();
    let served = dials.iter().filter(|d| d.served && d.to.is_some()).count();
    // A bound for the node only when every pod with a not-ready signal has one.
    let bounded: Option<Vec<i64>> = routing
        .iter()
        .filter(|p| p.lag_at_least_ms.is_some())
        .map(|p| p.lag_at_most_ms)
        .collect();
    NodeView {
        node: node.map(str::to_string),
        dials_served: u32::try_from(served).unwrap_or(u32::MAX),
        max_lag_after_not_ready_ms: routing
            .iter()
            .filter_map(|p| p.lag_after_not_ready_ms)
            .max(),
        max_lag_after_removed_ms: routing.iter().filter_map(|p| p.lag_after_removed_ms).max(),
        lag_at_least_ms: routing.iter().filter_map(|p| p.lag_at_least_ms).max(),
        lag_at_most_ms: bounded.and_then(|b| b.into_iter().max()),
        pods: routing,
    }
}

/// The worst lag after not-ready across `nodes`, and the median of the nodes' worst: the
/// summary's figures (None when no node measured one).
pub fn lag_across_nodes<'a>(nodes: impl IntoIterator<Item = &'a NodeView>) -> Option<(i64, i64)> {
    let mut worst: Vec<i64> = nodes
        .into_iter()
        .filter_map(|n| n.max_lag_after_not_ready_ms)
        .collect();
    worst.sort_unstable();
    let max = *worst.last()?;
    Some((worst[(worst.len() - 1) / 2], max))
}

/// The text table's `data plane` row: each node's worst lags.
pub fn line(nodes: Option<&[NodeView]>) -> String {
    let Some(nodes) = nodes else {
        return "not measured (no dial was answered by a pod)".into();
    };
    nodes
        .iter()
        .map(|n| {
            format!(
                "{}: last new connection to a terminating pod {} its endpoint turned not ready, {} it left the EndpointSlice",
                n.node.as_deref().unwrap_or("client node not recorded"),
                relative(n.max_lag_after_not_ready_ms),
                relative(n.max_lag_after_removed_ms),
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The summary's sentence for one arm's trials: the worst node's lag and the median across
/// nodes; None when no trial measured one.
pub fn summary(arm: &str, trials: &[&[NodeView]]) -> Option<String> {
    let nodes: Vec<&NodeView> = trials.iter().flat_map(|t| t.iter()).collect();
    let (p50, max) = lag_across_nodes(nodes.iter().copied())?;
    let worst = nodes
        .iter()
        .filter(|n| n.max_lag_after_not_ready_ms == Some(max))
        .find_map(|n| n.node.as_deref())
        .unwrap_or("a node not recorded");
    Some(format!(
        "Data-plane lag, `{arm}`: a node sent new connections to a terminating pod up to {} its endpoint turned not ready ({worst}; median across {} node views {}; a lower bound, from the dials the pod answered).",
        relative(Some(max)),
        nodes
            .iter()
            .filter(|n| n.max_lag_after_not_ready_ms.is_some())
            .count(),
        relative(Some(p50)),
    ))
}

/// A lag in words, signed by its side of the edge: "30 ms after", "30 ms before" (the last
/// new connection came before the endpoint changed), or "not-measured after".
fn relative(lag: Option<i64>) -> String {
    match lag {
        Some(v) if v < 0 => format!("{} ms before", v.unsigned_abs()),
        v => format!("{} after", ms(v)),
    }
}
