//! What an attach trial changed on the user's workload, recorded before each change is made,
//! and undone at teardown (which the trial loop runs after errors and interrupts too): the
//! replica count, a node's cordon, a pod's deletion-cost annotation. The rollout-restart
//! annotation is not undone: removing it would roll the workload again.

use k8s_openapi::api::core::v1::Pod;
use kube::Api;

use super::Changes;
use super::drain::set_unschedulable;
use super::scale::{
    LOWEST_COST, POD_DELETION_COST, deletion_cost, replicas_now, set_deletion_cost, set_replicas,
};
use crate::evidence::journal::Change;
use crate::k8s::{K8sError, status_code};
use crate::recorder::Recorder;

/// Undoes `changes` in namespace `ns`; returns one line per thing restored, each also
/// marked restored in the run's journal (`rec`). Every step is tried even when an earlier
/// one fails; the first failure is returned after all were tried.
pub async fn undo(
    client: &kube::Client,
    ns: &str,
    changes: &Changes,
    rec: &Recorder,
) -> (Vec<String>, Option<K8sError>) {
    let mut done = Vec::new();
    let mut first_err = None;
    let mut steps: Vec<Change> = Vec::new();
    if let Some((kind, name, from)) = &changes.replicas {
        steps.push(Change::ReplicasScaled {
            kind: *kind,
            namespace: ns.to_string(),
            name: name.clone(),
            from: *from,
        });
    }
    if let Some((pod, before)) = &changes.deletion_cost {
        steps.push(Change::AnnotationSet {
            namespace: ns.to_string(),
            pod: pod.clone(),
            key: POD_DELETION_COST.to_string(),
            value: LOWEST_COST.to_string(),
            before: before.clone(),
        });
    }
    if let Some(node) = &changes.cordoned {
        steps.push(Change::NodeCordoned { node: node.clone() });
    }
    for c in &steps {
        match change(client, c).await {
            Ok(d) => {
                rec.restored_change(c, &d);
                done.push(d);
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some(at) = &changes.restarted_at {
        done.push(format!(
            "left as documented: the pod template annotation kubectl.kubernetes.io/restartedAt={at}"
        ));
    }
    (done, first_err)
}

/// Undoes one journalled change to the user's workload or a node, idempotently: what is
/// restored already is said so; what someone else changed since is left, named in the
/// error. The namespace and process changes are not this function's (`k8s::cleanup`).
pub async fn change(client: &kube::Client, c: &Change) -> Result<String, K8sError> {
    match c {
        Change::ReplicasScaled {
            kind,
            namespace: ns,
            name,
            from: replicas,
        } => {
            // Set back only what this trial set (one fewer): a count someone else (a parallel
            // run, an autoscaler, the user) changed since is theirs, and is not overwritten.
            match replicas_now(client, ns, *kind, name).await? {
                now if now == *replicas => Ok(format!(
                    "{} {ns}/{name} is at {replicas} replicas already",
                    kind.as_str()
                )),
                now if now == replicas - 1 => {
                    set_replicas(client, ns, *kind, name, *replicas).await?;
                    Ok(format!(
                        "{} {ns}/{name} scaled back to {replicas} replicas",
                        kind.as_str()
                    ))
                }
                now => Err(K8sError::ChangedMeanwhile(format!(
                    "{} {ns}/{name} asks for {now} replicas, neither the {} this trial set nor the {replicas} before it",
                    kind.as_str(),
                    replicas - 1
                ))),
            }
        }
        Change::AnnotationSet {
            namespace,
            pod,
            before,
            ..
        } => {
            let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
            match cost_if_ours(&pods, pod, before.as_deref()).await {
                Ok(()) => Ok(format!("{POD_DELETION_COST} of pod {pod} restored")),
                // The scaled-down pod is normally gone, and its annotation with it.
                Err(K8sError::Gone(_)) => {
                    Ok(format!("pod {pod} (given {POD_DELETION_COST}) is gone"))
                }
                Err(K8sError::Api { source, .. }) if status_code(&source) == Some(404) => {
                    Ok(format!("pod {pod} (given {POD_DELETION_COST}) is gone"))
                }
                Err(e) => Err(e),
            }
        }
        Change::NodeCordoned { node } => {
            let was = set_unschedulable(client, node, false).await?;
            Ok(if was {
                format!("node {node} uncordoned")
            } else {
                format!("node {node} is schedulable already")
            })
        }
        Change::NamespaceCreated { namespace } => Err(K8sError::Gone(format!(
            "namespace {namespace} is removed by the teardown or cleanup, not restored:"
        ))),
        Change::ObjectCreated { .. } => Err(K8sError::Gone(format!(
            "{} is removed by the teardown or cleanup, not restored:",
            c.describe()
        ))),
        Change::ProcessSpawned { pid, .. } => Err(K8sError::Gone(format!(
            "process {pid} is not a Kubernetes change:"
        ))),
    }
}

/// Restores `pod`'s deletion cost to `before` only while it still holds the value this trial
/// set; a value someone else set since is left (named in the error).
async fn cost_if_ours(pods: &Api<Pod>, pod: &str, before: Option<&str>) -> Result<(), K8sError> {
    let now = deletion_cost(pods, pod).await?;
    if now.as_deref() != Some(LOWEST_COST) {
        return Err(K8sError::ChangedMeanwhile(format!(
            "pod {pod} has {POD_DELETION_COST}={}, not the {LOWEST_COST} this trial set",
            now.as_deref().unwrap_or("(absent)")
        )));
    }
    set_deletion_cost(pods, pod, before).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::trigger::scale::scale_patch;

    #[test]
    fn patches_are_merge_patches_of_the_right_fields() {
        assert_eq!(scale_patch(3).to_string(), r#"{"spec":{"replicas":3}}"#);
        let c = Changes {
            restarted_at: Some("t".into()),
            ..Changes::default()
        };
        assert!(c.is_empty(), "the restart annotation is not undone");
        let c = Changes {
            cordoned: Some("node2".into()),
            ..Changes::default()
        };
        assert!(!c.is_empty());
    }
}
