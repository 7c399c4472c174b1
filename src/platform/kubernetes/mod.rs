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
mod client_pod;
mod disrupt;
mod host_client;
mod relay;
mod teardown;

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::PostParams;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::shard::{Shards, trial_bound};
use super::{Flows, Platform, PlatformError, Target, Triggered};
use crate::evidence::environment::Environment;
use crate::evidence::plan::{ClientPlacement, KubernetesConfig, TrialConfig};
use crate::evidence::timeline::format_wall_ns;
use crate::host;
use crate::k8s::client::{ClusterAccess, connect};
use crate::k8s::logs::{self, Follower};
use crate::k8s::manifests::{self, WorkloadSpec};
use crate::k8s::translate::pod_key;
use crate::k8s::watch::{PodsView, SlicesView, spawn_pods, spawn_slices};
use crate::k8s::{K8sError, PROBE_CONTAINER, PROBE_NAME, access, environment, trigger};
use crate::net::{ClientConfig, limits};
use crate::trial::preflight::{self, Check};
use crate::trial::recorder::Recorder;
use checks::Poll;

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
    created_ns: bool,
    instance: String,
    cancel: CancellationToken,
    put_tx: watch::Sender<Option<String>>,
    put: Option<String>,
    pods: watch::Receiver<PodsView>,
    slices: watch::Receiver<SlicesView>,
    service: Option<ServiceAddr>,
    probe_log: Option<Follower>,
    client_log: Option<Follower>,
    /// `--clients N` with the host placement: how many, and the children once started.
    sharding: (u32, Duration),
    shards: Option<Shards>,
    tasks: Vec<JoinHandle<()>>,
    /// The attached workload's side of the trial (None when the probe is deployed).
    attach: Option<attach::AttachTrial>,
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

fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

fn ok(c: &Check, t: Instant) {
    eprintln!("{}", preflight::line(c, true, t.elapsed()));
}

fn fail(c: Check, t: Instant, why: impl Into<String>) -> PlatformError {
    eprintln!("{}", preflight::line(&c, false, t.elapsed()));
    PlatformError::Preflight(c.fail(why))
}

fn deploy_err(e: K8sError) -> PlatformError {
    PlatformError::Deploy(chain(&e))
}

fn kcfg(cfg: &TrialConfig) -> Result<&KubernetesConfig, PlatformError> {
    cfg.kubernetes
        .as_ref()
        .ok_or_else(|| PlatformError::Deploy("the plan has no kubernetes settings".into()))
}

impl KubernetesPlatform {
    /// A platform for one run; the run id (UTC start time) names its namespaces.
    pub fn new(opts: KubernetesOptions) -> Self {
        let now = format_wall_ns(host::wall_ns());
        let run_id: String = now
            .chars()
            .filter(char::is_ascii_digit)
            .take(14)
            .collect::<String>();
        let run_id = format!(
            "{}-{}",
            &run_id[..8.min(run_id.len())],
            &run_id[8.min(run_id.len())..]
        );
        Self {
            opts,
            run_id,
            access: None,
            trial: None,
            resolved: None,
        }
    }

