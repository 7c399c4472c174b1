//! Attach on the Kubernetes platform: no probe is deployed; the user's Deployment or
//! StatefulSet is resolved with its Service and port before anything is changed (each refusal a
//! named preflight check), every one of its pods is watched as its own lane, and a client pod in
//! drainwatch's own namespace runs `drainwatch client --attach` against the Service's ClusterIP.
//! The trigger and the restore of what it changed are in [`super::disrupt`].

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use kube::api::PostParams;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod choose;
mod endpoints;
pub(super) mod ingress;
mod ingress_view;
pub(super) mod managed;
mod prepare;

use super::names::{TrialNames, open_namespace};
use super::{KubernetesPlatform, TrialMode, TrialState};
use crate::evidence::attach::{AttachConfig, AttachTls};
use crate::evidence::event::EventName;
use crate::evidence::plan::TrialConfig;
use crate::evidence::plan::attach::config::DirectDial;
use crate::evidence::plan::attach::ingress::MANAGED_PORT;
use crate::evidence::plan::attach::{AttachTarget, DEFAULT_REQUEST_TIMEOUT_MS};
use crate::evidence::request_id::{RequestIdPrefix, Spelling};
use crate::evidence::trigger::Trigger;
use crate::k8s::lanes::{self, TargetPods, TargetSlices};
use crate::k8s::target::{Endpoint, SchedulableNode, Workload};
use crate::k8s::translate::PodFacts;
use crate::k8s::trigger::Changes;
use crate::k8s::watch::{PodsView, spawn_pods};
use crate::k8s::{access, manifests};
use crate::platform::{PlatformError, Target};
use crate::recorder::Recorder;

/// The target as resolved once per run (per policy arm), before any trial changes anything.
#[derive(Debug, Clone)]
pub(super) struct Resolution {
    /// What was asked for.
    pub ask: AttachTarget,
    /// The target's namespace.
    pub ns: String,
    /// The workload as first read.
    pub workload: Workload,
    /// The Service and port dialled.
    pub endpoint: Endpoint,
    /// The CA file's PEM text (`--tls --ca-file`), for the client pod's ConfigMap.
    pub ca_pem: Option<String>,
    /// The ingress controller the flows go through (`--ingress-service`), as located.
    pub ingress: Option<crate::k8s::ingress::Located>,
}

/// One attach trial's state beside the client pod's.
pub(super) struct AttachTrial {
    /// The resolution the trial runs against.
    pub res: Resolution,
    /// The target's pods.
    pub pods: watch::Receiver<TargetPods>,
    /// The Service's EndpointSlices.
    pub slices: watch::Receiver<TargetSlices>,
    /// The pod under test, once chosen.
    pub put: Option<PodFacts>,
    /// The node the client pod is pinned to (drain-node).
    pub client_node: Option<SchedulableNode>,
    /// Ready pods before the trigger (what a replacement must restore).
    pub baseline_ready: usize,
    /// What the trigger changed, recorded before each change: undone at teardown.
    pub changes: Changes,
    /// Turns true when the trigger's own action is complete (rollout, drain).
    pub action_done: Option<watch::Receiver<bool>>,
    /// The pods the trigger terminates (known at the trigger for delete, evict, scale and
    /// drain-node; for rollout-restart every pod of the old revision, seen as it is deleted).
    pub victims: Vec<String>,
    /// What the client dials and how (from the plan at deploy; each client pod runs it, a
    /// shard its own part).
    pub dial: AttachConfig,
    /// The CA ConfigMap created for the client pod (`--tls --ca-file`), once created.
    pub ca_config_map: Option<String>,
    /// The trigger.
    pub trigger: Trigger,
    /// The trial's recorder (for the settle and restore events).
    pub rec: Recorder,
    /// Through an ingress: how many access lines of this trial's requests were recorded.
    pub ingress_seen: Option<watch::Receiver<u64>>,
    /// The controller this trial deploys (`--ingress-managed`), known before anything of it is
    /// created: teardown removes it.
    pub managed_ingress: Option<crate::k8s::ingress_managed::ManagedSpec>,
    /// Once it is deployed: its dial name and its Service's ClusterIP, `(address, name)`, for
    /// the client pods' /etc/hosts.
    pub host_alias: Option<(String, String)>,
}

