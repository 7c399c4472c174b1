//! `delete`: the pod under test deleted with default options, so its own grace period applies.

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::DeleteParams;

use crate::evidence::trigger::Triggered;
use crate::k8s::K8sError;

/// Deletes `pod` with default options, so the pod spec's terminationGracePeriodSeconds applies.
pub async fn pod(pods: &Api<Pod>, pod: &str) -> Result<Triggered, K8sError> {
    pods.delete(pod, &DeleteParams::default())
        .await
        .map_err(K8sError::api(format!("delete pod {pod}")))?;
    Ok(Triggered::Issued(format!(
        "pod {pod} deleted (grace period from the pod spec)"
    )))
}
