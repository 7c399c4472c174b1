//! A lane per client node of `trial.attach.data_plane`: when that node last sent a new
//! connection to each terminating pod, and the window from the pod's endpoint turning not
//! ready to then (the node's routing lag, a lower bound). The lanes of two nodes read one
//! above the other show which node's data plane lagged.

use super::super::esc;
use super::{Kind, Lane, Mark, Seg, Shape};
use crate::attach::section::AttachReport;

/// One lane per node view, in the view's (node-name) order; none without a data-plane view.
pub(super) fn lanes(a: &AttachReport) -> Vec<Lane> {
    let Some(views) = &a.data_plane else {
        return Vec::new();
    };
    views
        .iter()
        .map(|v| {
            let node = v.node.as_deref().unwrap_or("unknown node");
            let mut lane = Lane::new(
                Kind::Node,
                format!(" data-node=\"{}\"", esc(node)),
                // The lower bound from the dials the pod answered; the threshold judges
                // lag_at_least_ms / lag_at_most_ms (verdict::node_lag).
                format!(
                    "{node}: lag {} after not ready",
                    v.max_lag_after_not_ready_ms
                        .map_or_else(|| "not measured".to_string(), signed)
                ),
            );
            for (p, last, window) in v.last_served(|pod| a.not_ready_of(pod)) {
                if let Some(t0) = window {
                    lane.segs.push(Seg {
                        t0,
                        t1: last,
                        class: "node-lag".into(),
                    });
                }
                let lag = |what: &str, l: Option<i64>| {
                    l.map_or_else(
                        || format!("lag not measured after {what}"),
                        |l| format!("{} after {what}", signed(l)),
                    )
                };
                lane.marks.push(Mark {
                    t: last,
                    shape: Shape::Diamond,
                    attrs: format!("class=\"node-last-served\" data-pod=\"{}\"", esc(&p.pod)),
                    title: format!(
                        "{node} last sent {} a new connection at {last} ms: {}, {}",
                        p.pod,
                        lag("its endpoint turned not ready", p.lag_after_not_ready_ms),
                        lag("it left the EndpointSlice", p.lag_after_removed_ms),
                    ),
                    dy: 0.0,
                    bound: None,
                });
            }
            lane
        })
        .collect()
}

/// `+120 ms`, `-40 ms`: a lag's sign says which came first.
fn signed(l: i64) -> String {
    if l >= 0 {
        format!("+{l} ms")
    } else {
        format!("{l} ms")
    }
}
