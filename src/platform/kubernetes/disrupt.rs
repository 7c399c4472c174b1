//! The triggers of an attach trial, acting on the user's workload, and the restore of what
//! they changed. Every change is recorded in [`Changes`] before it is made, so that teardown
//! (run after errors and interrupts too) leaves the workload as found: replica count, cordon,
//! deletion-cost annotation. Only rollout-restart's annotation stays, as documented.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use tokio::sync::watch;

use super::attach::AttachTrial;
use super::checks::{self, Poll};
use super::{KubernetesPlatform, chain};
use crate::evidence::event::EventName;
use crate::evidence::plan::TrialConfig;
use crate::evidence::plan::attach::WorkloadKind;
use crate::evidence::timeline::format_wall_ns;
use crate::host;
use crate::k8s::restore::{self, POD_DELETION_COST};
use crate::k8s::{K8sError, drain, rollout, trigger};
use crate::platform::{PlatformError, Triggered};
use crate::trial::preflight;
use crate::trial::recorder::Recorder;

/// The deletion cost that makes the chosen pod the one a scale-down removes: the lowest an
/// int32 annotation can say.
const LOWEST_COST: &str = "-2147483648";

fn trig(e: &crate::k8s::K8sError) -> PlatformError {
    PlatformError::Trigger(format!(
        "{} (deploy/rbac-attach.yaml grants what attach triggers need)",
        chain(e)
    ))
}

/// RFC 3339 to the second, as `kubectl rollout restart` writes restartedAt.
fn now_rfc3339() -> String {
    let w = format_wall_ns(host::wall_ns());
    match w.split_once('.') {
        Some((secs, _)) => format!("{secs}Z"),
        None => w,
    }
}

