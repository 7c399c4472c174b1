//! Before an attach trial's flows: the target's watches have listed, the pod under test is
//! chosen among the ready pods with a ready endpoint, and (drain-node) the node the client pod
//! is pinned to.

use tokio::sync::watch;
use tokio::time::{Duration, Instant};

use crate::evidence::event::EventName;
use crate::evidence::plan::TrialConfig;
use crate::evidence::plan::attach::WorkloadKind;
use crate::evidence::trigger::Trigger;
use crate::k8s::client::ClusterAccess;
use crate::k8s::lanes::{TargetPods, TargetSlices};
use crate::k8s::target::{self, SchedulableNode};
use crate::k8s::translate::PodFacts;
use crate::platform::PlatformError;
use crate::platform::kubernetes::checks::{self, Poll};
use crate::platform::kubernetes::{KubernetesPlatform, chain, fail, ok};
use crate::preflight;
use crate::recorder::Recorder;

impl KubernetesPlatform {
    /// Waits for the target's watches to list and a ready pod with a ready endpoint, chooses
    /// the pod under test, and (drain-node) the node the client pod is pinned to.
    pub(in crate::platform::kubernetes) async fn preflight_attach(
        &mut self,
        cfg: &TrialConfig,
        rec: &Recorder,
    ) -> Result<(), PlatformError> {
        let access = self.access()?;
        let ready = self.opts.ready_timeout;
        let Some(a) = self.trial.as_mut().and_then(|s| s.attach_mut()) else {
            return Err(PlatformError::Deploy("nothing was deployed".into()));
        };
        let t = Instant::now();
        let (pods, slices) = (a.pods.clone(), a.slices.clone());
        // A StatefulSet scale-down removes its highest ordinal: that pod is the one under test.
        let sts_scale = (cfg.trigger == Trigger::Scale
            && a.res.ask.target.kind == WorkloadKind::StatefulSet)
            .then(|| a.res.workload.name.clone());
        let how = if sts_scale.is_some() {
            "the highest ordinal, which a StatefulSet scale-down removes whatever the pod-deletion-cost"
        } else {
            "the first ready pod by name with a ready endpoint"
        };
        // A freshly deployed Service: its endpoints may still be being programmed.
        let replicas = usize::try_from(a.res.workload.replicas).unwrap_or(0);
        // Pods still terminating (an earlier rollout's) would be lanes the trial did not
        // cause: wait them out first, within the same --ready-timeout.
        let ep = Instant::now();
        let waited = super::endpoints::not_terminating(&pods, ready)
            .await
            .map_err(|(c, why)| fail(c, ep, why))?;
        ok(&preflight::TARGET_NOT_TERMINATING, ep);
        let waited = waited
            .map(|w| {
                format!(
                    "; first waited {} ms until no pod was terminating (last seen: {w})",
                    ep.elapsed().as_millis()
                )
            })
            .unwrap_or_default();
        let left = ready.saturating_sub(ep.elapsed());
        let settled = super::endpoints::settled(&pods, &slices, replicas, left)
            .await
            .map_err(|(c, why)| fail(c, ep, why))?;
        ok(&preflight::TARGET_ENDPOINTS_READY, ep);
        rec.orchestrator(
            EventName::TargetEndpointsSettled,
            format!(
                "after {} ms: {settled}, unchanged for {} s{waited}",
                ep.elapsed().as_millis(),
                super::endpoints::SETTLE.as_secs()
            ),
        );
        let put = choose_put(&pods, &slices, sts_scale.as_deref(), ready)
            .await
            .map_err(|(c, why)| fail(c, t, why))?;
        ok(&preflight::TARGET_READY, t);
        let (n_ready, total) = {
            let p = pods.borrow();
            (p.ready().count(), p.pods.len())
        };
        a.baseline_ready = n_ready;
        rec.orchestrator(
            EventName::PodUnderTestChosen,
            format!(
                "{} on node {} ({}): {how}, of {total} pods ({n_ready} ready)",
                put.name,
                put.node.as_deref().unwrap_or("unknown"),
                put.host_ip.as_deref().unwrap_or("unknown")
            ),
        );
        // One client pod is pinned off the drained node here; shards are placed, off it too,
        // with the others (shard_pods::plan), so no pin of one pod is chosen or recorded for them.
        if cfg.trigger == Trigger::DrainNode && cfg.clients == 1 {
            a.client_node = Some(client_node(&access, &put, rec).await?);
        }
        a.put = Some(put);
        Ok(())
    }
}

/// The pod under test: the first ready pod by name with a ready endpoint (the highest ordinal
/// for a StatefulSet scale-down), once both watches have listed.
async fn choose_put(
    pods: &watch::Receiver<TargetPods>,
    slices: &watch::Receiver<TargetSlices>,
    sts_scale: Option<&str>,
    ready: Duration,
) -> Result<PodFacts, (preflight::Check, String)> {
    checks::wait(preflight::TARGET_READY, ready, || {
        let (p, s) = (pods.borrow(), slices.borrow());
        if !p.synced || !s.synced {
            return Poll::Waiting(
                "the target's pod and EndpointSlice watches have not listed yet".into(),
            );
        }
        let top = sts_scale.and_then(|sts| {
            target::highest_ordinal(
                sts,
                p.pods
                    .values()
                    .filter(|x| x.deletion.is_none())
                    .map(|x| x.name.as_str()),
            )
        });
        let chosen = p
            .ready()
            .filter(|pod| sts_scale.is_none() || top == Some(pod.name.as_str()))
            .find(|pod| s.ready(&pod.name));
        match chosen {
            Some(pod) => Poll::Ready(pod.clone()),
            None => Poll::Waiting(format!(
                "no ready pod with a ready endpoint{}; pods: {}",
                top.map(|t| format!(" among {t} (the highest ordinal)"))
                    .unwrap_or_default(),
                p.pods
                    .values()
                    .map(|pod| format!(
                        "{} ready={} endpoint-ready={}{}",
                        pod.name,
                        pod.is_ready(),
                        s.ready(&pod.name),
                        if pod.deletion.is_some() {
                            " (terminating)"
                        } else {
                            ""
                        }
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
        }
    })
    .await
}

/// The node the client pod is pinned to for drain-node: Ready, schedulable, and not the pod
/// under test's.
async fn client_node(
    access: &ClusterAccess,
    put: &PodFacts,
    rec: &Recorder,
) -> Result<SchedulableNode, PlatformError> {
    let t = Instant::now();
    let nodes = target::schedulable_nodes(&access.client)
        .await
        .map_err(|e| fail(preflight::TRIGGER_ALLOWED, t, chain(&e)))?;
    let Some(other) = nodes
        .into_iter()
        .find(|n| Some(&n.name) != put.node.as_ref())
    else {
        return Err(fail(
            preflight::TRIGGER_ALLOWED,
            t,
            format!(
                "no Ready, schedulable node other than {} for the client pod and the replacements",
                put.node.as_deref().unwrap_or("unknown")
            ),
        ));
    };
    rec.orchestrator(
        EventName::ClientNodeChosen,
        format!(
            "the client pod is pinned to node {} ({}={}), which drain-node does not drain",
            other.name,
            target::HOSTNAME_LABEL,
            other.hostname
        ),
    );
    ok(&preflight::TRIGGER_ALLOWED, t);
    Ok(other)
}
