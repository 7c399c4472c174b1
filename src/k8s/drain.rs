//! `drain-node` as `kubectl drain` does it, for the target's pods: cordon the node, evict each
//! pod through the Eviction API, and on a 429 (a PodDisruptionBudget that does not allow it
//! yet) record the refusal and try again after a pause, within a time bound. The uncordon is
//! the caller's restore step, so it also runs after an interrupt or an error.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::Eviction;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};

use super::{K8sError, status_code};
use crate::evidence::event::EventName;
use crate::trial::recorder::Recorder;

/// The pause between eviction attempts after a 429, as `kubectl drain` waits.
pub const RETRY_AFTER_429: Duration = Duration::from_secs(5);

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

/// How one pod's eviction ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evicted {
    /// The Eviction API accepted it, after this many refusals.
    Accepted {
        /// 429 answers before the acceptance.
        refusals: u32,
    },
    /// The pod was already gone.
    Gone,
    /// Every attempt within the bound was refused.
    GaveUp {
        /// 429 answers.
        refusals: u32,
    },
}

/// Evicts `pod`, retrying on 429 until `deadline`; each refusal is recorded as
/// `eviction_refused` with the API server's message (which names the budget).
pub async fn evict(
    pods: &Api<Pod>,
    ns: &str,
    pod: &str,
    deadline: tokio::time::Instant,
    rec: &Recorder,
) -> Result<Evicted, K8sError> {
    let ev = Eviction {
        metadata: ObjectMeta {
            name: Some(pod.into()),
            namespace: Some(ns.into()),
            ..ObjectMeta::default()
        },
        delete_options: None,
    };
    let mut refusals = 0u32;
    loop {
        match pods
            .create_subresource::<Eviction, serde_json::Value>(
                "eviction",
                pod,
                &PostParams::default(),
                &ev,
            )
            .await
        {
            Ok(_) => {
                rec.orchestrator(
                    EventName::PodEvicted,
                    format!("{pod}: the Eviction API accepted it after {refusals} refusal(s)"),
                );
                return Ok(Evicted::Accepted { refusals });
            }
            Err(e) if status_code(&e) == Some(404) => return Ok(Evicted::Gone),
            Err(e) if status_code(&e) == Some(429) => {
                refusals += 1;
                let why = match &e {
                    kube::Error::Api(s) => s.message.clone(),
                    other => other.to_string(),
                };
                rec.orchestrator(
                    EventName::EvictionRefused,
                    format!(
                        "{pod}: 429 ({why}); refusal {refusals}, retrying in {}s",
                        RETRY_AFTER_429.as_secs()
                    ),
                );
                if tokio::time::Instant::now() + RETRY_AFTER_429 > deadline {
                    rec.orchestrator(
                        EventName::EvictionGaveUp,
                        format!("{pod}: still refused after {refusals} attempt(s); the drain's time bound is reached"),
                    );
                    return Ok(Evicted::GaveUp { refusals });
                }
                tokio::time::sleep(RETRY_AFTER_429).await;
            }
            Err(e) => return Err(K8sError::api(format!("evict pod {ns}/{pod}"))(e)),
        }
    }
}
