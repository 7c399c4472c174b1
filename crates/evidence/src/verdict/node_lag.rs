//! `node-propagation-lag <= D`, judged as the bound it is: each client node's lag after a
//! terminated pod's endpoint turned not ready is known only between two dials, the last one
//! routed to the pod and the first of a run of later ones other pods answered
//! (`attach::data_plane::run_needed`). A node whose lag is at least
//! more than D misses; the threshold holds only when every node's lag is at most D; a node with
//! no later dial to bound it leaves it not measured.

use crate::attach::AttachReport;

use super::check::{Check, decide, not_measured};

/// The threshold against one trial's data-plane views.
pub(super) fn check(trial_id: &str, a: &AttachReport, max_ms: u64) -> Check {
    let Some(nodes) = a.data_plane.as_deref().filter(|n| !n.is_empty()) else {
        return not_measured(
            trial_id,
            "no dial was answered by a pod, so no node's routing was seen".into(),
        );
    };
    let max = i64::try_from(max_ms).unwrap_or(i64::MAX);
    let name = |n: &crate::attach::data_plane::NodeView| {
        n.node
            .clone()
            .unwrap_or_else(|| "the client's node (not recorded)".into())
    };
    // A lower bound over D is a miss whatever the rest says.
    if let Some((n, least)) = nodes
        .iter()
        .filter_map(|n| n.lag_at_least_ms.map(|l| (n, l)))
        .max_by_key(|(_, l)| *l)
        .filter(|(_, l)| *l > max)
    {
        return decide(
            trial_id,
            false,
            format!(
                "node-propagation-lag at least {least} ms ({} still routed a new connection to a terminating pod that long after its endpoint turned not ready)",
                name(n)
            ),
            least,
            None,
            format_args!("the threshold is ≤ {max_ms} ms"),
        );
    }
    let unbounded: Vec<String> = nodes
        .iter()
        .filter(|n| n.lag_at_most_ms.is_none())
        .map(name)
        .collect();
    if !unbounded.is_empty() {
        return not_measured(
            trial_id,
            format!(
                "{} sent no run of dials after a terminated pod's endpoint turned not ready that other pods answered, long enough to show it had stopped routing there, so its lag has no upper bound and \"node-propagation-lag <= {max_ms}ms\" cannot be shown",
                unbounded.join(", ")
            ),
        );
    }
    let Some((n, most)) = nodes
        .iter()
        .filter_map(|n| n.lag_at_most_ms.map(|m| (n, m)))
        .max_by_key(|(_, m)| *m)
    else {
        return not_measured(trial_id, "no node's lag was bounded".into());
    };
    decide(
        trial_id,
        most <= max,
        format!(
            "node-propagation-lag at most {most} ms (the worst of {} node(s): {})",
            nodes.len(),
            name(n)
        ),
        most,
        None,
        format_args!("the threshold is ≤ {max_ms} ms"),
    )
}
