//! The Kubernetes platform: the probe is a Deployment's pod on the cluster the kubeconfig
//! reaches, the timeline comes from watches and the probe's followed log, the trigger is an API
//! call, and the flow client runs either as a pod (dialling the Service's ClusterIP, its events
//! relayed over its log) or in this process (dialling a NodePort).
//!
//! Everything a trial creates lives in its own labelled namespace (or carries the trial's labels
//! in `--namespace`) and is deleted at teardown, which the trial loop also runs on errors and
//! interrupts.

mod attach;
mod checks;
mod client_loss;
mod client_pod;
mod disrupt;
mod host_client;
mod names;
mod probe;
mod relay;
mod shard_pods;
mod teardown;

pub use disrupt::RestoreError;

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Flows, Platform, PlatformError, Target};
use crate::console;
use crate::evidence::environment::Environment;
use crate::evidence::plan::{ClientPlacement, KubernetesConfig, ShardPlacement, TrialConfig};
use crate::evidence::trigger::{Trigger, Triggered};
use crate::host;
use crate::k8s::client::{ClusterAccess, connect};
use crate::k8s::logs::Follower;
use crate::k8s::translate::pod_key;
use crate::k8s::trigger::{delete, evict, scale};
use crate::k8s::watch::PodsView;
use crate::k8s::{K8sError, PROBE_NAME, access, chain, environment};
use crate::net::ClientConfig;
use crate::preflight::{self, Check};
use crate::recorder::Recorder;
use checks::Poll;
use shard_pods::client_pods;

/// How to reach the cluster and how long to wait for it.
#[derive(Debug, Clone)]
pub struct KubernetesOptions {
    /// `--kubeconfig`.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`.
    pub context: Option<String>,
    /// `--namespace`: use this existing namespace instead of creating one per trial.
    pub namespace: Option<String>,
    /// The probe image (recorded in the environment).
    pub image: String,
    /// How long pods may take to run and become ready.
    pub ready_timeout: Duration,
    /// How long the API server may take to answer the first requests.
    pub api_timeout: Duration,
    /// `--run-id`: the run id to use instead of a generated one.
    pub run_id: Option<String>,
    /// This binary, run as `client` child processes when `--client host --clients N` shards
    /// the flows; `None` when it cannot be located (a sharded run then fails by name).
    pub exe: Option<PathBuf>,
}

/// One trial on the cluster: what every trial has, and what only its mode has.
struct TrialState {
    ns: String,
    /// The image the trial's own pods run (the probe's and the client pods').
    image: String,
    /// This run did create the namespace: set only once the create call succeeded, so a
    /// namespace that already existed (another run's, anyone's) is never deleted.
    owns_ns: bool,
    instance: String,
    /// The run id: the `drainwatch.dev/run` mark on everything the trial creates; teardown
    /// deletes only objects that carry it.
    run: String,
    cancel: CancellationToken,
    /// The trial's own pods: the probe's and the client pods' (an attach trial's client pods
    /// only; its target's pods are the attach side's).
    pods: watch::Receiver<PodsView>,
    client_logs: Vec<Follower>,
    /// `--clients N`: how many client pods or host child processes share the flows.
    clients: u32,
    /// `--client-placement` of the client pods of `--clients 2` or more.
    shard_placement: Option<ShardPlacement>,
    tasks: Vec<JoinHandle<()>>,
    mode: TrialMode,
}

/// What a trial has by its mode: the probe it deployed, or the workload it attached to.
enum TrialMode {
    Probe(probe::ProbeTrial),
    // Boxed: the attach side is several times the probe's size.
    Attach(Box<attach::AttachTrial>),
}

impl TrialState {
    fn probe(&self) -> Option<&probe::ProbeTrial> {
        match &self.mode {
            TrialMode::Probe(p) => Some(p),
            TrialMode::Attach(_) => None,
        }
    }

    fn attach(&self) -> Option<&attach::AttachTrial> {
        match &self.mode {
            TrialMode::Attach(a) => Some(a),
            TrialMode::Probe(_) => None,
        }
    }

