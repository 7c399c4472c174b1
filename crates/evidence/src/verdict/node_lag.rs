//! `node-propagation-lag <= D`, judged as the bound it is: each client node's lag after a
//! terminated pod's endpoint turned not ready is known only between two dials, the last one
//! routed to the pod and the first of a run of later ones other pods answered
//! (`data_plane::run_needed`). A node whose lag is at least
//! more than D misses; the threshold holds only when every node's lag is at most D; a node with
//! no later dial to bound it leaves it not measured.

use crate::attach::AttachReport;

use super::bounded::{View, Words, judge};
use super::check::{Check, not_measured};

/// The threshold against one trial's data-plane views.
pub(super) fn check(trial_id: &str, a: &AttachReport, max_ms: u64) -> Check {
    let Some(nodes) = a.data_plane.as_deref().filter(|n| !n.is_empty()) else {
        return not_measured(
            trial_id,
            "no dial was answered by a pod, so no node's routing was seen".into(),
        );
    };
    let views: Vec<View> = nodes
        .iter()
        .map(|n| View {
            name: n
                .node
                .clone()
                .unwrap_or_else(|| "the client's node (not recorded)".into()),
            at_least: n.lag_at_least_ms,
            at_most: n.lag_at_most_ms,
        })
        .collect();
    let words = Words {
        measure: "node-propagation-lag",
        sent: "routed a new connection",
        run_of: "dials",
        stopped: "routing there",
        view: "node",
    };
    judge(trial_id, &views, max_ms, &words)
}
