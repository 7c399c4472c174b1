//! `drainwatch cleanup`: removes everything carrying `app.kubernetes.io/managed-by:
//! drainwatch` (left behind by a killed or cancelled run) and says what it removed.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::{K8sError, labels};

fn selector() -> ListParams {
    ListParams::default().labels(&format!("{}={}", labels::MANAGED_BY, labels::MANAGER))
}

async fn sweep<K>(
    client: &kube::Client,
    kind: &str,
    skip_ns: &[String],
    out: &mut Vec<String>,
) -> Result<(), K8sError>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let all: Api<K> = Api::all(client.clone());
    let list = all.list(&selector()).await.map_err(K8sError::api(format!(
        "list {kind}s labelled managed-by=drainwatch"
    )))?;
    for o in list.items {
        let ns = o.namespace().unwrap_or_default();
        if skip_ns.contains(&ns) {
            continue;
        }
        let name = o.name_any();
        Api::<K>::namespaced(client.clone(), &ns)
            .delete(&name, &DeleteParams::background().grace_period(0))
            .await
            .map_err(K8sError::api(format!("delete {kind} {ns}/{name}")))?;
        out.push(format!("{kind} {ns}/{name}"));
    }
    Ok(())
}

/// Deletes every managed namespace (with its contents) and every managed object elsewhere;
/// returns one line per object removed.
pub async fn cleanup(client: &kube::Client) -> Result<Vec<String>, K8sError> {
    let mut out = Vec::new();
    let nss: Api<Namespace> = Api::all(client.clone());
    let list = nss.list(&selector()).await.map_err(K8sError::api(
        "list namespaces labelled managed-by=drainwatch",
    ))?;
    let mut deleted = Vec::new();
    for n in list.items {
        let name = n.name_any();
        if n.metadata.deletion_timestamp.is_none() {
            nss.delete(&name, &DeleteParams::background())
                .await
                .map_err(K8sError::api(format!("delete namespace {name}")))?;
            out.push(format!("namespace {name} (and everything in it)"));
        } else {
            out.push(format!("namespace {name} (already terminating)"));
        }
        deleted.push(name);
    }
    sweep::<Pod>(client, "pod", &deleted, &mut out).await?;
    sweep::<Deployment>(client, "deployment", &deleted, &mut out).await?;
    sweep::<Service>(client, "service", &deleted, &mut out).await?;
    sweep::<PodDisruptionBudget>(client, "poddisruptionbudget", &deleted, &mut out).await?;
    Ok(out)
}
