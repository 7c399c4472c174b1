//! A section per client node of an attach trial's data-plane view (`trial.attach.data_plane`):
//! for each terminated pod, the window from its endpoint turning not ready to the last new
//! connection that node sent it (a bar: the node's routing lag), or that last connection alone
//! when it came first. Two nodes' sections one above the other show which lagged.

use super::{Ids, label};
use crate::report::Trial;

/// Node sections drawn at most; the report has every node.
const MAX_NODE_LANES: usize = 6;

/// One section per node view (in node-name order), with a row per terminated pod it sent a
/// new connection to; none without a data-plane view.
pub(super) fn node_sections(t: &Trial, span: i64, ids: &mut Ids) -> Vec<(String, Vec<String>)> {
    let Some(a) = &t.attach else {
        return Vec::new();
    };
    let Some(views) = &a.data_plane else {
        return Vec::new();
    };
    let min_width = (span / 100).max(1);
    views
        .iter()
        .take(MAX_NODE_LANES)
        .map(|v| {
            let mut rows = Vec::new();
            for (p, last, window) in v.last_served(|pod| a.not_ready_of(pod)) {
                let pod = label(&p.pod);
                match window {
                    Some(t0) => rows.push(format!(
                        "    {pod} routed {} ms after not ready :crit, {}, {}, {}ms",
                        last - t0,
                        ids.next(),
                        t0.max(0),
                        (last.max(0) - t0.max(0)).max(min_width)
                    )),
                    None => rows.push(format!(
                        "    last new conn. to {pod} at {last} ms :milestone, {}, {}, 0ms",
                        ids.next(),
                        last.max(0)
                    )),
                }
            }
            let node = v.node.as_deref().unwrap_or("unknown");
            (format!("client node {node}"), rows)
        })
        .filter(|(_, rows)| !rows.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::gantt;
    use crate::attach::data_plane::{NodeView, PodRouting};
    use crate::test_fixtures::report as fixture;

    #[test]
    fn each_client_node_is_a_section_with_its_routing_lag_per_pod() {
        let mut r = fixture("rollout");
        let a = r.trial.attach.as_mut().unwrap();
        let (pod, not_ready) = (
            a.pods[0].pod.clone(),
            a.pods[0].endpoint_not_ready_t_ms.unwrap(),
        );
        let view = |node: &str, last: i64| NodeView {
            node: Some(node.into()),
            dials_served: 10,
            pods: vec![PodRouting {
                pod: pod.clone(),
                last_served_t_ms: Some(last),
                lag_after_not_ready_ms: Some(last - not_ready),
                lag_after_removed_ms: None,
                last_routed_t_ms: None,
                lag_at_least_ms: None,
                lag_at_most_ms: None,
                routed_after_not_ready: None,
            }],
            max_lag_after_not_ready_ms: Some(last - not_ready),
            max_lag_after_removed_ms: None,
            lag_at_least_ms: None,
            lag_at_most_ms: None,
        };
        assert!(
            !gantt("t", &r).contains("section client node"),
            "no view, no node section"
        );
        let a = r.trial.attach.as_mut().unwrap();
        a.data_plane = Some(vec![
            view("node1", not_ready - 30),
            view("node2", not_ready + 1200),
        ]);
        let g = gantt("t", &r);
        let n1 = g.find("    section client node node1\n").expect(&g);
        let n2 = g.find("    section client node node2\n").expect(&g);
        let last_pod = g.rfind("    section pod ").unwrap();
        assert!(
            last_pod < n1 && n1 < n2,
            "after the pods, in node order: {g}"
        );
        assert!(
            g.contains(&format!(
                "    last new conn. to {pod} at {} ms :milestone,",
                not_ready - 30
            )),
            "{g}"
        );
        assert!(
            g.contains(&format!("    {pod} routed 1200 ms after not ready :crit, ")),
            "{g}"
        );
        assert!(g.contains(&format!(", {not_ready}, 1200ms\n")), "{g}");
    }
}
