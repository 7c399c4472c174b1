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
mod probe;
mod relay;
mod shard_pods;
mod teardown;

pub use disrupt::RestoreError;

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::Api;
use kube::api::PostParams;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::shard::Shards;
use super::{Flows, Platform, PlatformError, Target};
use crate::evidence::environment::Environment;
use crate::evidence::event::EventName;
use crate::evidence::journal::Change;
use crate::evidence::plan::{ClientPlacement, KubernetesConfig, ShardPlacement, TrialConfig};
use crate::evidence::trigger::{Trigger, Triggered};
use crate::host;
use crate::k8s::client::{ClusterAccess, connect};
use crate::k8s::logs::Follower;
use crate::k8s::translate::pod_key;
use crate::k8s::trigger::{delete, evict, scale};
use crate::k8s::watch::{PodsView, SlicesView};
use crate::k8s::{K8sError, PROBE_NAME, access, chain, environment, manifests};
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

struct ServiceAddr {
    cluster_ip: String,
    tcp_node_port: Option<u16>,
    udp_node_port: Option<u16>,
}

struct TrialState {
    ns: String,
    image: String,
    placement: ClientPlacement,
    /// This run did create the namespace: set only once the create call succeeded, so a
    /// namespace that already existed (another run's, anyone's) is never deleted.
    owns_ns: bool,
    instance: String,
    /// The run id: the `drainwatch.dev/run` mark on everything the trial creates; teardown
    /// deletes only objects that carry it.
    run: String,
    cancel: CancellationToken,
    put_tx: watch::Sender<Option<String>>,
    put: Option<String>,
    pods: watch::Receiver<PodsView>,
    slices: watch::Receiver<SlicesView>,
    service: Option<ServiceAddr>,
    probe_log: Option<Follower>,
    client_logs: Vec<Follower>,
    /// `--clients N`: how many, and how long a host child may outlive a killed orchestrator;
    /// with the host placement the children once started are in `shards`.
    sharding: (u32, Duration),
    /// `--client-placement` of the client pods of `--clients 2` or more.
    shard_placement: Option<ShardPlacement>,
    shards: Option<Shards>,
    tasks: Vec<JoinHandle<()>>,
    /// The attached workload's side of the trial (None when the probe is deployed).
    attach: Option<attach::AttachTrial>,
}

/// A trial's names: its instance label, its namespace, whether it creates that namespace, and
/// the run's mark on everything it creates.
struct TrialNames {
    instance: String,
    ns: String,
    created_ns: bool,
    run: String,
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
    eprintln!("{}", preflight::line(c, true, t.elapsed()));
}

fn fail(c: Check, t: Instant, why: impl Into<String>) -> PlatformError {
    eprintln!("{}", preflight::line(&c, false, t.elapsed()));
    PlatformError::Preflight(c.fail(why))
}

