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
use crate::k8s::{K8sError, status_code};

/// Undoes `changes` in namespace `ns`; returns one line per thing restored. Every step is
/// tried even when an earlier one fails; the first failure is returned after all were tried.
pub async fn undo(
    client: &kube::Client,
    ns: &str,
    changes: &Changes,
) -> (Vec<String>, Option<K8sError>) {
    let mut done = Vec::new();
    let mut first_err = None;
    if let Some((kind, name, replicas)) = &changes.replicas {
        // Set back only what this trial set (one fewer): a count someone else (a parallel
        // run, an autoscaler, the user) changed since is theirs, and is not overwritten.
        let restored = match replicas_now(client, ns, *kind, name).await {
            Ok(now) if now == *replicas => Ok(format!(
                "{} {ns}/{name} is at {replicas} replicas already",
                kind.as_str()
            )),
            Ok(now) if now == replicas - 1 => set_replicas(client, ns, *kind, name, *replicas)
                .await
                .map(|()| {
                    format!(
                        "{} {ns}/{name} scaled back to {replicas} replicas",
                        kind.as_str()
                    )
                }),
            Ok(now) => Err(K8sError::ChangedMeanwhile(format!(
                "{} {ns}/{name} asks for {now} replicas, neither the {} this trial set nor the {replicas} before it",
                kind.as_str(),
                replicas - 1
            ))),
            Err(e) => Err(e),
        };
        match restored {
            Ok(d) => done.push(d),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some((pod, before)) = &changes.deletion_cost {
        let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
        match cost_if_ours(&pods, pod, before.as_deref()).await {
            Ok(()) => done.push(format!("{POD_DELETION_COST} of pod {pod} restored")),
            // The scaled-down pod is normally gone, and its annotation with it.
            Err(K8sError::Gone(_)) => {
                done.push(format!("pod {pod} (given {POD_DELETION_COST}) is gone"));
            }
            Err(K8sError::Api { source, .. }) if status_code(&source) == Some(404) => {
                done.push(format!("pod {pod} (given {POD_DELETION_COST}) is gone"));
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some(node) = &changes.cordoned {
        match set_unschedulable(client, node, false).await {
            Ok(_) => done.push(format!("node {node} uncordoned")),
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
