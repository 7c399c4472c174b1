//! Before any attach trial: the target, its Service and port are resolved and the trigger is
//! checked against them, each refusal a named preflight check; nothing is changed.

use std::time::Duration;

use tokio::time::Instant;

use super::Resolution;
use crate::console;
use crate::evidence::plan::TrialConfig;
use crate::evidence::plan::attach::AttachTarget;
use crate::evidence::trigger::Trigger;
use crate::k8s::client::ClusterAccess;
use crate::k8s::target::{self, Endpoint, Refusal, Workload};
use crate::k8s::{K8sError, access};
use crate::platform::PlatformError;
use crate::platform::kubernetes::{KubernetesPlatform, chain, fail, ok};
use crate::preflight::{self, Check};

fn refusal(t: Instant, r: Refusal) -> PlatformError {
    let (c, why) = match r {
        Refusal::NotFound(w) => (preflight::TARGET_FOUND, w),
        Refusal::NotReady(w) => (preflight::TARGET_READY, w),
        Refusal::Service(w) => (preflight::SERVICE_SELECTS_TARGET, w),
        Refusal::Port(w) => (preflight::SERVICE_PORT, w),
    };
    fail(c, t, why)
}

fn timed<T>(
    check: Check,
    t: Instant,
    limit: std::time::Duration,
    server: &str,
) -> impl FnOnce(Result<Result<T, K8sError>, tokio::time::error::Elapsed>) -> Result<T, PlatformError>
{
    let server = server.to_string();
    move |r| match r {
        Err(_) => Err(fail(
            check,
            t,
            format!("no answer from {server} within {}s", limit.as_secs()),
        )),
        Ok(Err(e)) => Err(fail(check, t, chain(&e))),
        Ok(Ok(v)) => Ok(v),
    }
}

impl KubernetesPlatform {
    /// Resolves the target, its Service and port, and checks the trigger can act on it,
    /// before anything is created or changed.
    pub(in crate::platform::kubernetes) async fn prepare_attach(
        &mut self,
        cfg: &TrialConfig,
    ) -> Result<(), PlatformError> {
        // A policy runs arms one after another on one platform: an arm that deploys the probe
        // must not inherit the previous arm's target.
        self.resolved = None;
        let Some(ask) = cfg.kubernetes.as_ref().and_then(|k| k.attach.clone()) else {
            return Ok(());
        };
        // Read once per arm, before anything is created: the text the client pod's ConfigMap
        // carries (`run` checked the same file before the first trial).
        let ca_pem = match ask.tls.as_ref().and_then(|t| t.ca_file.as_deref()) {
            Some(path) => Some(
                crate::net::attach::tls::read_ca(path)
                    .map_err(|e| PlatformError::Deploy(e.to_string()))?,
            ),
            None => None,
        };
        let access = self.access()?;
        let limit = self.opts.api_timeout;
        let ns = ask
            .target_namespace
            .clone()
            .unwrap_or_else(|| access.client.default_namespace().to_string());
        permissions(&access, limit, cfg.trigger, &ask, &ns).await?;
        let workload = workload(&access, limit, &ask, &ns).await?;
        let endpoint = endpoint(&access, limit, &ask, &workload).await?;
        // A managed controller is deployed and located by each trial, in its namespace.
        let ingress = match ask.ingress.as_ref().map(|it| (it, it.namespace.as_deref())) {
            Some((it, Some(ingress_ns))) => {
                Some(super::ingress::locate(&access, limit, it, ingress_ns).await?)
            }
            _ => None,
        };
        trigger_allowed(&access, limit, cfg.trigger, &ask, &workload).await?;
        console::progress!(
            "drainwatch: target {} in namespace {ns}: service {} ClusterIP {} port {}",
            ask.target,
            endpoint.service,
            endpoint.cluster_ip,
            endpoint.port
        );
        self.resolved = Some(Resolution {
            ask,
            ns,
            workload,
            endpoint,
            ca_pem,
            ingress,
        });
        Ok(())
    }
}

