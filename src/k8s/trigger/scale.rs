//! `scale`: the workload scaled down so that the pod under test is the one removed. The probe's
//! Deployment goes to zero; an attached Deployment is given one replica fewer after the pod
//! under test is annotated with the lowest deletion cost; an attached StatefulSet loses its
//! highest ordinal, which preflight chose as the pod under test. Each change is written into
//! [`Changes`] before it is made, so that the restore undoes it after errors and interrupts too.

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams};

use super::Changes;
use crate::evidence::event::EventName;
use crate::evidence::journal::Change;
use crate::evidence::plan::attach::WorkloadKind;
use crate::evidence::trigger::Triggered;
use crate::k8s::K8sError;
use crate::recorder::Recorder;

/// The annotation the ReplicaSet controller reads to choose which pod a scale-down removes
/// (lowest cost first).
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// The deletion cost that makes the chosen pod the one a scale-down removes: the lowest an
/// int32 annotation can say.
pub const LOWEST_COST: &str = "-2147483648";

/// The merge patch that sets a scale subresource's replicas.
pub fn scale_patch(replicas: i32) -> serde_json::Value {
    serde_json::json!({"spec": {"replicas": replicas}})
}

/// Sets the replicas of `kind/name` through the scale subresource.
pub async fn set_replicas(
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

/// The replicas `kind/name` asks for now: its spec.replicas, read with the `get` the attach
/// RBAC grants on the workload (the scale subresource is granted `patch` only).
pub async fn replicas_now(
    client: &kube::Client,
    ns: &str,
    kind: WorkloadKind,
    name: &str,
) -> Result<i32, K8sError> {
    let what = format!("get {} {ns}/{name}", kind.as_str());
    let replicas = match kind {
        WorkloadKind::Deployment => Api::<Deployment>::namespaced(client.clone(), ns)
            .get(name)
            .await
            .map(|d| d.spec.and_then(|s| s.replicas)),
        WorkloadKind::StatefulSet => Api::<StatefulSet>::namespaced(client.clone(), ns)
            .get(name)
            .await
            .map(|d| d.spec.and_then(|s| s.replicas)),
    }
    .map_err(K8sError::api(what))?;
    // An absent spec.replicas means the API's default, 1.
    Ok(replicas.unwrap_or(1))
}

/// The deletion-cost annotation of `pod` (None: absent), read with `list` by name (what the
/// attach RBAC grants on pods); a pod that is gone is the 404 of a `get`.
pub async fn deletion_cost(pods: &Api<Pod>, pod: &str) -> Result<Option<String>, K8sError> {
    let what = format!("read pod {pod}");
    let list = pods
        .list(&ListParams::default().fields(&format!("metadata.name={pod}")))
        .await
        .map_err(K8sError::api(what.clone()))?;
    match list.items.into_iter().next() {
        Some(p) => Ok(p
            .metadata
            .annotations
            .and_then(|m| m.get(POD_DELETION_COST).cloned())),
        None => Err(K8sError::Gone(format!("pod {pod}"))),
    }
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

/// The probe's trigger: its Deployment `name` scaled to zero replicas.
pub async fn to_zero(client: &kube::Client, ns: &str, name: &str) -> Result<Triggered, K8sError> {
    set_replicas(client, ns, WorkloadKind::Deployment, name, 0).await?;
    Ok(Triggered::Issued(format!(
        "deployment {name} scaled to 0 replicas"
    )))
}

/// The attached workload `kind/name` in `ns`, with `replicas` before the trigger, and the pod
/// the scale-down must remove.
pub struct ScaleDown<'a> {
    /// The API client.
    pub client: &'a kube::Client,
    /// The workload's namespace.
    pub ns: &'a str,
    /// Deployment or StatefulSet.
    pub kind: WorkloadKind,
    /// The workload's name.
    pub name: &'a str,
    /// Its replicas before the trigger.
    pub replicas: i32,
    /// The pod under test.
    pub victim: &'a str,
}

impl ScaleDown<'_> {
    /// One replica fewer, removing the victim; what was changed goes into `changes` first.
    pub async fn issue(
        &self,
        changes: &mut Changes,
        rec: &Recorder,
    ) -> Result<Triggered, K8sError> {
        let how = match self.kind {
            // The controller removes the highest ordinal, which preflight chose as the pod
            // under test: no annotation can change that, so none is set.
            WorkloadKind::StatefulSet => {
                "its highest ordinal, which a StatefulSet scale-down always removes"
            }
            WorkloadKind::Deployment => {
                self.lowest_cost(changes, rec).await?;
                "lowest deletion cost"
            }
        };
        let (ns, name, replicas) = (self.ns, self.name, self.replicas);
        rec.made(Change::ReplicasScaled {
            kind: self.kind,
            namespace: ns.to_string(),
            name: name.to_string(),
            from: replicas,
        })?;
        changes.replicas = Some((self.kind, name.to_string(), replicas));
        set_replicas(self.client, ns, self.kind, name, replicas - 1).await?;
        Ok(Triggered::Issued(format!(
            "{} {ns}/{name} scaled from {replicas} to {} replicas; pod {} ({how}) is the one removed; the replicas are restored at the end",
            self.kind.as_str(),
            replicas - 1,
            self.victim
        )))
    }

    /// Annotates the victim with the lowest deletion cost, keeping the value before for the
    /// restore.
    async fn lowest_cost(&self, changes: &mut Changes, rec: &Recorder) -> Result<(), K8sError> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), self.ns);
        let before = deletion_cost(&pods, self.victim).await?;
        rec.made(Change::AnnotationSet {
            namespace: self.ns.to_string(),
            pod: self.victim.to_string(),
            key: POD_DELETION_COST.to_string(),
            value: LOWEST_COST.to_string(),
            before: before.clone(),
        })?;
        changes.deletion_cost = Some((self.victim.to_string(), before));
        set_deletion_cost(&pods, self.victim, Some(LOWEST_COST)).await?;
        rec.orchestrator(
            EventName::PodDeletionCostSet,
            format!(
                "{} annotated {POD_DELETION_COST}={LOWEST_COST}, so the scale-down removes it",
                self.victim
            ),
        );
        Ok(())
    }
}