impl KubernetesPlatform {
    /// Issues the attach trigger on the pod under test or the workload.
    pub(super) async fn trigger_attach(
        &mut self,
        cfg: &TrialConfig,
        rec: &Recorder,
    ) -> Result<Triggered, PlatformError> {
        let access = self.access()?;
        let client = access.client.clone();
        let observe = Duration::from_secs(u64::from(cfg.observe_timeout_seconds));
        let Some(st) = self.trial.as_mut() else {
            return Err(PlatformError::Trigger("nothing was deployed".into()));
        };
        let cancel = st.cancel.clone();
        let Some(a) = st.attach.as_mut() else {
            return Err(PlatformError::Trigger("not an attach trial".into()));
        };
        let Some(put) = a.put.clone() else {
            return Err(PlatformError::Trigger(
                "no pod under test was chosen".into(),
            ));
        };
        let ns = a.res.ns.clone();
        let kind = a.res.ask.target.kind;
        let name = a.res.workload.name.clone();
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        match cfg.trigger.as_str() {
            "delete" => {
                a.victims = vec![put.name.clone()];
                trigger::delete(&pods, &put.name)
                    .await
                    .map_err(|e| trig(&e))
            }
            "evict" => {
                a.victims = vec![put.name.clone()];
                trigger::evict(&pods, &ns, &put.name)
                    .await
                    .map_err(|e| trig(&e))
            }
            "scale" if kind == WorkloadKind::StatefulSet => {
                // The controller removes the highest ordinal, which preflight chose as the pod
                // under test: no annotation can change that, so none is set.
                let replicas = a.res.workload.replicas;
                a.victims = vec![put.name.clone()];
                a.changes.replicas = Some((kind, name.clone(), replicas));
                restore::scale(&client, &ns, kind, &name, replicas - 1)
                    .await
                    .map_err(|e| trig(&e))?;
                Ok(Triggered::Issued(format!(
                    "statefulset {ns}/{name} scaled from {replicas} to {} replicas; pod {} (its highest ordinal, which a StatefulSet scale-down always removes) is the one removed; the replicas are restored at the end",
                    replicas - 1,
                    put.name
                )))
            }
            "scale" => {
                // The annotation's value before, so that the restore puts it back.
                let before = pods
                    .get(&put.name)
                    .await
                    .map_err(|e| trig(&K8sError::api(format!("get pod {ns}/{}", put.name))(e)))?
                    .metadata
                    .annotations
                    .and_then(|m| m.get(POD_DELETION_COST).cloned());
                let replicas = a.res.workload.replicas;
                a.changes.deletion_cost = Some((put.name.clone(), before));
                restore::set_deletion_cost(&pods, &put.name, Some(LOWEST_COST))
                    .await
                    .map_err(|e| trig(&e))?;
                rec.orchestrator(
                    EventName::PodDeletionCostSet,
                    format!(
                        "{} annotated {POD_DELETION_COST}={LOWEST_COST}, so the scale-down removes it",
                        put.name
                    ),
                );
                a.victims = vec![put.name.clone()];
                a.changes.replicas = Some((kind, name.clone(), replicas));
                restore::scale(&client, &ns, kind, &name, replicas - 1)
                    .await
                    .map_err(|e| trig(&e))?;
                Ok(Triggered::Issued(format!(
                    "{} {ns}/{name} scaled from {replicas} to {} replicas; pod {} (lowest deletion cost) is the one removed; the replicas are restored at the end",
                    kind.as_str(),
                    replicas - 1,
                    put.name
                )))
            }
            "rollout-restart" => {
                let at = now_rfc3339();
                a.changes.restarted_at = Some(at.clone());
                let generation = rollout::restart(&client, kind, &ns, &name, &at)
                    .await
                    .map_err(|e| trig(&e))?;
                let (done_tx, done) = watch::channel(false);
                a.action_done = Some(done);
                st.tasks.push(rollout::follow(
                    client,
                    kind,
                    ns.clone(),
                    name.clone(),
                    rec.clone(),
                    done_tx,
                    cancel,
                ));
                Ok(Triggered::Issued(format!(
                    "{} {ns}/{name} patched with {}={at} as kubectl rollout restart does (generation {generation}); the rollout is followed to completion; this annotation stays",
                    kind.as_str(),
                    rollout::RESTARTED_AT
                )))
            }
            "drain-node" => {
                let Some(node) = put.node.clone() else {
                    return Err(PlatformError::Trigger(format!(
                        "pod {} is not bound to a node",
                        put.name
                    )));
                };
                let on_node: Vec<String> = a
                    .pods
                    .borrow()
                    .pods
                    .values()
                    .filter(|p| p.node.as_deref() == Some(&node) && p.deletion.is_none())
                    .map(|p| p.name.clone())
                    .collect();
                // Recorded before the patch: should the call be cut, uncordoning a node that
                // was schedulable is the restore.
                a.changes.cordoned = Some(node.clone());
                let was = drain::set_unschedulable(&client, &node, true)
                    .await
                    .map_err(|e| trig(&e))?;
                if was {
                    // It was cordoned before the trial: leave it so.
                    a.changes.cordoned = None;
                }
                rec.orchestrator(
                    EventName::NodeCordoned,
                    format!(
                        "{node}{}; evicting the target's pods on it: {}",
                        if was { " (was already cordoned)" } else { "" },
                        on_node.join(", ")
                    ),
                );
                a.victims.clone_from(&on_node);
                let (done_tx, done) = watch::channel(false);
                a.action_done = Some(done);
                let rec2 = rec.clone();
                let deadline = tokio::time::Instant::now() + observe;
                let ns2 = ns.clone();
                st.tasks.push(tokio::spawn(async move {
                    for p in &on_node {
                        tokio::select! {
                            () = cancel.cancelled() => return,
                            r = drain::evict(&pods, &ns2, p, deadline, &rec2) => {
                                if let Err(e) = r {
                                    rec2.orchestrator(EventName::EvictionFailed, format!("{p}: {}", chain(&e)));
                                }
                            }
                        }
                    }
                    rec2.orchestrator(
                        EventName::DrainEvictionsDone,
                        format!("every target pod on the drained node was evicted or given up on: {}", on_node.join(", ")),
                    );
                    let _ = done_tx.send(true);
                }));
                Ok(Triggered::Issued(format!(
                    "node {node} cordoned; the target's pods on it are evicted through the Eviction API, retrying on 429 for up to {}s; it is uncordoned at the end",
                    observe.as_secs()
                )))
            }
            other => Err(PlatformError::Trigger(format!(
                "unknown attach trigger {other:?}"
            ))),
        }
    }