    fn attach_mut(&mut self) -> Option<&mut attach::AttachTrial> {
        match &mut self.mode {
            TrialMode::Attach(a) => Some(a),
            TrialMode::Probe(_) => None,
        }
    }
}

/// The Kubernetes platform.
pub struct KubernetesPlatform {
    opts: KubernetesOptions,
    run_id: String,
    access: Option<ClusterAccess>,
    trial: Option<TrialState>,
    /// The attach target, resolved by `prepare` before any trial.
    resolved: Option<attach::Resolution>,
}

fn ok(c: &Check, t: Instant) {
    console::progress!("{}", preflight::line(c, true, t.elapsed()));
}

fn fail(c: Check, t: Instant, why: impl Into<String>) -> PlatformError {
    console::failure!("{}", preflight::line(&c, false, t.elapsed()));
    PlatformError::Preflight(c.fail(why))
}

fn deploy_err(e: K8sError) -> PlatformError {
    PlatformError::Cluster(e)
}

fn kcfg(cfg: &TrialConfig) -> Result<&KubernetesConfig, PlatformError> {
    cfg.kubernetes
        .as_ref()
        .ok_or_else(|| PlatformError::Deploy("the plan has no kubernetes settings".into()))
}

impl KubernetesPlatform {
    /// A platform for one run; the run id (UTC start second and a per-process suffix, see
    /// [`host::run_id`]) names its namespaces and marks everything it creates.
    pub fn new(opts: KubernetesOptions) -> Self {
        let run_id = opts.run_id.clone().unwrap_or_else(host::run_id);
        console::progress!("drainwatch: run {run_id}");
        Self {
            opts,
            run_id,
            access: None,
            trial: None,
            resolved: None,
        }
    }

    /// This run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The permissions check: one SelfSubjectAccessReview per need in `ns`; a denial, an error
    /// or no answer within the API timeout fails the check, named.
    async fn check_permissions(
        &self,
        cluster: &ClusterAccess,
        ns: &str,
        needs: &[access::Need],
        t: Instant,
    ) -> Result<(), PlatformError> {
        let denied = tokio::time::timeout(
            self.opts.api_timeout,
            access::denied(&cluster.client, ns, needs),
        )
        .await
        .map_err(|_| {
            fail(
                preflight::PERMISSIONS,
                t,
                format!(
                    "no answer from {} within {}s",
                    cluster.server,
                    self.opts.api_timeout.as_secs()
                ),
            )
        })?
        .map_err(|e| fail(preflight::PERMISSIONS, t, chain(&e)))?;
        if denied.is_empty() {
            Ok(())
        } else {
            Err(fail(
                preflight::PERMISSIONS,
                t,
                format!("denied: {}", denied.join("; ")),
            ))
        }
    }

    fn access(&self) -> Result<ClusterAccess, PlatformError> {
        self.access.clone().ok_or_else(|| {
            PlatformError::Deploy("no cluster access: environment() was not run".into())
        })
    }
}

impl Platform for KubernetesPlatform {
    async fn environment(&mut self) -> Result<Environment, PlatformError> {
        let t = Instant::now();
        let access = connect(
            self.opts.kubeconfig.as_deref(),
            self.opts.context.as_deref(),
        )
        .await
        .map_err(|e| fail(preflight::API_REACHABLE, t, chain(&e)))?;
        console::progress!("drainwatch: API server {}", access.server);
        // The environment record lists nodes; a denial is named as the permission it is.
        let nodes = [access::Need::cluster("list", "nodes")];
        match tokio::time::timeout(
            self.opts.api_timeout,
            access::denied(&access.client, "", &nodes),
        )
        .await
        {
            Err(_) => {
                return Err(fail(
                    preflight::API_REACHABLE,
                    t,
                    format!(
                        "no answer from {} within {}s",
                        access.server,
                        self.opts.api_timeout.as_secs()
                    ),
                ));
            }
            Ok(Err(e)) => {
                return Err(fail(
                    preflight::API_REACHABLE,
                    t,
                    format!("{} ({})", chain(&e), access.server),
                ));
            }
            Ok(Ok(denied)) if !denied.is_empty() => {
                ok(&preflight::API_REACHABLE, t);
                return Err(fail(
                    preflight::PERMISSIONS,
                    t,
                    format!("denied: {}", denied.join("; ")),
                ));
            }
            Ok(Ok(_)) => {}
        }
        let version = environment::server_version(&access, self.opts.api_timeout)
            .await
            .map_err(|e| fail(preflight::API_REACHABLE, t, chain(&e)))?;
        let mut env = environment::record(&access, &self.opts.image, version)
            .await
            .map_err(PlatformError::ClusterEnvironment)?;
        ok(&preflight::API_REACHABLE, t);
        env.run_id = Some(self.run_id.clone());
        self.access = Some(access);
        Ok(env)
    }

