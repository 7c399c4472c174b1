//! What an attach trial changed on the user's workload, recorded before each change is made,
//! and undone at teardown (which the trial loop runs after errors and interrupts too): the
//! replica count, a node's cordon, a pod's deletion-cost annotation. The rollout-restart
//! annotation is not undone: removing it would roll the workload again.

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{Patch, PatchParams};

use super::{K8sError, drain, status_code};
use crate::evidence::plan::attach::WorkloadKind;

/// The annotation the ReplicaSet controller reads to choose which pod a scale-down removes
/// (lowest cost first).
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// The changes made so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// The workload's replicas before a scale-down: kind, name, replicas.
    pub replicas: Option<(WorkloadKind, String, i32)>,
    /// A node this trial cordoned (it was schedulable before).
    pub cordoned: Option<String>,
    /// A pod given a deletion cost, and the annotation's value before (None: absent).
    pub deletion_cost: Option<(String, Option<String>)>,
    /// The restartedAt value a rollout-restart left (documented, not undone).
    pub restarted_at: Option<String>,
}

impl Changes {
    /// Whether nothing needs undoing.
    pub fn is_empty(&self) -> bool {
        self.replicas.is_none() && self.cordoned.is_none() && self.deletion_cost.is_none()
    }
}

/// The merge patch that sets a scale subresource's replicas.
pub fn scale_patch(replicas: i32) -> serde_json::Value {
    serde_json::json!({"spec": {"replicas": replicas}})
}

/// Sets (or, with `None`, removes) the deletion-cost annotation of `pod`.
pub async fn set_deletion_cost(
    pods: &Api<Pod>,
    pod: &str,
    value: Option<&str>,
) -> Result<(), K8sError> {
    pods.patch(
        pod,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"metadata": {"annotations": {POD_DELETION_COST: value}}})),
    )
    .await
    .map_err(K8sError::api(format!(
        "annotate pod {pod} with {POD_DELETION_COST}={}",
        value.unwrap_or("(removed)")
    )))?;
    Ok(())
}

/// Sets the replicas of `kind/name` through the scale subresource.
pub async fn scale(
    client: &kube::Client,
    ns: &str,
    kind: WorkloadKind,
    name: &str,
    replicas: i32,
) -> Result<(), K8sError> {
    let pp = PatchParams::default();
    let patch = Patch::Merge(scale_patch(replicas));
    let what = format!("scale {} {ns}/{name} to {replicas}", kind.as_str());
    match kind {
        WorkloadKind::Deployment => Api::<Deployment>::namespaced(client.clone(), ns)
            .patch_scale(name, &pp, &patch)
            .await
            .map(|_| ()),
        WorkloadKind::StatefulSet => Api::<StatefulSet>::namespaced(client.clone(), ns)
            .patch_scale(name, &pp, &patch)
            .await
            .map(|_| ()),
    }
    .map_err(K8sError::api(what))
}

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
        match scale(client, ns, *kind, name, *replicas).await {
            Ok(()) => done.push(format!(
                "{} {ns}/{name} scaled back to {replicas} replicas",
                kind.as_str()
            )),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some((pod, before)) = &changes.deletion_cost {
        let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
        match set_deletion_cost(&pods, pod, before.as_deref()).await {
            Ok(()) => done.push(format!("{POD_DELETION_COST} of pod {pod} restored")),
            // The scaled-down pod is normally gone, and its annotation with it.
            Err(K8sError::Api { source, .. }) if status_code(&source) == Some(404) => {
                done.push(format!("pod {pod} (given {POD_DELETION_COST}) is gone"));
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some(node) = &changes.cordoned {
        match drain::set_unschedulable(client, node, false).await {
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

#[cfg(test)]
mod tests {
    use super::*;

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
