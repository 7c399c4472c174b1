//! The data plane as the client's node saw it: pure, from hand-written lines of a rollout of
//! two pods, with the dials each pod answered around its endpoint's not-ready and removal.

use super::data_plane::{NodeView, Signals, data_plane, lag_across_nodes, line, summary};
use super::lanes::lanes;
use crate::event::{EventLine, EventName, Source};

const MS: i64 = 1_000_000;

fn k8s(event: EventName, pod: &str, t_ms: i64) -> EventLine {
    let mut l = EventLine::new(Source::K8s, event, t_ms * MS);
    l.instance = Some(pod.into());
    l
}

fn dial(result: &str, pod: Option<&str>, t_ms: i64) -> EventLine {
    let mut l = EventLine::new(Source::Client, EventName::AttachDial, t_ms * MS);
    l.result = Some(result.into());
    l.instance = pod.map(str::to_string);
    l
}

fn running_on(node: Option<&str>) -> EventLine {
    let mut l = EventLine::new(Source::Orchestrator, EventName::ClientPodRunning, -500 * MS);
    l.node = node.map(str::to_string);
    l
}

/// web-a: not ready at 100 ms, removed at 400 ms, answered dials until 700 ms (a lagging
/// node). web-b: not ready at 1000 ms, removed at 1300 ms, last answered at 900 ms (before
/// its signal). Failed dials at 800 ms and 1500 ms name no pod and count for nothing.
fn rollout() -> Vec<EventLine> {
    vec![
        running_on(Some("node1")),
        k8s(EventName::PodDeletionTimestampSet, "web-a", 0),
        k8s(EventName::EndpointsliceReadyFalse, "web-a", 100),
        k8s(EventName::EndpointsliceEndpointRemoved, "web-a", 400),
        k8s(EventName::PodDeletionTimestampSet, "web-b", 900),
        k8s(EventName::EndpointsliceReadyFalse, "web-b", 1000),
        k8s(EventName::EndpointsliceEndpointRemoved, "web-b", 1300),
        dial("served", Some("web-a"), 50),
        dial("served", Some("web-b"), 60),
        dial("served", Some("web-a"), 700),
        dial("refused", None, 800),
        dial("served", Some("web-b"), 900),
        dial("served", Some("web-c"), 1200),
        dial("timeout", None, 1500),
    ]
}

fn signals(lines: &[EventLine]) -> Vec<(String, Option<i64>, Option<i64>)> {
    lanes(lines)
        .into_iter()
        .map(|l| (l.pod, l.not_ready_ns, l.removed_ns))
        .collect()
}

fn plane(lines: &[EventLine]) -> Option<Vec<NodeView>> {
    let s = signals(lines);
    let pods: Vec<Signals<'_>> = s
        .iter()
        .map(|(pod, not_ready_ns, removed_ns)| Signals {
            pod,
            not_ready_ns: *not_ready_ns,
            removed_ns: *removed_ns,
        })
        .collect();
    data_plane(lines, &pods, &std::collections::BTreeMap::new(), |at| {
        at / MS
    })
}

fn view(lines: &[EventLine]) -> Vec<NodeView> {
    plane(lines).expect("a served dial")
}

#[test]
fn each_pod_gets_its_last_served_dial_and_the_lags_after_its_signals() {
    let v = view(&rollout());
    assert_eq!(v.len(), 1, "one client, one node");
    let n = &v[0];
    assert_eq!(n.node.as_deref(), Some("node1"));
    assert_eq!(n.dials_served, 5, "failed dials are not counted");
    assert_eq!(n.pods.len(), 2);
    let a = &n.pods[0];
    assert_eq!(a.pod, "web-a");
    assert_eq!(a.last_served_t_ms, Some(700));
    assert_eq!(a.lag_after_not_ready_ms, Some(600));
    assert_eq!(a.lag_after_removed_ms, Some(300));
    // web-b's last answered dial came before its signals: negative, not clamped to zero.
    let b = &n.pods[1];
    assert_eq!(b.pod, "web-b");
    assert_eq!(b.last_served_t_ms, Some(900));
    assert_eq!(b.lag_after_not_ready_ms, Some(-100));
    assert_eq!(b.lag_after_removed_ms, Some(-400));
    assert_eq!(n.max_lag_after_not_ready_ms, Some(600));
    assert_eq!(n.max_lag_after_removed_ms, Some(300));
    assert_eq!(lag_across_nodes(&v), Some((600, 600)));
}