/// What the client pod dials and how: the trial's `config.attach` (schema 1.2), with the
/// client's timing knobs fixed here and passed to it explicitly, so the report states what ran;
/// its request ids under the trial's `ids` prefix. `trial_ns` is the trial's namespace, where a
/// managed ingress is deployed.
pub(super) fn dial_of(
    cfg: &TrialConfig,
    res: &Resolution,
    ids: Option<RequestIdPrefix>,
    trial_ns: &str,
) -> AttachConfig {
    let dial = match through_ingress(res, trial_ns) {
        // Through an ingress the controller's Service is dialled, with the rule's Host, and the
        // target's Service directly beside it: kube-proxy's routing in the same trial.
        Some((endpoint, host)) => AttachConfig {
            host_header: Some(host),
            direct_dial: Some(DirectDial {
                host: res.endpoint.cluster_ip.clone(),
                port: res.endpoint.port,
            }),
            ..dial_config(cfg, &res.ask, &endpoint, &res.ns)
        },
        None => dial_config(cfg, &res.ask, &res.endpoint, &res.ns),
    };
    AttachConfig {
        request_id_prefix: ids,
        ..dial
    }
}

/// The ingress Service the client pods dial and the Host they send: the located controller's
/// by its ClusterIP, or a managed one's by its name in the trial's namespace (its ClusterIP is
/// assigned only when the trial deploys it, after the header has recorded this configuration;
/// the client pods' /etc/hosts maps the name to it).
fn through_ingress(res: &Resolution, trial_ns: &str) -> Option<(Endpoint, String)> {
    let it = res.ask.ingress.as_ref()?;
    if it.managed.is_some() {
        let endpoint = Endpoint {
            service: it.service.clone(),
            cluster_ip: crate::k8s::ingress_managed::dial_name(trial_ns),
            port: crate::k8s::ingress_managed::SERVICE_PORT,
            port_name: Some(MANAGED_PORT.to_string()),
        };
        return Some((endpoint, it.host.clone()));
    }
    let located = res.ingress.as_ref()?;
    Some((located.endpoint.clone(), located.target.host.clone()))
}

/// [`dial_of`] for the Service `e`, dialled by its ClusterIP.
pub(super) fn dial_config(
    cfg: &TrialConfig,
    a: &AttachTarget,
    e: &Endpoint,
    target_ns: &str,
) -> AttachConfig {
    AttachConfig {
        target: Some(a.target.to_string()),
        service: Some(e.service.clone()),
        protocol: a.protocol,
        host: e.cluster_ip.clone(),
        port: e.port,
        path: a.path.clone(),
        expect_status: a.expect_status,
        tcp_flows: cfg.tcp_flows,
        interval_ms: cfg.interval_ms,
        dial_rate: a.dial_rate,
        request_timeout_ms: a.request_timeout_ms.unwrap_or(DEFAULT_REQUEST_TIMEOUT_MS),
        keepalive_idle_ms: 5_000,
        keepalive_interval_ms: 1_000,
        keepalive_count: 3,
        user_timeout_ms: 10_000,
        duration_ms: u64::from(cfg.observe_timeout_seconds) * 1000,
        tls: a.tls.as_ref().map(|t| AttachTls {
            // The ClusterIP is dialled, but certificates name the Service.
            server_name: t
                .server_name
                .clone()
                .unwrap_or_else(|| format!("{}.{target_ns}.svc", e.service)),
            // The client reads the CA where its pod mounts the trial's ConfigMap.
            ca_file: t.ca_file.as_ref().map(|_| manifests::client_ca_path()),
            insecure_skip_verify: t.insecure_skip_verify,
        }),
        grpc: a.grpc.clone(),
        host_header: None,
        request_id_prefix: None,
        direct_dial: None,
    }
}