    /// Resolves once the disruption is over: the trigger's action done, every pod it
    /// terminated gone from the API and from the Service's endpoints, and as many pods ready
    /// as before (one fewer after a scale-down), none of them on a drained node.
    pub(super) async fn settled_attach(&mut self, limit: Duration) {
        let Some(a) = self.trial.as_ref().and_then(|s| s.attach.as_ref()) else {
            return;
        };
        let rec = a.rec.clone();
        let trigger = a.trigger.clone();
        let (pods, slices) = (a.pods.clone(), a.slices.clone());
        let done = a.action_done.clone();
        let victims = a.victims.clone();
        let drained = (trigger == "drain-node")
            .then(|| a.put.as_ref().and_then(|p| p.node.clone()))
            .flatten();
        let want = if trigger == "scale" {
            a.baseline_ready.saturating_sub(1)
        } else {
            a.baseline_ready
        };
        let r = checks::wait(preflight::POD_READY, limit, || {
            if done.as_ref().is_some_and(|d| !*d.borrow()) {
                return Poll::Waiting("the trigger's action is not complete".into());
            }
            let (p, s) = (pods.borrow(), slices.borrow());
            // Every pod that was asked to terminate (the victims, and any pod of the old
            // revision a rollout deleted) must be gone from the API and the endpoints.
            let terminating: Vec<&String> = p
                .pods
                .values()
                .filter(|x| x.deletion.is_some())
                .map(|x| &x.name)
                .chain(victims.iter().filter(|v| !p.gone_by_name(v)))
                .collect();
            if let Some(v) = terminating.first() {
                return Poll::Waiting(format!("pod {v} still terminating"));
            }
            // By uid: a StatefulSet's replacement is listed under the name that left.
            if let Some((v, _)) = p
                .gone
                .iter()
                .find(|(name, uid)| s.listed(name, uid.as_deref()))
            {
                return Poll::Waiting(format!("pod {v} still listed in an EndpointSlice"));
            }
            let ready: Vec<_> = p
                .ready()
                .filter(|x| s.ready(&x.name))
                .filter(|x| drained.is_none() || x.node != drained)
                .collect();
            if ready.len() < want {
                return Poll::Waiting(format!("{} of {want} pods ready", ready.len()));
            }
            Poll::Ready(
                ready
                    .iter()
                    .map(|x| format!("{} on {}", x.name, x.node.as_deref().unwrap_or("unknown")))
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        })
        .await;
        let _ = match r {
            Ok(pods) => rec.orchestrator(
                EventName::DisruptionSettled,
                format!(
                    "every terminated pod is gone and out of the endpoints; ready with ready endpoints: {pods}"
                ),
            ),
            Err((_, why)) => rec.orchestrator(EventName::DisruptionNotSettled, why),
        };
    }
}

/// Undoes what the trial changed on the target; returns the failures as one message.
pub(super) async fn restore(
    client: &kube::Client,
    a: &AttachTrial,
    rec: &Recorder,
) -> Result<(), String> {
    if a.changes.is_empty() && a.changes.restarted_at.is_none() {
        return Ok(());
    }
    let (done, err) = restore::undo(client, &a.res.ns, &a.changes).await;
    for d in &done {
        rec.orchestrator(EventName::WorkloadRestored, d.clone());
        eprintln!("drainwatch: restored: {d}");
    }
    match err {
        None => Ok(()),
        Some(e) => {
            let mut left = Vec::new();
            if let Some((kind, name, n)) = &a.changes.replicas {
                left.push(format!(
                    "kubectl -n {} scale {}/{name} --replicas {n}",
                    a.res.ns,
                    kind.as_str()
                ));
            }
            if let Some(node) = &a.changes.cordoned {
                left.push(format!("kubectl uncordon {node}"));
            }
            let msg = format!(
                "failed to restore the workload ({}); check and, if needed, run: {}",
                chain(&e),
                left.join("; ")
            );
            rec.orchestrator(EventName::WorkloadRestoreFailed, msg.clone());
            Err(msg)
        }
    }
}