    fn instance(&self, trial_id: &str) -> String {
        format!(
            "drainwatch-{}-{}",
            self.run_id,
            trial_id.trim_start_matches("trial-")
        )
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
        let env = environment::record(&access, &self.opts.image, self.opts.api_timeout)
            .await
            .map_err(|e| match &e {
                K8sError::Timeout { .. } | K8sError::Api { .. }
                    if e.to_string().contains("server version") =>
                {
                    fail(preflight::API_REACHABLE, t, chain(&e))
                }
                _ => PlatformError::Environment(chain(&e)),
            })?;
        ok(&preflight::API_REACHABLE, t);
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
            c.attach = Some(attach::dial_config(cfg, &r.ask, &r.endpoint));
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
        let Some(behavior) = cfg.drain_behavior else {
            return Err(PlatformError::Deploy(
                "the kubernetes platform deploys drainwatch's probe and needs a --drain-behavior"
                    .into(),
            ));
        };
        // Per client process, before anything is created: a request that cannot fit is named
        // with the --clients it would need.
        limits::check_shards(
            u64::from(cfg.tcp_flows),
            u64::from(cfg.udp_flows),
            u64::from(cfg.clients),
        )
        .map_err(|e| PlatformError::Flows(e.into()))?;
        let access = self.access()?;
        let client = access.client.clone();
        let instance = self.instance(trial_id);
        let created_ns = self.opts.namespace.is_none();
        let ns = cfg.namespace.clone().unwrap_or_else(|| instance.clone());

        let t = Instant::now();
        let needs = access::needs(
            &cfg.trigger,
            created_ns,
            k.client == ClientPlacement::Pod,
            k.pdb,
        );
        self.check_permissions(&access, &ns, &needs, t).await?;
        ok(&preflight::PERMISSIONS, t);

        let (put_tx, put_rx) = watch::channel(None);
        let (pods_tx, pods) = watch::channel(PodsView::default());
        let (slices_tx, slices) = watch::channel(SlicesView::default());
        let cancel = CancellationToken::new();
        // Recorded before anything is created, so teardown knows what to remove even if this
        // call is interrupted half way.
        self.trial = Some(TrialState {
            ns: ns.clone(),
            image: k.image.clone(),
            placement: k.client,
            created_ns,
            instance: instance.clone(),
            cancel: cancel.clone(),
            put_tx,
            put: None,
            pods,
            slices,
            service: None,
            probe_log: None,
            client_log: None,
            sharding: (cfg.clients, trial_bound(cfg) + 2 * self.opts.ready_timeout),
            shards: None,
            tasks: vec![],
            attach: None,
        });
        let spec = WorkloadSpec::from_config(ns.clone(), instance.clone(), behavior, cfg, &k);
        let pp = PostParams::default();
        if created_ns {
            Api::<Namespace>::all(client.clone())
                .create(&pp, &manifests::namespace(&ns))
                .await
                .map_err(K8sError::api(format!("create namespace {ns}")))
                .map_err(deploy_err)?;
        }
        eprintln!(
            "drainwatch: namespace {ns}{}",
            if created_ns {
                " (created for this trial)"
            } else {
                ""
            }
        );
        if let Some(pdb) = manifests::pdb(&spec) {
            Api::<PodDisruptionBudget>::namespaced(client.clone(), &ns)
                .create(&pp, &pdb)
                .await
                .map_err(K8sError::api(format!(
                    "create poddisruptionbudget {ns}/{PROBE_NAME}"
                )))
                .map_err(deploy_err)?;
        }
        Api::<Deployment>::namespaced(client.clone(), &ns)
            .create(&pp, &manifests::deployment(&spec))
            .await
            .map_err(K8sError::api(format!(
                "create deployment {ns}/{PROBE_NAME}"
            )))
            .map_err(deploy_err)?;
        let svc = Api::<Service>::namespaced(client.clone(), &ns)
            .create(&pp, &manifests::service(&spec))
            .await
            .map_err(K8sError::api(format!("create service {ns}/{PROBE_NAME}")))
            .map_err(deploy_err)?;
        let sspec = svc.spec.unwrap_or_default();
        let node_port = |name: &str| {
            sspec
                .ports
                .iter()
                .flatten()
                .find(|p| p.name.as_deref() == Some(name))
                .and_then(|p| p.node_port)
                .and_then(|n| u16::try_from(n).ok())
        };
        let addr = ServiceAddr {
            cluster_ip: sspec.cluster_ip.clone().unwrap_or_default(),
            tcp_node_port: node_port("probe-tcp"),
            udp_node_port: node_port("probe-udp"),
        };
        rec.orchestrator(
            "workload_applied",
            format!(
                "namespace={ns}{} deployment={PROBE_NAME} replicas={} image={} behavior={} grace={}s prestop_sleep={}s readiness_period={}s service={} clusterIP={}{}",
                if created_ns { " (created)" } else { " (given)" },
                k.replicas,
                k.image,
                behavior,
                cfg.grace_period_seconds,
                k.prestop_sleep_seconds,
                k.readiness_period_seconds,
                if spec.node_port { "NodePort" } else { "ClusterIP" },
                addr.cluster_ip,
                if k.pdb { " pdb=maxUnavailable:0" } else { "" }
            ),
        );
        let Some(st) = self.trial.as_mut() else {
            return Err(PlatformError::Deploy("trial state vanished".into()));
        };
        st.tasks.push(spawn_pods(
            Api::namespaced(client.clone(), &ns),
            manifests::trial_selector(&instance),
            put_rx.clone(),
            rec.clone(),
            pods_tx,
            cancel.clone(),
        ));
        st.tasks.push(spawn_slices(
            Api::<EndpointSlice>::namespaced(client.clone(), &ns),
            PROBE_NAME,
            put_rx,
            rec.clone(),
            slices_tx,
            cancel.clone(),
        ));
        let target = Target {
            host: addr.cluster_ip.clone(),
            tcp_port: cfg.tcp_port,
            udp_port: cfg.udp_port,
        };
        st.service = Some(addr);
        Ok(target)
    }

