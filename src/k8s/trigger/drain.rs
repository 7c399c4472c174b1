//! `drain-node` as `kubectl drain` does it, for the target's pods: cordon the node, evict each
//! pod through the Eviction API, and on a 429 (a PodDisruptionBudget that does not allow it
//! yet) record the refusal and try again after a pause, within a time bound. The uncordon is
//! the caller's restore step, so it also runs after an interrupt or an error.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::{Patch, PatchParams};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::evict;
use super::{Changes, Ongoing};
use crate::evidence::event::EventName;
use crate::evidence::journal::Change;
use crate::evidence::trigger::Triggered;
use crate::k8s::{K8sError, chain};
use crate::recorder::Recorder;

/// Whether `node` is cordoned now.
pub async fn is_unschedulable(client: &kube::Client, node: &str) -> Result<bool, K8sError> {
    let nodes: Api<Node> = Api::all(client.clone());
    Ok(nodes
        .get(node)
        .await
        .map_err(K8sError::api(format!("get node {node}")))?
        .spec
        .and_then(|s| s.unschedulable)
        .unwrap_or(false))
}

/// Sets `spec.unschedulable` of `node`; returns whether it was already set before.
pub async fn set_unschedulable(
    client: &kube::Client,
    node: &str,
    unschedulable: bool,
) -> Result<bool, K8sError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let before = nodes
        .get(node)
        .await
        .map_err(K8sError::api(format!("get node {node}")))?
        .spec
        .and_then(|s| s.unschedulable)
        .unwrap_or(false);
    nodes
        .patch(
            node,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"unschedulable": unschedulable}})),
        )
        .await
        .map_err(K8sError::api(format!(
            "{} node {node}",
            if unschedulable { "cordon" } else { "uncordon" }
        )))?;
    Ok(before)
}

/// The drain of the pod under test's node, for the target's pods on it.
pub struct DrainNode {
    /// The API client.
    pub client: kube::Client,
    /// The target's namespace.
    pub ns: String,
    /// The node to drain.
    pub node: String,
    /// The target's pods on it, not terminating, at the trigger.
    pub on_node: Vec<String>,
    /// How long the evictions may retry.
    pub observe: Duration,
}

impl DrainNode {
    /// Cordons the node (recorded in `changes` before the patch, so that the restore
    /// uncordons it) and starts evicting its target pods; the task ends when each was evicted
    /// or given up on.
    pub async fn issue(
        self,
        changes: &mut Changes,
        rec: &Recorder,
        cancel: CancellationToken,
    ) -> Result<Ongoing, K8sError> {
        let Self {
            client,
            ns,
            node,
            on_node,
            observe,
        } = self;
        // Recorded before the patch: should the call be cut, uncordoning a node that was
        // schedulable is the restore. A node cordoned before the trial is left so, and not
        // journalled (a cleanup after a kill must not uncordon it).
        let was = is_unschedulable(&client, &node).await?;
        if !was {
            rec.made(Change::NodeCordoned { node: node.clone() })?;
            changes.cordoned = Some(node.clone());
        }
        set_unschedulable(&client, &node, true).await?;
        rec.orchestrator(
            EventName::NodeCordoned,
            format!(
                "{node}{}; evicting the target's pods on it: {}",
                if was { " (was already cordoned)" } else { "" },
                on_node.join(", ")
            ),
        );
        let (done_tx, done) = watch::channel(false);
        let pods: Api<Pod> = Api::namespaced(client, &ns);
        let deadline = tokio::time::Instant::now() + observe;
        let rec = rec.clone();
        let task = tokio::spawn(async move {
            for p in &on_node {
                tokio::select! {
                    () = cancel.cancelled() => return,
                    r = evict::retrying(&pods, &ns, p, deadline, &rec) => {
                        if let Err(e) = r {
                            rec.orchestrator(EventName::EvictionFailed, format!("{p}: {}", chain(&e)));
                        }
                    }
                }
            }
            rec.orchestrator(
                EventName::DrainEvictionsDone,
                format!(
                    "every target pod on the drained node was evicted or given up on: {}",
                    on_node.join(", ")
                ),
            );
            let _ = done_tx.send(true);
        });
        Ok(Ongoing {
            triggered: Triggered::Issued(format!(
                "node {node} cordoned; the target's pods on it are evicted through the Eviction API, retrying on 429 for up to {}s; it is uncordoned at the end",
                observe.as_secs()
            )),
            task,
            done,
        })
    }
}