/// The permissions the target's side of the trigger needs, in the target's namespace.
async fn permissions(
    access: &ClusterAccess,
    limit: Duration,
    trigger: Trigger,
    ask: &AttachTarget,
    ns: &str,
) -> Result<(), PlatformError> {
    let client = &access.client;
    let t = Instant::now();
    let (_, target_needs) = access::attach_needs(trigger, ask.target.kind, false);
    let review = |ns: String, needs: Vec<access::Need>| async move {
        tokio::time::timeout(limit, access::denied(client, &ns, &needs))
            .await
            .unwrap_or_else(|_| {
                Err(K8sError::Timeout {
                    action: "the permissions review".into(),
                    server: access.server.clone(),
                    seconds: limit.as_secs(),
                })
            })
            .map_err(|e| fail(preflight::PERMISSIONS, t, chain(&e)))
    };
    let mut denied = review(ns.to_string(), target_needs).await?;
    // Through an ingress: its Service and pods found and their log read, in its namespace; a
    // managed one's Ingress and RoleBinding created beside the target (the trial's side is
    // checked by each trial, in its namespace).
    match ask.ingress.as_ref().map(|it| it.namespace.clone()) {
        Some(Some(ingress_ns)) => denied.extend(review(ingress_ns, access::ingress_needs()).await?),
        Some(None) => {
            denied.extend(review(ns.to_string(), access::ingress_managed_needs().1).await?);
        }
        None => {}
    }
    if !denied.is_empty() {
        return Err(fail(
            preflight::PERMISSIONS,
            t,
            format!(
                "denied: {} (deploy/rbac-attach.yaml grants these)",
                denied.join("; ")
            ),
        ));
    }
    ok(&preflight::PERMISSIONS, t);
    Ok(())
}

/// The target workload, found and ready.
async fn workload(
    access: &ClusterAccess,
    limit: Duration,
    ask: &AttachTarget,
    ns: &str,
) -> Result<Workload, PlatformError> {
    let client = &access.client;
    let t = Instant::now();
    let workload = tokio::time::timeout(limit, target::workload(client, ns, ask))
        .await
        .map_err(|_| ())
        .map_or_else(
            |()| {
                Err(fail(
                    preflight::TARGET_FOUND,
                    t,
                    format!(
                        "no answer from {} within {}s",
                        access.server,
                        limit.as_secs()
                    ),
                ))
            },
            |r| r.map_err(|e| fail(preflight::TARGET_FOUND, t, chain(&e))),
        )?
        .map_err(|r| {
            // Found but not ready: the first check held.
            if matches!(r, Refusal::NotReady(_)) {
                ok(&preflight::TARGET_FOUND, t);
            }
            refusal(t, r)
        })?;
    ok(&preflight::TARGET_FOUND, t);
    ok(&preflight::TARGET_READY, t);
    Ok(workload)
}

/// The Service that selects the target and the port dialled.
async fn endpoint(
    access: &ClusterAccess,
    limit: Duration,
    ask: &AttachTarget,
    workload: &Workload,
) -> Result<Endpoint, PlatformError> {
    let client = &access.client;
    let t = Instant::now();
    let endpoint = timed(preflight::SERVICE_SELECTS_TARGET, t, limit, &access.server)(
        tokio::time::timeout(limit, target::endpoint(client, workload, ask)).await,
    )?
    .map_err(|r| refusal(t, r))?;
    ok(&preflight::SERVICE_SELECTS_TARGET, t);
    ok(&preflight::SERVICE_PORT, t);
    Ok(endpoint)
}

/// The trigger can act on this target: a rollout can restart it, a drain has a second node.
async fn trigger_allowed(
    access: &ClusterAccess,
    limit: Duration,
    trigger: Trigger,
    ask: &AttachTarget,
    workload: &Workload,
) -> Result<(), PlatformError> {
    let client = &access.client;
    let t = Instant::now();
    if let (true, Some(why)) = (trigger == Trigger::RolloutRestart, &workload.no_rollout) {
        return Err(fail(
            preflight::TRIGGER_ALLOWED,
            t,
            format!("{} {why}", ask.target),
        ));
    }
    if trigger == Trigger::DrainNode {
        let nodes = timed(preflight::TRIGGER_ALLOWED, t, limit, &access.server)(
            tokio::time::timeout(limit, target::schedulable_nodes(client)).await,
        )?;
        if nodes.len() < 2 {
            return Err(fail(
                preflight::TRIGGER_ALLOWED,
                t,
                format!(
                    "drain-node needs two Ready, schedulable nodes (one drained, one for the client pod and the replacements); schedulable: {}",
                    nodes
                        .iter()
                        .map(|n| n.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    ok(&preflight::TRIGGER_ALLOWED, t);
    Ok(())
}
