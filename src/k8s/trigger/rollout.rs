//! `rollout-restart`: the pod template annotation `kubectl rollout restart` sets, then the
//! rollout followed to completion with a watch on the workload (never polling), recording each
//! step of its status. The annotation stays: it is the one documented change an attach trial
//! leaves behind (undoing it would roll the workload a second time).

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, watcher};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{Changes, Ongoing};
use crate::evidence::event::EventName;
use crate::evidence::plan::attach::WorkloadKind;
use crate::evidence::trigger::Triggered;
use crate::k8s::K8sError;
use crate::recorder::Recorder;

/// The annotation `kubectl rollout restart` puts on the pod template.
pub const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";

/// Where a rollout stands, from the workload's generation and status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RolloutStatus {
    /// metadata.generation.
    pub generation: i64,
    /// status.observedGeneration.
    pub observed_generation: i64,
    /// spec.replicas.
    pub desired: i32,
    /// status.replicas (pods of every revision, not terminating).
    pub replicas: i32,
    /// status.updatedReplicas.
    pub updated: i32,
    /// status.availableReplicas (readyReplicas for a StatefulSet).
    pub available: i32,
    /// StatefulSet: currentRevision == updateRevision.
    pub revision_current: bool,
    /// StatefulSet: spec.updateStrategy.rollingUpdate.partition; the ordinals below it keep
    /// their revision, so a partitioned rollout ends with fewer updated replicas and the
    /// current revision never catching up (0 for a Deployment).
    pub partition: i32,
}

impl RolloutStatus {
    /// Whether the rollout is complete, by the rules `kubectl rollout status` applies.
    pub fn complete(&self) -> bool {
        let p = self.partition.clamp(0, self.desired.max(0));
        self.observed_generation >= self.generation
            && self.updated >= self.desired - p
            && self.replicas <= self.updated + p
            && self.available >= self.updated
            && (p > 0 || self.revision_current)
    }

    /// `observedGeneration=3/3 updated=2/2 replicas=2 available=2`.
    pub fn describe(&self) -> String {
        format!(
            "observedGeneration={}/{} updatedReplicas={}/{} replicas={} availableReplicas={}",
            self.observed_generation,
            self.generation,
            self.updated,
            self.desired,
            self.replicas,
            self.available
        )
    }

    /// The status of a Deployment.
    pub fn of_deployment(d: &Deployment) -> Self {
        let st = d.status.clone().unwrap_or_default();
        Self {
            generation: d.metadata.generation.unwrap_or(0),
            observed_generation: st.observed_generation.unwrap_or(0),
            desired: d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
            replicas: st.replicas.unwrap_or(0),
            updated: st.updated_replicas.unwrap_or(0),
            available: st.available_replicas.unwrap_or(0),
            revision_current: true,
            partition: 0,
        }
    }

    /// The status of a StatefulSet.
    pub fn of_statefulset(s: &StatefulSet) -> Self {
        let st = s.status.clone().unwrap_or_default();
        Self {
            generation: s.metadata.generation.unwrap_or(0),
            observed_generation: st.observed_generation.unwrap_or(0),
            desired: s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
            replicas: st.replicas,
            updated: st.updated_replicas.unwrap_or(0),
            available: st.ready_replicas.unwrap_or(0),
            revision_current: st.update_revision.is_none()
                || st.current_revision == st.update_revision,
            partition: s
                .spec
                .as_ref()
                .and_then(|s| s.update_strategy.as_ref())
                .and_then(|u| u.rolling_update.as_ref())
                .and_then(|r| r.partition)
                .unwrap_or(0),
        }
    }
}

/// The merge patch `kubectl rollout restart` sends, with `at` (RFC 3339) as the value.
pub fn restart_patch(at: &str) -> serde_json::Value {
    serde_json::json!({
        "spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: at}}}}
    })
}