#[test]
fn what_was_not_seen_stays_null() {
    // No served dial at all: no node's routing was seen.
    let lines: Vec<EventLine> = rollout()
        .into_iter()
        .filter(|l| l.result.as_deref() != Some("served"))
        .collect();
    assert_eq!(plane(&lines), None);

    // web-b never answered, web-a's removal was not seen, the client's node not recorded.
    let lines: Vec<EventLine> = rollout()
        .into_iter()
        .filter(|l| l.instance.as_deref() != Some("web-b") || l.source != Some(Source::Client))
        .filter(|l| {
            !(l.event == EventName::EndpointsliceEndpointRemoved
                && l.instance.as_deref() == Some("web-a"))
        })
        .map(|l| {
            if l.event == EventName::ClientPodRunning {
                running_on(None)
            } else {
                l
            }
        })
        .collect();
    let v = view(&lines);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].node, None);
    assert_eq!(v[0].pods.len(), 2);
    assert_eq!(v[0].pods[0].lag_after_not_ready_ms, Some(600));
    assert_eq!(v[0].pods[0].lag_after_removed_ms, None);
    let b = &v[0].pods[1];
    assert_eq!(
        (
            b.last_served_t_ms,
            b.lag_after_not_ready_ms,
            b.lag_after_removed_ms
        ),
        (None, None, None)
    );
    assert_eq!(v[0].max_lag_after_removed_ms, None);
}

#[test]
fn across_nodes_the_median_and_the_worst_of_each_nodes_worst() {
    let node = |worst: Option<i64>| NodeView {
        node: None,
        dials_served: 1,
        pods: vec![],
        max_lag_after_not_ready_ms: worst,
        max_lag_after_removed_ms: None,
        lag_at_least_ms: None,
        lag_at_most_ms: None,
    };
    assert_eq!(lag_across_nodes(&[] as &[NodeView]), None);
    assert_eq!(lag_across_nodes(&[node(None)]), None);
    let three = [
        node(Some(900)),
        node(None),
        node(Some(-50)),
        node(Some(200)),
    ];
    assert_eq!(lag_across_nodes(&three), Some((200, 900)));
    // An even count takes the lower middle: no value that no node measured.
    let two = [node(Some(100)), node(Some(1000))];
    assert_eq!(lag_across_nodes(&two), Some((100, 1000)));
}

#[test]
fn a_last_connection_before_the_edge_is_said_before_not_as_a_negative_after() {
    let node = |worst: Option<i64>, removed: Option<i64>| NodeView {
        node: Some("w1".into()),
        dials_served: 1,
        pods: vec![],
        max_lag_after_not_ready_ms: worst,
        max_lag_after_removed_ms: removed,
        lag_at_least_ms: None,
        lag_at_most_ms: None,
    };
    let early = [node(Some(-30), Some(-180))];
    let s = summary("rollout", &[&early[..]]).unwrap();
    assert!(s.contains("up to 30 ms before its endpoint turned not ready (w1; median across 1 node views 30 ms before;"), "{s}");
    assert!(!s.contains("-30"), "{s}");
    assert_eq!(
        line(Some(&early[..])),
        "w1: last new connection to a terminating pod 30 ms before its endpoint turned not ready, 180 ms before it left the EndpointSlice"
    );
    let late = [node(Some(900), None)];
    assert!(
        summary("rollout", &[&late[..]])
            .unwrap()
            .contains("up to 900 ms after its endpoint")
    );
    assert!(line(Some(&late[..])).ends_with(
        "900 ms after its endpoint turned not ready, not-measured after it left the EndpointSlice"
    ));
}

