//! The triggers of an attach trial, acting on the user's workload, and the restore of what
//! they changed. Every change is recorded in [`Changes`] before it is made, so that teardown
//! (run after errors and interrupts too) leaves the workload as found: replica count, cordon,
//! deletion-cost annotation. Only rollout-restart's annotation stays, as documented.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;

use super::attach::AttachTrial;
use super::checks::{self, Poll};
use super::{KubernetesPlatform, chain};
use crate::console;
use crate::evidence::event::EventName;
use crate::evidence::plan::TrialConfig;
use crate::evidence::timeline::format_wall_ns;
use crate::evidence::trigger::Trigger;
use crate::evidence::trigger::Triggered;
use crate::host;
use crate::k8s::K8sError;
use crate::k8s::trigger::drain::DrainNode;
use crate::k8s::trigger::restore;
use crate::k8s::trigger::rollout::RolloutRestart;
use crate::k8s::trigger::scale::ScaleDown;
use crate::k8s::trigger::{delete, evict};
use crate::platform::PlatformError;
use crate::preflight;
use crate::recorder::Recorder;

fn trig(source: K8sError) -> PlatformError {
    PlatformError::TriggerCall {
        hint: "deploy/rbac-attach.yaml grants what attach triggers need",
        source,
    }
}

/// The attached workload could not be restored; `left` is what to run by hand.
#[derive(Debug, thiserror::Error)]
#[error("failed to restore the workload; check and, if needed, run: {left}")]
pub struct RestoreError {
    /// The commands that undo what is left, `; `-joined.
    left: String,
    /// Why the restore failed.
    #[source]
    source: K8sError,
}

/// RFC 3339 to the second, as `kubectl rollout restart` writes restartedAt.
fn now_rfc3339() -> String {
    let w = format_wall_ns(host::wall_ns());
    match w.split_once('.') {
        Some((secs, _)) => format!("{secs}Z"),
        None => w,
    }
}

/// The drain of the pod under test's node: the target's pods on it (not terminating) are the
/// victims, named before the cordon.
fn drain_of_put_node(
    a: &mut AttachTrial,
    client: kube::Client,
    ns: String,
    observe: Duration,
) -> Result<DrainNode, PlatformError> {
    let Some(put) = a.put.as_ref() else {
        return Err(PlatformError::Trigger(
            "no pod under test was chosen".into(),
        ));
    };
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
    a.victims.clone_from(&on_node);
    Ok(DrainNode {
        client,
        ns,
        node,
        on_node,
        observe,
    })
}

impl KubernetesPlatform {
    /// Issues the attach trigger on the pod under test or the workload. The victims (the pods
    /// the trigger terminates) are named before the call, and every change to the workload is
    /// in `changes` before it is made.
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
        let super::TrialMode::Attach(a) = &mut st.mode else {
            return Err(PlatformError::Trigger("not an attach trial".into()));
        };
        let Some(put) = a.put.clone() else {
            return Err(PlatformError::Trigger(
                "no pod under test was chosen".into(),
            ));
        };
        let ns = a.res.ns.clone();
        let (kind, name) = (a.res.ask.target.kind, a.res.workload.name.clone());
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let ongoing = match cfg.trigger {
            Trigger::Delete => {
                a.victims = vec![put.name.clone()];
                return delete::pod(&pods, &put.name).await.map_err(trig);
            }
            Trigger::Evict => {
                a.victims = vec![put.name.clone()];
                return evict::once(&pods, &ns, &put.name).await.map_err(trig);
            }
            Trigger::Scale => {
                a.victims = vec![put.name.clone()];
                let down = ScaleDown {
                    client: &client,
                    ns: &ns,
                    kind,
                    name: &name,
                    replicas: a.res.workload.replicas,
                    victim: &put.name,
                };
                return down.issue(&mut a.changes, rec).await.map_err(trig);
            }
            Trigger::RolloutRestart => {
                let restart = RolloutRestart {
                    client,
                    kind,
                    ns,
                    name,
                    at: now_rfc3339(),
                };
                restart.issue(&mut a.changes, rec, cancel).await
            }
            Trigger::DrainNode => {
                let drain = drain_of_put_node(a, client, ns, observe)?;
                drain.issue(&mut a.changes, rec, cancel).await
            }
            // The plan accepts only the attach triggers with --target.
            t @ (Trigger::Sigterm | Trigger::Manual) => {
                return Err(PlatformError::TriggerNotAccepted(t));
            }
        }
        .map_err(trig)?;
        a.action_done = Some(ongoing.done);
        st.tasks.push(ongoing.task);
        Ok(ongoing.triggered)
    }

    /// Resolves once the disruption is over: the trigger's action done, every pod it
    /// terminated gone from the API and from the Service's endpoints, and as many pods ready
    /// as before (one fewer after a scale-down), none of them on a drained node.
    pub(super) async fn settled_attach(&mut self, limit: Duration) {
        let Some(a) = self.trial.as_ref().and_then(|s| s.attach()) else {
            return;
        };
        let rec = a.rec.clone();
        let trigger = a.trigger;
        let (pods, slices) = (a.pods.clone(), a.slices.clone());
        let done = a.action_done.clone();
        let victims = a.victims.clone();
        let drained = (trigger == Trigger::DrainNode)
            .then(|| a.put.as_ref().and_then(|p| p.node.clone()))
            .flatten();
        let want = if trigger == Trigger::Scale {
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
                // A victim the Eviction API never let go (a PDB) is asked to leave, not leaving.
                return Poll::Waiting(format!("pod {v} asked to terminate and not yet gone"));
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

/// Undoes what the trial changed on the target; a failure names what is left to undo.
pub(super) async fn restore(
    client: &kube::Client,
    a: &AttachTrial,
    rec: &Recorder,
) -> Result<(), RestoreError> {
    if a.changes.is_empty() && a.changes.restarted_at.is_none() {
        return Ok(());
    }
    let (done, err) = restore::undo(client, &a.res.ns, &a.changes, rec).await;
    for d in &done {
        rec.orchestrator(EventName::WorkloadRestored, d.clone());
        console::progress!("drainwatch: restored: {d}");
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
            let left = left.join("; ");
            let msg = format!(
                "failed to restore the workload ({}); check and, if needed, run: {left}",
                chain(&e),
            );
            rec.orchestrator(EventName::WorkloadRestoreFailed, msg);
            Err(RestoreError { left, source: e })
        }
    }
}