/// Patches the restart annotation; returns the generation the patch produced.
pub async fn restart(
    client: &kube::Client,
    kind: WorkloadKind,
    ns: &str,
    name: &str,
    at: &str,
) -> Result<i64, K8sError> {
    let patch = Patch::Merge(restart_patch(at));
    let pp = PatchParams::default();
    let what = format!(
        "patch {} {ns}/{name} with {RESTARTED_AT}={at}",
        kind.as_str()
    );
    let generation = match kind {
        WorkloadKind::Deployment => {
            Api::<Deployment>::namespaced(client.clone(), ns)
                .patch(name, &pp, &patch)
                .await
                .map_err(K8sError::api(what))?
                .metadata
                .generation
        }
        WorkloadKind::StatefulSet => {
            Api::<StatefulSet>::namespaced(client.clone(), ns)
                .patch(name, &pp, &patch)
                .await
                .map_err(K8sError::api(what))?
                .metadata
                .generation
        }
    };
    Ok(generation.unwrap_or(0))
}

/// The rollout-restart of an attached workload.
pub struct RolloutRestart {
    /// The API client.
    pub client: kube::Client,
    /// Deployment or StatefulSet.
    pub kind: WorkloadKind,
    /// The workload's namespace.
    pub ns: String,
    /// The workload's name.
    pub name: String,
    /// The restartedAt value (RFC 3339 to the second, as kubectl writes it).
    pub at: String,
}

impl RolloutRestart {
    /// Patches the restart annotation (noted in `changes`, documented and not undone) and
    /// follows the rollout to completion.
    pub async fn issue(
        self,
        changes: &mut Changes,
        rec: &Recorder,
        cancel: CancellationToken,
    ) -> Result<Ongoing, K8sError> {
        let Self {
            client,
            kind,
            ns,
            name,
            at,
        } = self;
        changes.restarted_at = Some(at.clone());
        let generation = restart(&client, kind, &ns, &name, &at).await?;
        let triggered = Triggered::Issued(format!(
            "{} {ns}/{name} patched with {RESTARTED_AT}={at} as kubectl rollout restart does (generation {generation}); the rollout is followed to completion; this annotation stays",
            kind.as_str()
        ));
        let (done_tx, done) = watch::channel(false);
        let task = follow(client, kind, ns, name, rec.clone(), done_tx, cancel);
        Ok(Ongoing {
            triggered,
            task,
            done,
        })
    }
}