#[test]
fn client_shards_give_a_view_per_node_from_the_dials_each_node_sent() {
    let on = |mut l: EventLine, node: &str| {
        l.node = Some(node.into());
        l
    };
    let mut lines = vec![
        running_on(Some("node2")),
        running_on(Some("node1")),
        k8s(EventName::PodDeletionTimestampSet, "web-a", 0),
        k8s(EventName::EndpointsliceReadyFalse, "web-a", 100),
        k8s(EventName::EndpointsliceEndpointRemoved, "web-a", 400),
    ];
    // node1 programs the removal late (last answered dial at 2100 ms), node2 promptly (300).
    lines.extend([
        on(dial("served", Some("web-a"), 50), "node1"),
        on(dial("served", Some("web-a"), 2100), "node1"),
        on(dial("refused", None, 2200), "node1"),
        on(dial("served", Some("web-a"), 300), "node2"),
        on(dial("served", Some("web-b"), 900), "node2"),
    ]);
    let v = view(&lines);
    assert_eq!(v.len(), 2, "one view per shard's node");
    assert_eq!(
        v.iter()
            .map(|n| (n.node.as_deref(), n.dials_served))
            .collect::<Vec<_>>(),
        vec![(Some("node1"), 2), (Some("node2"), 2)],
        "in node-name order, each counting its own served dials"
    );
    assert_eq!(v[0].pods[0].lag_after_not_ready_ms, Some(2000));
    assert_eq!(v[0].pods[0].lag_after_removed_ms, Some(1700));
    assert_eq!(v[1].pods[0].lag_after_not_ready_ms, Some(200));
    assert_eq!(v[1].pods[0].lag_after_removed_ms, Some(-100));
    assert_eq!(lag_across_nodes(&v), Some((200, 2000)));

    // A shard's node that no terminating pod answered is still a view, with nothing measured.
    lines.retain(|l| l.node.as_deref() != Some("node2") || l.source != Some(Source::Client));
    let v = view(&lines);
    assert_eq!(v.len(), 2);
    assert_eq!(
        (
            v[1].node.as_deref(),
            v[1].dials_served,
            v[1].max_lag_after_not_ready_ms
        ),
        (Some("node2"), 0, None)
    );
}

#[test]
fn a_run_long_enough_to_show_a_random_choice_stopped() {
    use super::data_plane::run_needed;
    assert_eq!(run_needed(0), None);
    assert_eq!(run_needed(1), None, "one pod: no dial can go elsewhere");
    // 0.5^5 = 3.1 % ≤ 5 % < 0.5^4; (2/3)^8 = 3.9 %; (3/4)^11 = 4.2 %.
    assert_eq!(run_needed(2), Some(5));
    assert_eq!(run_needed(3), Some(8));
    assert_eq!(run_needed(4), Some(11));
}

#[test]
fn beside_an_ingress_the_direct_dials_are_the_data_plane_and_not_the_arms_dials() {
    use super::fold::direct_dials;
    // The arm's dials went through the ingress, whose one replica kept choosing web-a until
    // 1,500 ms; the direct prober's dials went to the Service, which stopped at 700 ms.
    let mut lines = rollout();
    let direct: Vec<EventLine> = lines
        .iter()
        .filter(|l| l.event == EventName::AttachDial)
        .map(|l| {
            let mut d = l.clone();
            d.event = EventName::AttachDirectDial;
            d
        })
        .collect();
    assert_eq!(direct.len(), 7);
    lines.push(dial("served", Some("web-a"), 1_500));
    let through = view(&lines);
    assert_eq!(through[0].pods[0].last_served_t_ms, Some(1_500));
    lines.extend(direct);
    let v = view(&lines);
    assert_eq!(v[0].dials_served, 5, "the direct dials only");
    assert_eq!(v[0].pods[0].last_served_t_ms, Some(700));
    let counts = direct_dials(&lines).expect("direct dials");
    assert_eq!((counts.total, counts.served, counts.failed), (7, 5, 2));
    assert_eq!(direct_dials(&rollout()), None);
}
