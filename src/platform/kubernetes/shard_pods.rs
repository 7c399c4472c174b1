//! `--clients N` with client pods: which pods, with which slice of the flow ids and dials, on
//! which node. One client keeps the single pod (`drainwatch-client`) as before; N shards are
//! `drainwatch-client-1` … `drainwatch-client-N`, each holding a contiguous slice of the flow
//! ids and every N-th dial number, so the shards together report every id once.

use tokio::sync::watch;
use tokio::time::Instant;

use super::relay::ClientStream;

use super::{TrialState, fail};
use crate::evidence::event::EventName;
use crate::evidence::plan::ShardPlacement;
use crate::evidence::plan::client::AttachShard;
use crate::evidence::trigger::Trigger;
use crate::k8s::client::ClusterAccess;
use crate::k8s::target::{self, SchedulableNode};
use crate::k8s::{CLIENT_NAME, chain};
use crate::net::ClientConfig;
use crate::platform::PlatformError;
use crate::platform::flows::AttachProgress;
use crate::platform::shard::{Slice, slices};
use crate::preflight;
use crate::recorder::Recorder;

/// One client pod of a trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ShardPod {
    /// Pod name.
    pub name: String,
    /// Its slice of the flow ids.
    pub slice: Slice,
    /// Its position among the shards (from 0) and their number: its dials are
    /// `index + 1`, `index + 1 + count`, …
    pub index: u32,
    /// The number of shards.
    pub count: u32,
    /// The `kubernetes.io/hostname` it is pinned to, if any.
    pub node: Option<String>,
    /// Whether the scheduler is asked to keep it off the other shards' nodes.
    pub spread: bool,
}

impl ShardPod {
    /// Whether this pod is one of several (its lines then carry its node).
    pub fn sharded(&self) -> bool {
        self.count > 1
    }
}

/// Why the shards cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unplaceable(pub String);

/// The trial's client pods: one, pinned to `pin` when given (drain-node's other node); or
/// `n` shards, per-node on distinct `nodes` (Ready, schedulable, without the node the trigger
/// drains, `excluded`) in name order, or spread by the scheduler.
pub(super) fn plan(
    ccfg: &ClientConfig,
    n: u32,
    placement: Option<ShardPlacement>,
    pin: Option<String>,
    nodes: &[SchedulableNode],
    excluded: Option<&str>,
) -> Result<Vec<ShardPod>, Unplaceable> {
    let parts = slices(ccfg.tcp_flows, ccfg.udp_flows, n.max(1));
    if parts.len() == 1 {
        return Ok(vec![ShardPod {
            name: CLIENT_NAME.to_string(),
            slice: parts[0],
            index: 0,
            count: 1,
            node: pin,
            spread: false,
        }]);
    }
    let count = u32::try_from(parts.len()).unwrap_or(u32::MAX);
    let name = |i: usize| format!("{CLIENT_NAME}-{}", i + 1);
    match placement.unwrap_or(ShardPlacement::PerNode) {
        ShardPlacement::Spread => Ok(parts
            .into_iter()
            .enumerate()
            .map(|(i, slice)| ShardPod {
                name: name(i),
                slice,
                index: u32::try_from(i).unwrap_or(u32::MAX),
                count,
                node: None,
                spread: true,
            })
            .collect()),
        ShardPlacement::PerNode => {
            let mut usable: Vec<&SchedulableNode> = nodes
                .iter()
                .filter(|n| Some(n.name.as_str()) != excluded)
                .collect();
            usable.sort_by(|a, b| a.name.cmp(&b.name));
            if usable.len() < parts.len() {
                return Err(Unplaceable(format!(
                    "--clients {count} --client-placement per-node needs {count} Ready, schedulable nodes{}; there {} {}{}",
                    excluded
                        .map(|n| format!(" other than {n} (the node the trigger drains)"))
                        .unwrap_or_default(),
                    if usable.len() == 1 { "is" } else { "are" },
                    usable.len(),
                    if usable.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " ({}): lower --clients or use --client-placement spread",
                            usable
                                .iter()
                                .map(|n| n.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    }
                )));
            }
            Ok(parts
                .into_iter()
                .zip(usable)
                .enumerate()
                .map(|(i, (slice, node))| ShardPod {
                    name: name(i),
                    slice,
                    index: u32::try_from(i).unwrap_or(u32::MAX),
                    count,
                    node: Some(node.hostname.clone()),
                    spread: false,
                })
                .collect())
        }
    }
}

