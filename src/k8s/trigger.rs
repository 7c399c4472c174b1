//! The three triggers: delete the pod under test (its own grace period applies), evict it
//! through the policy/v1 Eviction API (one attempt; a PodDisruptionBudget's 429 is an answer,
//! not an error), or scale the Deployment to zero.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::Eviction;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};

use super::{K8sError, status_code};
use crate::platform::Triggered;

/// Deletes `pod` with default options, so the pod spec's terminationGracePeriodSeconds applies.
pub async fn delete(pods: &Api<Pod>, pod: &str) -> Result<Triggered, K8sError> {
    pods.delete(pod, &DeleteParams::default())
        .await
        .map_err(K8sError::api(format!("delete pod {pod}")))?;
    Ok(Triggered::Issued(format!(
        "pod {pod} deleted (grace period from the pod spec)"
    )))
}

/// Evicts `pod` once. The body is a typed policy/v1 Eviction without deleteOptions, so the pod's
/// own grace period applies (kube's `evict` helper serialises the options under a key the API
/// server ignores, so it is not used).
pub async fn evict(pods: &Api<Pod>, ns: &str, pod: &str) -> Result<Triggered, K8sError> {
    let ev = Eviction {
        metadata: ObjectMeta {
            name: Some(pod.into()),
            namespace: Some(ns.into()),
            ..ObjectMeta::default()
        },
        delete_options: None,
    };
    match pods
        .create_subresource::<Eviction, serde_json::Value>(
            "eviction",
            pod,
            &PostParams::default(),
            &ev,
        )
        .await
    {
        Ok(_) => Ok(Triggered::Issued(format!(
            "pod {pod} evicted (policy/v1 Eviction accepted)"
        ))),
        Err(e) if status_code(&e) == Some(429) => Ok(Triggered::Blocked(format!(
            "the Eviction API refused to evict pod {pod} with 429: {}; drainwatch makes one attempt and does not retry",
            match &e {
                kube::Error::Api(s) => s.message.clone(),
                other => other.to_string(),
            }
        ))),
        Err(e) => Err(K8sError::api(format!("evict pod {pod}"))(e)),
    }
}

/// Scales Deployment `name` to zero replicas.
pub async fn scale_to_zero(
    deployments: &Api<Deployment>,
    name: &str,
) -> Result<Triggered, K8sError> {
    deployments
        .patch_scale(
            name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"replicas": 0}})),
        )
        .await
        .map_err(K8sError::api(format!("scale deployment {name} to 0")))?;
    Ok(Triggered::Issued(format!(
        "deployment {name} scaled to 0 replicas"
    )))
}