/// Creates the trial's namespace, marked with the run, when the trial is to create one
/// (`create`), and says which namespace the trial runs in either way. Returns whether this
/// run created it: only then may teardown delete it. A namespace of that name that already
/// exists is another run's (or anyone's): the run fails by name and leaves it alone.
async fn open_namespace(
    client: &kube::Client,
    ns: &str,
    run: &str,
    create: bool,
    rec: &Recorder,
) -> Result<bool, PlatformError> {
    if create {
        rec.made(Change::NamespaceCreated {
            namespace: ns.to_string(),
        })
        .map_err(|e| deploy_err(e.into()))?;
        let nss = Api::<Namespace>::all(client.clone());
        match nss
            .create(&PostParams::default(), &manifests::namespace(ns, run))
            .await
        {
            Ok(_) => {}
            Err(e) if crate::k8s::status_code(&e) == Some(409) => {
                rec.restored_change(
                    &Change::NamespaceCreated {
                        namespace: ns.to_string(),
                    },
                    "not created: it existed already, and is not this run's",
                );
                let owner = nss
                    .get_opt(ns)
                    .await
                    .ok()
                    .flatten()
                    .and_then(|n| n.metadata.labels)
                    .and_then(|l| l.get(crate::k8s::labels::RUN).cloned());
                return Err(PlatformError::Exists {
                    what: format!("namespace {ns}"),
                    owner,
                });
            }
            Err(e) => {
                return Err(deploy_err(K8sError::api(format!("create namespace {ns}"))(
                    e,
                )));
            }
        }
    }
    let how = if create {
        " (created for this trial)"
    } else {
        ""
    };
    eprintln!("drainwatch: namespace {ns}{how}");
    Ok(create)
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
        eprintln!("drainwatch: run {run_id}");
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

    fn instance(&self, trial_id: &str) -> String {
        format!(
            "drainwatch-{}-{}",
            self.run_id,
            trial_id.trim_start_matches("trial-")
        )
    }

    /// The trial's instance name, its namespace, whether the trial creates that namespace
    /// (it does unless `--namespace` named one), and the run's mark.
    fn trial_namespace(&self, cfg: &TrialConfig, trial_id: &str) -> TrialNames {
        let instance = self.instance(trial_id);
        let created_ns = self.opts.namespace.is_none();
        let ns = cfg.namespace.clone().unwrap_or_else(|| instance.clone());
        TrialNames {
            instance,
            ns,
            created_ns,
            run: self.run_id.clone(),
        }
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
        eprintln!("drainwatch: API server {}", access.server);
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
            c.attach = Some(attach::dial_config(cfg, &r.ask, &r.endpoint, &r.ns));
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
        if st.attach.is_none() && st.placement == ClientPlacement::Host {
            return host_client::start(st, ccfg, rec, self.opts.exe.as_deref(), ready).await;
        }
        let pods = client_pods(st, &access, &ccfg, rec).await?;
        let mode = match &st.attach {
            Some(a) => client_pod::Mode::Attach {
                dial: Box::new(a.dial.clone()),
                ca_config_map: a.ca_config_map.clone(),
            },
            None => client_pod::Mode::Probe,
        };
        client_pod::start(st, &access, ccfg, rec, ready, (mode, pods)).await
    }

    async fn trigger(
        &mut self,
        cfg: &TrialConfig,
        rec: &Recorder,
    ) -> Result<Triggered, PlatformError> {
        if self.trial.as_ref().is_some_and(|s| s.attach.is_some()) {
            return self.trigger_attach(cfg, rec).await;
        }
        let access = self.access()?;
        let Some(st) = self.trial.as_ref() else {
            return Err(PlatformError::Trigger("nothing was deployed".into()));
        };
        let put = st.put.clone().unwrap_or_default();
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
        if self.trial.as_ref().is_some_and(|s| s.attach.is_some()) {
            return self.settled_attach(limit).await;
        }
        let Some(st) = self.trial.as_ref() else {
            return;
        };
        let put = st.put.clone().unwrap_or_default();
        let key = pod_key(&put);
        let (pods, slices) = (st.pods.clone(), st.slices.clone());
        let log_done = st.probe_log.as_ref().map(|f| f.done.clone());
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
        let Some(mut st) = self.trial.take() else {
            return Ok(());
        };
        let clients = match st.shards.take() {
            Some(s) => s.teardown(rec).await,
            None => Ok(()),
        };
        // Stop observing first, so teardown's own deletions are not recorded as the trial's.
        st.cancel.cancel();
        for t in &st.tasks {
            t.abort();
        }
        for f in st.probe_log.iter().chain(&st.client_logs) {
            f.task.abort();
        }
        let access = self.access()?;
        // The user's workload first: it is what must be left as found.
        let restored = match &st.attach {
            Some(a) => disrupt::restore(&access.client, a, rec).await,
            None => Ok(()),
        };
        let removed = teardown::objects(&access.client, &st, self.opts.api_timeout).await;
        if removed.is_ok() && st.owns_ns {
            rec.restored_change(
                &Change::NamespaceCreated {
                    namespace: st.ns.clone(),
                },
                "deleted at teardown, with everything in it",
            );
        }
        let result = match (removed, restored) {
            (Ok(what), Ok(())) => {
                rec.orchestrator(EventName::WorkloadDeleted, what);
                Ok(())
            }
            (Ok(what), Err(restore)) => {
                rec.orchestrator(EventName::WorkloadDeleted, what);
                Err(PlatformError::Restore(restore))
            }
            (Err(source), restored) => Err(PlatformError::Remove {
                run: st.run.clone(),
                restored: restored.err().map(Box::new),
                source: Box::new(source),
            }),
        };
        result.and(clients)
    }
}