impl KubernetesPlatform {
    /// Creates drainwatch's own namespace (the client pod's) and starts the watches on the
    /// target; nothing of the target is changed.
    pub(super) async fn deploy_attach(
        &mut self,
        cfg: &TrialConfig,
        trial_id: &str,
        rec: &Recorder,
    ) -> Result<Target, PlatformError> {
        let Some(mut res) = self.resolved.clone() else {
            return Err(PlatformError::Deploy(
                "the attach target was not resolved before deploy".into(),
            ));
        };
        let access = self.access()?;
        let client = access.client.clone();
        let names = self.trial_namespace(cfg, trial_id);
        let (instance, ns, created_ns) =
            (names.instance.clone(), names.ns.clone(), names.created_ns);

        let t = Instant::now();
        let (mut own, _) = access::attach_needs(cfg.trigger, res.ask.target.kind, created_ns);
        if res.ca_pem.is_some() {
            own.extend(access::client_ca_needs());
        }
        let managed_ingress = res.ask.ingress.as_ref().and_then(|it| {
            let m = it.managed.as_ref()?;
            Some(managed::spec(&res, it, m, (&ns, &instance, &self.run_id)))
        });
        if managed_ingress.is_some() {
            own.extend(access::ingress_managed_needs().0);
        }
        self.check_permissions(&access, &ns, &own, t).await?;

        let (own_tx, own_pods) = watch::channel(PodsView::default());
        let (pods_tx, pods) = watch::channel(TargetPods::default());
        let (slices_tx, slices) = watch::channel(TargetSlices::default());
        let cancel = CancellationToken::new();
        let dial = dial_of(cfg, &res, Some(self.request_id_prefix(trial_id)?), &ns);
        let ids = Spelling::new(dial.request_id_prefix.as_ref());
        let attach = AttachTrial {
            dial,
            ca_config_map: None,
            res: res.clone(),
            pods,
            slices,
            put: None,
            client_node: None,
            baseline_ready: 0,
            changes: Changes::default(),
            action_done: None,
            victims: vec![],
            trigger: cfg.trigger,
            rec: rec.clone(),
            ingress_seen: None,
            managed_ingress: managed_ingress.clone(),
            host_alias: None,
        };
        // Recorded before anything is created, so teardown knows what to remove.
        self.trial = Some(trial_state(cfg, &names, &cancel, own_pods, attach));
        let owned = open_namespace(&client, &ns, &self.run_id, created_ns, rec).await?;
        if let Some(st) = self.trial.as_mut() {
            st.owns_ns = owned;
        }
        if let Some(pem) = &res.ca_pem {
            client_ca(&client, &ns, &instance, &self.run_id, pem).await?;
            if let Some(a) = self.trial.as_mut().and_then(|st| st.attach_mut()) {
                a.ca_config_map = Some(crate::k8s::CLIENT_CA_NAME.to_string());
            }
        }
        // A managed controller: deployed, routing the target, and located before the trial's
        // watches start; the client pods then dial it as they would the user's.
        if let (Some(spec), Some(it)) = (&managed_ingress, &res.ask.ingress) {
            for c in managed::target_side(spec) {
                rec.made(c).map_err(|e| super::deploy_err(e.into()))?;
            }
            let located = managed::deploy(&client, spec, it).await?;
            let alias = (
                located.endpoint.cluster_ip.clone(),
                crate::k8s::ingress_managed::dial_name(&ns),
            );
            rec.orchestrator(EventName::TargetResolved, managed::resolved(spec, &alias));
            res.ingress = Some(located);
            if let Some(a) = self.trial.as_mut().and_then(|st| st.attach_mut()) {
                a.res.ingress.clone_from(&res.ingress);
                a.host_alias = Some(alias);
            }
        }
        rec.orchestrator(EventName::TargetResolved, resolved(&res, &ns));
        // Read now, at the start of this trial: a PDB's disruptionsAllowed is what the trigger
        // will meet.
        let settings = crate::k8s::settings::read(&client, &res.workload).await;
        let covered = settings.covered_by(cfg.observe_timeout_seconds);
        rec.termination_settings(settings);
        // Before any flow is dialled: a window that closes before a pod's SIGKILL at its grace
        // boundary would judge a shutdown it never saw end.
        covered.map_err(|e| crate::preflight::WINDOW_COVERS_GRACE.fail(e.to_string()))?;
        let Some(st) = self.trial.as_mut() else {
            return Err(PlatformError::Deploy("trial state vanished".into()));
        };
        let feeds = Feeds {
            own: own_tx,
            pods: pods_tx,
            slices: slices_tx,
        };
        st.tasks
            .extend(watches(&client, &ns, &instance, &res, rec, feeds, &cancel));
        // From this trial's start: the controller's older lines are other runs' requests.
        if let Some(located) = &res.ingress {
            // Before the client pods exist: the counters hold none of the trial's requests.
            ingress::scrape_counters(&client, located, rec, ingress::BEFORE).await;
            let (followers, seen) = ingress::follow(&client, located, ids, rec, &cancel);
            st.client_logs.extend(followers);
            st.tasks
                .extend(ingress_view::poll(&client, located, &res.ns, rec, &cancel));
            if let Some(a) = st.attach_mut() {
                a.ingress_seen = Some(seen);
            }
        }
        Ok(Target {
            host: res.endpoint.cluster_ip.clone(),
            tcp_port: res.endpoint.port,
            udp_port: res.endpoint.port,
        })
    }
}