    async fn preflight(&mut self, cfg: &TrialConfig, rec: &Recorder) -> Result<(), PlatformError> {
        let k = kcfg(cfg)?.clone();
        if k.attach.is_some() {
            return self.preflight_attach(cfg, rec).await;
        }
        let access = self.access()?;
        let ready = self.opts.ready_timeout;
        let Some(st) = self.trial.as_mut() else {
            return Err(PlatformError::Deploy("nothing was deployed".into()));
        };
        let replicas = usize::try_from(k.replicas).unwrap_or(usize::MAX);
        let wrap = |t: Instant| move |(c, why): (Check, String)| fail(c, t, why);

        let t = Instant::now();
        let pods = st.pods.clone();
        checks::wait(preflight::IMAGE_PRESENT, ready, || {
            checks::probes_running(&pods.borrow(), replicas, &k.image)
        })
        .await
        .map_err(wrap(t))?;
        let Some(put) = checks::choose_put(&st.pods.borrow()) else {
            return Err(fail(
                preflight::IMAGE_PRESENT,
                t,
                "no running probe pod to choose",
            ));
        };
        ok(&preflight::IMAGE_PRESENT, t);
        let image_id = put
            .container
            .as_ref()
            .and_then(|c| c.image_id.clone())
            .unwrap_or_else(|| "unknown".into());
        rec.orchestrator(
            "pod_under_test_chosen",
            format!(
                "{} on node {} ({}), the first running probe pod by name of {replicas}; image {} resolved as {image_id}",
                put.name,
                put.node.as_deref().unwrap_or("unknown"),
                put.host_ip.as_deref().unwrap_or("unknown"),
                k.image
            ),
        );
        let _ = st.put_tx.send(Some(put.name.clone()));
        st.put = Some(put.name.clone());

        let (started_tx, started) = watch::channel(false);
        let name = put.name.clone();
        st.probe_log = Some(logs::follow(
            Api::namespaced(access.client.clone(), &st.ns),
            put.name.clone(),
            PROBE_CONTAINER,
            rec.clone(),
            relay::probe_lines(rec.clone(), started_tx),
            st.pods.clone(),
            move |v: &PodsView| {
                v.put_deleted
                    || v.probes
                        .get(&name)
                        .and_then(|p| p.container.as_ref())
                        .is_some_and(|c| c.terminated.is_some())
            },
            st.cancel.clone(),
        ));

        let put_alive = |v: &PodsView| -> Option<(Check, String)> {
            match v.probes.get(&put.name) {
                Some(p) => checks::pod_failure(p, &k.image),
                None => Some((
                    preflight::POD_READY,
                    format!("pod {} disappeared", put.name),
                )),
            }
        };
        let t = Instant::now();
        checks::wait(preflight::PROBE_LOG_DELIVERING, ready, || {
            if let Some((c, why)) = put_alive(&pods.borrow()) {
                return Poll::Failed(c, why);
            }
            if *started.borrow() {
                Poll::Ready(())
            } else {
                Poll::Waiting("no probe_started line yet".into())
            }
        })
        .await
        .map_err(wrap(t))?;
        ok(&preflight::PROBE_LOG_DELIVERING, t);

        let t = Instant::now();
        checks::wait(preflight::POD_READY, ready, || {
            let v = pods.borrow();
            if let Some((c, why)) = put_alive(&v) {
                return Poll::Failed(c, why);
            }
            match v.probes.get(&put.name) {
                Some(p) if p.is_ready() => Poll::Ready(()),
                _ => Poll::Waiting(format!("pod {} not Ready", put.name)),
            }
        })
        .await
        .map_err(wrap(t))?;
        ok(&preflight::POD_READY, t);

        let t = Instant::now();
        let slices = st.slices.clone();
        let key = pod_key(&put.name);
        checks::wait(preflight::WATCHES_SYNCED, Duration::from_secs(30), || {
            let (p, s) = (pods.borrow(), slices.borrow());
            match (p.synced, s.synced) {
                (false, _) => Poll::Waiting("the pod watch has not listed yet".into()),
                (_, false) => Poll::Waiting("the EndpointSlice watch has not listed yet".into()),
                _ if !s.slices.values().any(|f| f.contains_key(&key)) => Poll::Waiting(format!(
                    "no EndpointSlice of service {PROBE_NAME} lists {key} yet"
                )),
                _ => Poll::Ready(()),
            }
        })
        .await
        .map_err(wrap(t))?;
        ok(&preflight::WATCHES_SYNCED, t);

        let t = Instant::now();
        let stable = Duration::from_secs(2);
        checks::wait(
            preflight::ENDPOINT_STABLE,
            Duration::from_secs(60),
            || match slices.borrow().put_ready_since {
                Some(since) if host::mono_ns() - since >= stable.as_nanos() as i64 => {
                    Poll::Ready(())
                }
                Some(_) => Poll::Waiting(format!("{key} ready for less than 2 s")),
                None => Poll::Waiting(format!("{key} not ready in any slice")),
            },
        )
        .await
        .map_err(wrap(t))?;
        ok(&preflight::ENDPOINT_STABLE, t);
        Ok(())
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
        if let Some(a) = &st.attach {
            let mode = client_pod::Mode::Attach {
                args: a.client_args.clone(),
                node: a.client_node.as_ref().map(|n| n.hostname.clone()),
            };
            return client_pod::start(st, &access, ccfg, rec, ready, mode).await;
        }
        match st.placement {
            ClientPlacement::Host => {
                host_client::start(st, ccfg, rec, self.opts.exe.as_deref(), ready).await
            }
            ClientPlacement::Pod => {
                client_pod::start(st, &access, ccfg, rec, ready, client_pod::Mode::Probe).await
            }
        }
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
        let r = match cfg.trigger.as_str() {
            "delete" => trigger::delete(&pods, &put).await,
            "evict" => trigger::evict(&pods, &st.ns, &put).await,
            "scale" => {
                trigger::scale_to_zero(&Api::namespaced(access.client.clone(), &st.ns), PROBE_NAME)
                    .await
            }
            other => return Err(PlatformError::Trigger(format!("unknown trigger {other:?}"))),
        };
        r.map_err(|e| {
            PlatformError::Trigger(format!(
                "{} (RBAC for pods delete, pods/eviction create or deployments/scale patch?)",
                chain(&e)
            ))
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
        for f in [&st.probe_log, &st.client_log].into_iter().flatten() {
            f.task.abort();
        }
        let access = self.access()?;
        // The user's workload first: it is what must be left as found.
        let restored = match &st.attach {
            Some(a) => disrupt::restore(&access.client, a, rec).await,
            None => Ok(()),
        };
        let removed = teardown::objects(&access.client, &st, self.opts.api_timeout).await;
        let result = match (removed, restored) {
            (Ok(what), Ok(())) => {
                rec.orchestrator("workload_deleted", what);
                Ok(())
            }
            (Ok(what), Err(restore)) => {
                rec.orchestrator("workload_deleted", what);
                Err(PlatformError::Teardown(restore))
            }
            (Err(e), restored) => Err(PlatformError::Teardown(format!(
                "{}; remove it with `drainwatch cleanup`{}",
                chain(&e),
                restored.err().map(|r| format!("; {r}")).unwrap_or_default()
            ))),
        };
        result.and(clients)
    }
}