/// The trial's client pods, placed: per-node shards on the cluster's Ready, schedulable nodes
/// (never the node drain-node drains), recorded as `client_node_chosen`. A placement the
/// cluster cannot give fails the client-pod-running check before any pod is created.
pub(super) async fn client_pods(
    st: &TrialState,
    access: &ClusterAccess,
    ccfg: &ClientConfig,
    rec: &Recorder,
) -> Result<Vec<ShardPod>, PlatformError> {
    let n = st.clients;
    let attach = st.attach();
    let pin = attach
        .and_then(|a| a.client_node.as_ref())
        .map(|n| n.hostname.clone());
    let per_node = n > 1 && st.shard_placement != Some(ShardPlacement::Spread);
    let t = Instant::now();
    let nodes = if per_node {
        target::schedulable_nodes(&access.client)
            .await
            .map_err(|e| fail(preflight::CLIENT_POD_RUNNING, t, chain(&e)))?
    } else {
        Vec::new()
    };
    let drained = attach
        .filter(|a| a.trigger == Trigger::DrainNode)
        .and_then(|a| a.put.as_ref())
        .and_then(|p| p.node.as_deref());
    let pods = plan(ccfg, n, st.shard_placement, pin, &nodes, drained)
        .map_err(|Unplaceable(why)| fail(preflight::CLIENT_POD_RUNNING, t, why))?;
    if per_node {
        rec.orchestrator(
            EventName::ClientNodeChosen,
            format!(
                "client pods pinned one per node ({}): {}",
                ShardPlacement::PerNode.as_str(),
                pods.iter()
                    .map(|p| format!("{} to {}", p.name, p.node.as_deref().unwrap_or("unknown")))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    Ok(pods)
}

/// `pod`'s part of the attach client's work: its own held connections, first flow number and
/// every `count`-th dial from its own; none when one client does all of it.
pub(super) fn attach_shard(pod: &ShardPod) -> Option<AttachShard> {
    pod.sharded().then(|| AttachShard {
        tcp_flows: pod.slice.tcp,
        first_tcp_flow: pod.slice.first_tcp,
        first_dial: u64::from(pod.index) + 1,
        dial_stride: pod.count,
    })
}

/// The trial loop's attach counts: the sum of every client's.
pub(super) fn summed(
    st: &mut TrialState,
    states: Vec<watch::Receiver<ClientStream>>,
) -> watch::Receiver<AttachProgress> {
    let (tx, rx) = watch::channel(AttachProgress::default());
    for mut s in states.iter().cloned() {
        let (tx, all) = (tx.clone(), states.clone());
        st.tasks.push(tokio::spawn(async move {
            while s.changed().await.is_ok() {
                let mut sum = AttachProgress::default();
                for a in &all {
                    let a = &a.borrow().attach;
                    sum.opened += a.opened;
                    sum.open_failed += a.open_failed;
                    sum.served += a.served;
                    sum.dial_failed += a.dial_failed;
                    if a.last_dial_failure.is_some() {
                        sum.last_dial_failure.clone_from(&a.last_dial_failure);
                    }
                }
                tx.send_replace(sum);
            }
        }));
    }
    rx
}

/// Turns true once every client's log follower has ended.
pub(super) fn all_done(
    st: &mut TrialState,
    done: Vec<watch::Receiver<bool>>,
) -> watch::Receiver<bool> {
    if let [one] = done.as_slice() {
        return one.clone();
    }
    let (tx, rx) = watch::channel(false);
    st.tasks.push(tokio::spawn(async move {
        for mut d in done {
            if d.wait_for(|v| *v).await.is_err() {
                return;
            }
        }
        tx.send_replace(true);
    }));
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(names: &[&str]) -> Vec<SchedulableNode> {
        names
            .iter()
            .map(|n| SchedulableNode {
                name: (*n).to_string(),
                hostname: format!("host-{n}"),
            })
            .collect()
    }

    fn ccfg(tcp: u32, udp: u32) -> ClientConfig {
        let mut c = ClientConfig::new("10.0.0.1", 1, 2);
        (c.tcp_flows, c.udp_flows) = (tcp, udp);
        c
    }

    #[test]
    fn one_client_is_the_single_pod_pinned_only_when_asked() {
        let p = plan(&ccfg(4, 0), 1, None, None, &[], None).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(
            (p[0].name.as_str(), p[0].node.as_deref(), p[0].sharded()),
            (CLIENT_NAME, None, false)
        );
        let p = plan(&ccfg(4, 0), 1, None, Some("n2".into()), &[], None).unwrap();
        assert_eq!(p[0].node.as_deref(), Some("n2"));
        assert_eq!(attach_shard(&p[0]), None, "one client does all of it");
    }

    #[test]
    fn per_node_shards_take_distinct_nodes_in_name_order_and_never_the_drained_one() {
        let all = nodes(&["node3", "node1", "node2"]);
        let p = plan(
            &ccfg(5, 3),
            2,
            Some(ShardPlacement::PerNode),
            None,
            &all,
            None,
        )
        .unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(
            p.iter()
                .map(|s| (s.name.as_str(), s.node.as_deref().unwrap()))
                .collect::<Vec<_>>(),
            vec![
                ("drainwatch-client-1", "host-node1"),
                ("drainwatch-client-2", "host-node2")
            ]
        );
        assert_eq!((p[0].slice.tcp, p[1].slice.first_tcp), (3, 4));
        let p = plan(&ccfg(5, 0), 2, None, None, &all, Some("node1")).unwrap();
        assert_eq!(
            p.iter()
                .map(|s| s.node.as_deref().unwrap())
                .collect::<Vec<_>>(),
            vec!["host-node2", "host-node3"]
        );
        let e = plan(&ccfg(5, 0), 3, None, None, &all, Some("node1")).unwrap_err();
        assert!(
            e.0.contains("needs 3 Ready, schedulable nodes other than node1")
                && e.0.contains("there are 2 (node2, node3)"),
            "{}",
            e.0
        );
    }

    #[test]
    fn spread_shards_are_unpinned_and_kept_apart() {
        let p = plan(
            &ccfg(4, 0),
            3,
            Some(ShardPlacement::Spread),
            None,
            &[],
            None,
        )
        .unwrap();
        assert_eq!(p.len(), 3);
        assert!(
            p.iter()
                .all(|s| s.node.is_none() && s.spread && s.count == 3)
        );
    }

    #[test]
    fn a_shards_attach_share_is_its_flows_and_every_nth_dial() {
        let all = nodes(&["a", "b"]);
        let p = plan(&ccfg(5, 0), 2, None, None, &all, None).unwrap();
        assert_eq!(
            attach_shard(&p[1]),
            Some(AttachShard {
                tcp_flows: 2,
                first_tcp_flow: 4,
                first_dial: 2,
                dial_stride: 2,
            })
        );
    }
}