/// Creates the CA ConfigMap the client pod mounts; one already there (a parallel run in a
/// shared `--namespace`) is named and left alone, as the client pod is.
async fn client_ca(
    client: &kube::Client,
    ns: &str,
    instance: &str,
    run: &str,
    pem: &str,
) -> Result<(), PlatformError> {
    let name = crate::k8s::CLIENT_CA_NAME;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    match api
        .create(
            &PostParams::default(),
            &manifests::client_ca(ns, instance, run, pem),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if crate::k8s::status_code(&e) == Some(409) => Err(PlatformError::Exists {
            what: format!("configmap {ns}/{name}"),
            owner: None,
        }),
        Err(e) => Err(PlatformError::Cluster(crate::k8s::K8sError::api(format!(
            "create configmap {ns}/{name}"
        ))(e))),
    }
}

/// The trial state of an attach trial: no probe, one client pod in namespace `ns`.
fn trial_state(
    cfg: &TrialConfig,
    names: &TrialNames,
    cancel: &CancellationToken,
    own_pods: watch::Receiver<PodsView>,
    attach: AttachTrial,
) -> TrialState {
    TrialState {
        ns: names.ns.clone(),
        image: cfg
            .kubernetes
            .as_ref()
            .map(|k| k.image.clone())
            .unwrap_or_default(),
        owns_ns: false,
        instance: names.instance.clone(),
        run: names.run.clone(),
        cancel: cancel.clone(),
        pods: own_pods,
        client_logs: Vec::new(),
        // The attach client runs in client pods: one, or one per shard.
        clients: cfg.clients,
        shard_placement: cfg.kubernetes.as_ref().and_then(|k| k.shard_placement),
        tasks: vec![],
        mode: TrialMode::Attach(Box::new(attach)),
    }
}

/// The `target_resolved` line: the target, its Service and port, and the client's namespace.
fn resolved(res: &Resolution, ns: &str) -> String {
    let w = &res.workload;
    format!(
        "{} in namespace {} (selector {}, {} replicas, {} ready); service {} ClusterIP {} port {}{}; client pod in namespace {ns}",
        res.ask.target,
        res.ns,
        w.selector,
        w.replicas,
        w.ready_replicas,
        res.endpoint.service,
        res.endpoint.cluster_ip,
        res.endpoint.port,
        res.endpoint
            .port_name
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default()
    )
}

/// Where the watches of an attach trial publish.
struct Feeds {
    /// The client pod in drainwatch's namespace.
    own: watch::Sender<PodsView>,
    /// The target's pods.
    pods: watch::Sender<TargetPods>,
    /// The Service's EndpointSlices.
    slices: watch::Sender<TargetSlices>,
}

/// Watches drainwatch's own pods, the target's pods and its Service's EndpointSlices.
fn watches(
    client: &kube::Client,
    ns: &str,
    instance: &str,
    res: &Resolution,
    rec: &Recorder,
    feeds: Feeds,
    cancel: &CancellationToken,
) -> [JoinHandle<()>; 3] {
    let (_, no_put) = watch::channel(None);
    [
        spawn_pods(
            Api::namespaced(client.clone(), ns),
            manifests::trial_selector(instance),
            no_put,
            rec.clone(),
            feeds.own,
            cancel.clone(),
        ),
        lanes::spawn_pods(
            Api::<Pod>::namespaced(client.clone(), &res.ns),
            res.workload.selector.clone(),
            rec.clone(),
            feeds.pods,
            cancel.clone(),
        ),
        lanes::spawn_slices(
            Api::<EndpointSlice>::namespaced(client.clone(), &res.ns),
            &res.endpoint.service,
            rec.clone(),
            feeds.slices,
            cancel.clone(),
        ),
    ]
}

#[cfg(test)]
mod tests;
