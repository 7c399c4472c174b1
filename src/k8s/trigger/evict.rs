//! `evict`: the policy/v1 Eviction API, written once. The probe and attach triggers make one
//! attempt (a PodDisruptionBudget's 429 is an answer, not an error); `drain-node` retries on
//! 429 as `kubectl drain` does.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::Eviction;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::PostParams;

use crate::evidence::event::EventName;
use crate::evidence::trigger::Triggered;
use crate::k8s::{K8sError, status_code};
use crate::recorder::Recorder;

/// The pause between eviction attempts after a 429, as `kubectl drain` waits.
pub const RETRY_AFTER_429: Duration = Duration::from_secs(5);

/// The API server's answer to one Eviction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Accepted: the pod is terminating.
    Accepted,
    /// 429: a PodDisruptionBudget does not allow it now; the server's message names it.
    Refused(String),
    /// 404: the pod is already gone.
    Gone,
}

/// Posts one Eviction for `pod`. The body is a typed policy/v1 Eviction without
/// deleteOptions, so the pod's own grace period applies (kube's `evict` helper serialises the
/// options under a key the API server ignores, so it is not used).
pub async fn post(pods: &Api<Pod>, ns: &str, pod: &str) -> Result<Answer, K8sError> {
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
        Ok(_) => Ok(Answer::Accepted),
        Err(e) if status_code(&e) == Some(404) => Ok(Answer::Gone),
        Err(e) if status_code(&e) == Some(429) => Ok(Answer::Refused(match &e {
            kube::Error::Api(s) => s.message.clone(),
            other => other.to_string(),
        })),
        Err(e) => Err(K8sError::api(format!("evict pod {ns}/{pod}"))(e)),
    }
}

/// The `evict` trigger: one attempt; a refusal blocks the trial (status blocked-by-pdb).
pub async fn once(pods: &Api<Pod>, ns: &str, pod: &str) -> Result<Triggered, K8sError> {
    match post(pods, ns, pod).await? {
        Answer::Accepted => Ok(Triggered::Issued(format!(
            "pod {pod} evicted (policy/v1 Eviction accepted)"
        ))),
        Answer::Refused(why) => Ok(Triggered::Blocked(format!(
            "the Eviction API refused to evict pod {pod} with 429: {why}; drainwatch makes one attempt and does not retry"
        ))),
        Answer::Gone => Err(K8sError::Gone(format!("pod {ns}/{pod}"))),
    }
}

/// How one pod's eviction ended under retries.
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
pub async fn retrying(
    pods: &Api<Pod>,
    ns: &str,
    pod: &str,
    deadline: tokio::time::Instant,
    rec: &Recorder,
) -> Result<Evicted, K8sError> {
    let mut refusals = 0u32;
    loop {
        match post(pods, ns, pod).await? {
            Answer::Accepted => {
                rec.orchestrator(
                    EventName::PodEvicted,
                    format!("{pod}: the Eviction API accepted it after {refusals} refusal(s)"),
                );
                return Ok(Evicted::Accepted { refusals });
            }
            Answer::Gone => return Ok(Evicted::Gone),
            Answer::Refused(why) => {
                refusals += 1;
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
        }
    }
}