/// Follows the rollout of `kind/name` with a watch until it is complete (publishing `true` on
/// `done`) or `cancel`; every change of its status is recorded as `rollout_progress`.
pub fn follow(
    client: kube::Client,
    kind: WorkloadKind,
    ns: String,
    name: String,
    rec: Recorder,
    done: watch::Sender<bool>,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let mut last: Option<RolloutStatus> = None;
        let mut on_status = |s: RolloutStatus| -> bool {
            if last.as_ref() != Some(&s) {
                rec.orchestrator(
                    EventName::RolloutProgress,
                    format!("{}/{name} {}", kind.as_str(), s.describe()),
                );
            }
            let complete = s.complete();
            last = Some(s);
            complete
        };
        macro_rules! run {
            ($api:expr, $of:expr) => {{
                let stream = watcher($api, cfg).default_backoff().applied_objects();
                let mut stream = std::pin::pin!(stream);
                loop {
                    let obj = tokio::select! {
                        () = cancel.cancelled() => return,
                        o = stream.next() => o,
                    };
                    match obj {
                        None => return,
                        Some(Err(e)) => {
                            rec.orchestrator(
                                EventName::RolloutWatchInterrupted,
                                format!(
                                    "the {} watch failed ({e}); retrying with backoff",
                                    kind.as_str()
                                ),
                            );
                        }
                        Some(Ok(o)) => {
                            if on_status($of(&o)) {
                                break;
                            }
                        }
                    }
                }
            }};
        }
        match kind {
            WorkloadKind::Deployment => run!(
                Api::<Deployment>::namespaced(client, &ns),
                RolloutStatus::of_deployment
            ),
            WorkloadKind::StatefulSet => run!(
                Api::<StatefulSet>::namespaced(client, &ns),
                RolloutStatus::of_statefulset
            ),
        }
        rec.orchestrator(
            EventName::RolloutComplete,
            format!(
                "{}/{name} rolled out: {}",
                kind.as_str(),
                last.as_ref()
                    .map_or_else(String::new, RolloutStatus::describe)
            ),
        );
        let _ = done.send(true);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollout_is_complete_as_kubectl_judges_it() {
        let done = RolloutStatus {
            generation: 3,
            observed_generation: 3,
            desired: 2,
            replicas: 2,
            updated: 2,
            available: 2,
            revision_current: true,
            partition: 0,
        };
        assert!(done.complete());
        let stale = RolloutStatus {
            observed_generation: 2,
            ..done.clone()
        };
        assert!(!stale.complete(), "the controller has not seen the patch");
        let old_left = RolloutStatus {
            replicas: 3,
            ..done.clone()
        };
        assert!(!old_left.complete(), "an old replica still runs");
        let unavailable = RolloutStatus {
            available: 1,
            ..done.clone()
        };
        assert!(!unavailable.complete());
        // A StatefulSet's controller moves currentRevision last, once every pod is updated.
        let sts_mid = RolloutStatus {
            revision_current: false,
            ..done.clone()
        };
        assert!(!sts_mid.complete(), "the revision has not caught up");
        let partitioned = RolloutStatus {
            partition: 1,
            updated: 1,
            revision_current: false,
            ..done.clone()
        };
        assert!(partitioned.complete(), "ordinal 0 stays at its revision");
        let partitioned_mid = RolloutStatus {
            updated: 0,
            ..partitioned.clone()
        };
        assert!(!partitioned_mid.complete());
        assert_eq!(
            done.describe(),
            "observedGeneration=3/3 updatedReplicas=2/2 replicas=2 availableReplicas=2"
        );
    }

    fn sts(status: serde_json::Value, partition: Option<i32>) -> StatefulSet {
        let mut spec = serde_json::json!({
            "replicas": 2,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}}
        });
        if let Some(p) = partition {
            spec["updateStrategy"] =
                serde_json::json!({"type": "RollingUpdate", "rollingUpdate": {"partition": p}});
        }
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "db", "generation": 2},
            "spec": spec,
            "status": status
        }))
        .unwrap()
    }

    #[test]
    fn a_statefulset_rollout_is_followed_by_its_revisions() {
        // Every pod updated and ready, but the controller has not yet moved currentRevision.
        let mid = sts(
            serde_json::json!({"observedGeneration": 2, "replicas": 2, "readyReplicas": 2,
                "updatedReplicas": 2, "currentRevision": "db-1", "updateRevision": "db-2"}),
            None,
        );
        let s = RolloutStatus::of_statefulset(&mid);
        assert_eq!((s.desired, s.updated, s.available), (2, 2, 2));
        assert!(!s.complete());
        let done = sts(
            serde_json::json!({"observedGeneration": 2, "replicas": 2, "readyReplicas": 2,
                "updatedReplicas": 2, "currentRevision": "db-2", "updateRevision": "db-2"}),
            None,
        );
        assert!(RolloutStatus::of_statefulset(&done).complete());
        let part = sts(
            serde_json::json!({"observedGeneration": 2, "replicas": 2, "readyReplicas": 2,
                "updatedReplicas": 1, "currentRevision": "db-1", "updateRevision": "db-2"}),
            Some(1),
        );
        let s = RolloutStatus::of_statefulset(&part);
        assert_eq!(s.partition, 1);
        assert!(s.complete(), "ordinal 0 is below the partition");
    }

    #[test]
    fn the_patch_is_kubectls() {
        assert_eq!(
            restart_patch("2026-11-30T19:00:00Z").to_string(),
            r#"{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-11-30T19:00:00Z"}}}}}"#
        );
    }
}
