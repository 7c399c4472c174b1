//! The data plane as each client's node saw it (`trial.attach.data_plane`, schema 4.1): for
//! every pod the trial terminated, how long after its endpoint turned not ready, and after it
//! left the EndpointSlice, that node still routed a new connection to it.
//!
//! A Service is programmed on every node separately (kube-proxy or the CNI), so the lag is a
//! property of the client's node, not of the cluster. The evidence is the new-connection
//! prober's dials that the terminating pod answered (`attach_dial`, result `served`, `instance`
//! the pod): the last one is the latest moment that node is known to have sent a new
//! connection there. It is a lower bound of the node's lag: the node may have gone on routing
//! there between two dials that happened to pick another endpoint. Failed dials are left out:
//! nothing says which endpoint a refused or timed-out dial was sent to.
//!
//! Lags are signed: a negative one says the last new connection the pod answered came before
//! the control plane's signal, so this node was not seen routing there after it.

use serde::{Deserialize, Serialize};

use crate::evidence::event::{EventLine, EventName, Source};
use crate::evidence::format::ms;

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

/// The per-node view of the trial's own terminated `pods`; None when the prober recorded no
/// served dial (it was off, or nothing answered), since then no node's routing was seen.
///
/// One client: every dial is its node's (`client_pod_running`'s `node`). Client shards
/// (`--clients N`): each dial carries its shard's node, and each node a shard ran on is a view,
/// in node-name order.
pub fn data_plane(
    lines: &[EventLine],
    pods: &[Signals<'_>],
    rel: impl Fn(i64) -> i64,
) -> Option<Vec<NodeView>> {
    let served: Vec<(&str, i64, Option<&str>)> = lines
        .iter()
        .filter(|l| {
            l.source == Some(Source::Client)
                && l.event == EventName::AttachDial
                && l.result.as_deref() == Some("served")
        })
        .filter_map(|l| Some((l.instance.as_deref()?, l.at_ns?, l.node.as_deref())))
        .collect();
    if served.is_empty() {
        return None;
    }
    let client_nodes: Vec<Option<&str>> = lines
        .iter()
        .filter(|l| l.event == EventName::ClientPodRunning)
        .map(|l| l.node.as_deref())
        .collect();
    if served.iter().all(|&(_, _, node)| node.is_none()) {
        let node = client_nodes.first().copied().flatten();
        let dials: Vec<(&str, i64)> = served.iter().map(|&(p, at, _)| (p, at)).collect();
        return Some(vec![view(node, &dials, pods, &rel)]);
    }
    let mut nodes: Vec<Option<&str>> = client_nodes
        .into_iter()
        .chain(served.iter().map(|&(_, _, n)| n))
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    Some(
        nodes
            .into_iter()
            .map(|node| {
                let dials: Vec<(&str, i64)> = served
                    .iter()
                    .filter(|&&(_, _, n)| n == node)
                    .map(|&(p, at, _)| (p, at))
                    .collect();
                view(node, &dials, pods, &rel)
            })
            .collect(),
    )
}

/// One node's view: the last dial it sent that each terminated pod answered, and the lags.
fn view(
    node: Option<&str>,
    served: &[(&str, i64)],
    pods: &[Signals<'_>],
    rel: &impl Fn(i64) -> i64,
) -> NodeView {
    let routing: Vec<PodRouting> = pods
        .iter()
        .map(|lane| {
            let last = served
                .iter()
                .filter(|(pod, _)| *pod == lane.pod)
                .map(|&(_, at)| at)
                .max();
            let lag = |signal: Option<i64>| Some((last? - signal?) / 1_000_000);
            PodRouting {
                pod: lane.pod.to_string(),
                last_served_t_ms: last.map(rel),
                lag_after_not_ready_ms: lag(lane.not_ready_ns),
                lag_after_removed_ms: lag(lane.removed_ns),
            }
        })
        .collect();
    NodeView {
        node: node.map(str::to_string),
        dials_served: u32::try_from(served.len()).unwrap_or(u32::MAX),
        max_lag_after_not_ready_ms: routing
            .iter()
            .filter_map(|p| p.lag_after_not_ready_ms)
            .max(),
        max_lag_after_removed_ms: routing.iter().filter_map(|p| p.lag_after_removed_ms).max(),
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
                "{}: last new connection to a terminating pod {} after its endpoint turned not ready, {} after it left the EndpointSlice",
                n.node.as_deref().unwrap_or("client node not recorded"),
                ms(n.max_lag_after_not_ready_ms),
                ms(n.max_lag_after_removed_ms),
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
        "Data-plane lag, `{arm}`: a node sent new connections to a terminating pod up to {max} ms after its endpoint turned not ready ({worst}; median across {} node views {p50} ms; a lower bound, from the dials the pod answered).",
        nodes
            .iter()
            .filter(|n| n.max_lag_after_not_ready_ms.is_some())
            .count()
    ))
}