    async fn prepare(&mut self, cfg: &TrialConfig) -> Result<(), PlatformError> {
        self.prepare_attach(cfg).await
    }

    fn trial_config(&self, cfg: &TrialConfig, trial_id: &str) -> TrialConfig {
        let mut c = cfg.clone();
        c.namespace = Some(
            self.opts
                .namespace
                .clone()
                .unwrap_or_else(|| self.instance(trial_id)),
        );
        if let Some(r) = &self.resolved {
            c.target_host = format!(
                "{} (ClusterIP of service {}/{})",
                r.endpoint.cluster_ip, r.ns, r.endpoint.service
            );
            c.tcp_port = r.endpoint.port;
            let trial_ns = c.namespace.clone().unwrap_or_default();
            if let Some(it) = &r.ask.ingress {
                match (&r.ingress, &it.managed) {
                    (Some(l), None) => {
                        c.target_host = format!(
                            "{} (ClusterIP of ingress service {}/{}, Host {})",
                            l.endpoint.cluster_ip, l.namespace, it.service, it.host
                        );
                        c.tcp_port = l.endpoint.port;
                    }
                    (_, Some(m)) => {
                        c.target_host = format!(
                            "{} (the ingress drainwatch deploys in the trial's namespace, {}, {} provider; Host {})",
                            crate::k8s::ingress_managed::dial_name(&trial_ns),
                            m.image,
                            m.provider,
                            it.host
                        );
                        c.tcp_port = crate::k8s::ingress_managed::SERVICE_PORT;
                    }
                    (None, None) => {}
                }
            }
            // A prefix that cannot be made fails the trial's deploy, by name.
            let ids = self.request_id_prefix(trial_id).ok();
            c.attach = Some(attach::dial_of(cfg, r, ids, &trial_ns));
            return c;
        }
        c.target_host = match cfg.kubernetes.as_ref().map(|k| k.client) {
            Some(ClientPlacement::Host) => {
                "NodePort on the pod under test's node (see target_resolved)".into()
            }
            _ => "ClusterIP of service drainwatch-probe (see target_resolved)".into(),
        };
        c
    }

    async fn deploy(
        &mut self,
        cfg: &TrialConfig,
        trial_id: &str,
        rec: &Recorder,
    ) -> Result<Target, PlatformError> {
        let k = kcfg(cfg)?.clone();
        if k.attach.is_some() {
            return self.deploy_attach(cfg, trial_id, rec).await;
        }
        self.deploy_probe(cfg, trial_id, rec, &k).await
    }

    async fn preflight(&mut self, cfg: &TrialConfig, rec: &Recorder) -> Result<(), PlatformError> {
        let k = kcfg(cfg)?.clone();
        if k.attach.is_some() {
            return self.preflight_attach(cfg, rec).await;
        }
        self.preflight_probe(rec, &k).await
    }

    async fn start_flows(
        &mut self,
        ccfg: ClientConfig,
        rec: &Recorder,
    ) -> Result<Flows, PlatformError> {
        let access = self.access()?;
        let ready = self.opts.ready_timeout;
        let Some(st) = self.trial.as_mut() else {
            return Err(PlatformError::Deploy("nothing was deployed".into()));
        };
        if st
            .probe()
            .is_some_and(|p| p.placement == ClientPlacement::Host)
        {
            return host_client::start(st, ccfg, rec, self.opts.exe.as_deref(), ready).await;
        }
        let pods = client_pods(st, &access, &ccfg, rec).await?;
        let mode = match st.attach() {
            Some(a) => client_pod::Mode::Attach {
                dial: Box::new(a.dial.clone()),
                ca_config_map: a.ca_config_map.clone(),
                host_alias: a.host_alias.clone(),
            },
            None => client_pod::Mode::Probe,
        };
        let mut ingress_seen = st.attach().and_then(|a| a.ingress_seen.clone());
        let flows = client_pod::start(st, &access, ccfg, rec, ready, (mode, pods)).await?;
        // Through an ingress, nothing is judged unless its log names this client's requests.
        if let Some(seen) = ingress_seen.as_mut() {
            attach::ingress::access_log_delivering(seen, attach::ingress::ACCESS_LOG_WITHIN)
                .await?;
        }
        Ok(flows)
    }

    async fn trigger(
        &mut self,
        cfg: &TrialConfig,
        rec: &Recorder,
    ) -> Result<Triggered, PlatformError> {
        if self.trial.as_ref().is_some_and(|s| s.attach().is_some()) {
            return self.trigger_attach(cfg, rec).await;
        }
        let access = self.access()?;
        let Some(st) = self.trial.as_ref() else {
            return Err(PlatformError::Trigger("nothing was deployed".into()));
        };
        let Some(put) = st.probe().and_then(|p| p.put.clone()) else {
            return Err(PlatformError::Trigger(
                "no pod under test was chosen".into(),
            ));
        };
        let pods: Api<Pod> = Api::namespaced(access.client.clone(), &st.ns);
        let r = match cfg.trigger {
            Trigger::Delete => delete::pod(&pods, &put).await,
            Trigger::Evict => evict::once(&pods, &st.ns, &put).await,
            Trigger::Scale => scale::to_zero(&access.client, &st.ns, PROBE_NAME).await,
            // The plan accepts only delete, evict and scale for the probe.
            t @ (Trigger::Sigterm
            | Trigger::RolloutRestart
            | Trigger::DrainNode
            | Trigger::Manual) => return Err(PlatformError::TriggerNotAccepted(t)),
        };
        r.map_err(|source| PlatformError::TriggerCall {
            hint: "RBAC for pods delete, pods/eviction create or deployments/scale patch?",
            source,
        })
    }

    async fn settled(&mut self, limit: Duration) {
        if self.trial.as_ref().is_some_and(|s| s.attach().is_some()) {
            return self.settled_attach(limit).await;
        }
        let Some(st) = self.trial.as_ref() else {
            return;
        };
        let Some((probe, put)) = st.probe().and_then(|p| Some((p, p.put.clone()?))) else {
            return;
        };
        let key = pod_key(&put);
        let (pods, slices) = (st.pods.clone(), probe.slices.clone());
        let log_done = probe.probe_log.as_ref().map(|f| f.done.clone());
        let _ = checks::wait(preflight::POD_READY, limit, || {
            let exited = pods.borrow().put_deleted
                || pods
                    .borrow()
                    .probes
                    .get(&put)
                    .and_then(|p| p.container.as_ref())
                    .is_none_or(|c| c.terminated.is_some());
            let removed = !slices
                .borrow()
                .slices
                .values()
                .any(|s| s.contains_key(&key));
            let logged = log_done.as_ref().is_none_or(|d| *d.borrow());
            if exited && removed && logged {
                Poll::Ready(())
            } else {
                Poll::Waiting(String::new())
            }
        })
        .await;
    }

    async fn teardown(&mut self, rec: &Recorder) -> Result<(), PlatformError> {
        let Some(st) = self.trial.take() else {
            return Ok(());
        };
        let access = self.access()?;
        teardown::trial(st, &access, self.opts.api_timeout, rec).await
    }
}
