//! The probe placement's deploy and preflight: drainwatch's own probe Deployment, Service
//! (and PDB) in the trial's namespace, the pod under test chosen among its replicas, and the
//! checks that its log, readiness and EndpointSlice are observed before any flow is dialled.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::PostParams;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::checks::{self, Poll};
use super::names::{TrialNames, open_namespace};
use super::relay;
use super::{KubernetesPlatform, TrialMode, TrialState, deploy_err, fail, ok};
use crate::evidence::event::EventName;
use crate::evidence::plan::{ClientPlacement, DrainBehavior, KubernetesConfig, TrialConfig};
use crate::host;
use crate::k8s::logs;
use crate::k8s::logs::Follower;
use crate::k8s::manifests::{self, WorkloadSpec};
use crate::k8s::translate::pod_key;
use crate::k8s::watch::{PodsView, SlicesView, spawn_pods, spawn_slices};
use crate::k8s::{K8sError, PROBE_CONTAINER, PROBE_NAME, access};
use crate::platform::shard::{self, Shards, trial_bound};
use crate::platform::{PlatformError, Target};
use crate::preflight::{self, Check};
use crate::recorder::Recorder;

impl KubernetesPlatform {
    /// Creates the probe workload and starts the trial's pod and EndpointSlice watches.
    pub(super) async fn deploy_probe(
        &mut self,
        cfg: &TrialConfig,
        trial_id: &str,
        rec: &Recorder,
        k: &KubernetesConfig,
    ) -> Result<Target, PlatformError> {
        let behavior = behavior(cfg)?;
        let access = self.access()?;
        let client = access.client.clone();
        let names = self.trial_namespace(cfg, trial_id);
        let (instance, ns, created_ns) =
            (names.instance.clone(), names.ns.clone(), names.created_ns);

        let t = Instant::now();
        let needs = access::needs(
            cfg.trigger,
            created_ns,
            k.client == ClientPlacement::Pod,
            k.pdb,
        );
        self.check_permissions(&access, &ns, &needs, t).await?;
        ok(&preflight::PERMISSIONS, t);

        let hold = trial_bound(cfg) + 2 * self.opts.ready_timeout;
        let (state, feeds) = probe_state(k, &names, cfg.clients, hold);
        let cancel = state.cancel.clone();
        // Recorded before anything is created, so teardown knows what to remove even if this
        // call is interrupted half way.
        self.trial = Some(state);
        let spec = WorkloadSpec::from_config(
            ns.clone(),
            instance.clone(),
            names.run.clone(),
            behavior,
            cfg,
            k,
        );
        let owned = open_namespace(&client, &ns, &self.run_id, created_ns, rec).await?;
        if let Some(st) = self.trial.as_mut() {
            st.owns_ns = owned;
        }
        let addr = create_objects(&client, &ns, &spec).await?;
        rec.orchestrator(
            EventName::WorkloadApplied,
            applied(cfg, k, &ns, created_ns, behavior, &spec, &addr),
        );
        rec.termination_settings(crate::k8s::settings::planned(&spec));
        let Some(st) = self.trial.as_mut() else {
            return Err(PlatformError::Deploy("trial state vanished".into()));
        };
        st.tasks.push(spawn_pods(
            Api::namespaced(client.clone(), &ns),
            manifests::trial_selector(&instance),
            feeds.put.clone(),
            rec.clone(),
            feeds.pods,
            cancel.clone(),
        ));
        st.tasks.push(spawn_slices(
            Api::<EndpointSlice>::namespaced(client.clone(), &ns),
            PROBE_NAME,
            feeds.put,
            rec.clone(),
            feeds.slices,
            cancel.clone(),
        ));
        let target = Target {
            host: addr.cluster_ip.clone(),
            tcp_port: cfg.tcp_port,
            udp_port: cfg.udp_port,
        };
        probe_mut(st)?.service = Some(addr);
        Ok(target)
    }

    /// Waits until the pod under test runs, logs, is Ready and is listed ready in a slice.
    pub(super) async fn preflight_probe(
        &mut self,
        rec: &Recorder,
        k: &KubernetesConfig,
    ) -> Result<(), PlatformError> {
        let access = self.access()?;
        let ready = self.opts.ready_timeout;
        let Some(st) = self.trial.as_mut() else {
            return Err(PlatformError::Deploy("nothing was deployed".into()));
        };
        let put = choose_put(st, k, rec, ready).await?;
        let started = follow_probe_log(st, &access.client, &put, rec)?;
        serving(st, &put, &k.image, &started, ready).await?;
        listed(st, &put).await
    }
}

/// What only a probe trial has: the probe's Service, the pod under test chosen among its
/// replicas, its log, and where the flow client runs.
pub(super) struct ProbeTrial {
    pub placement: ClientPlacement,
    /// The pod under test's name, once chosen: `put` here, `put_tx` for the watches.
    pub put_tx: watch::Sender<Option<String>>,
    pub put: Option<String>,
    /// The probe Service's EndpointSlices.
    pub slices: watch::Receiver<SlicesView>,
    pub service: Option<ServiceAddr>,
    pub probe_log: Option<Follower>,
    /// How long a host child may outlive a killed orchestrator (`--client host --clients N`).
    pub hold: Duration,
    /// The host child processes, once started.
    pub shards: Option<Shards>,
}

/// The probe Service's address and, with the host placement, its NodePorts.
pub(super) struct ServiceAddr {
    pub cluster_ip: String,
    pub tcp_node_port: Option<u16>,
    pub udp_node_port: Option<u16>,
}

/// A probe trial's own part of `st`, or the deploy error of a trial that is not one.
fn probe_mut(st: &mut TrialState) -> Result<&mut ProbeTrial, PlatformError> {
    match &mut st.mode {
        TrialMode::Probe(p) => Ok(p),
        TrialMode::Attach(_) => Err(PlatformError::Deploy("not a probe trial".into())),
    }
}

/// Where the watches of a probe trial publish, and the pod under test's name they follow.
struct Feeds {
    put: watch::Receiver<Option<String>>,
    pods: watch::Sender<PodsView>,
    slices: watch::Sender<SlicesView>,
}

/// The trial state of a probe trial, before anything is created, and its watches' feeds.
fn probe_state(
    k: &KubernetesConfig,
    names: &TrialNames,
    clients: u32,
    hold: Duration,
) -> (TrialState, Feeds) {
    let (put_tx, put) = watch::channel(None);
    let (pods_tx, pods) = watch::channel(PodsView::default());
    let (slices_tx, slices) = watch::channel(SlicesView::default());
    let state = TrialState {
        ns: names.ns.clone(),
        image: k.image.clone(),
        owns_ns: false,
        instance: names.instance.clone(),
        run: names.run.clone(),
        cancel: CancellationToken::new(),
        pods,
        client_logs: Vec::new(),
        clients,
        shard_placement: k.shard_placement,
        tasks: vec![],
        mode: TrialMode::Probe(ProbeTrial {
            placement: k.client,
            put_tx,
            put: None,
            slices,
            service: None,
            probe_log: None,
            hold,
            shards: None,
        }),
    };
    let feeds = Feeds {
        put,
        pods: pods_tx,
        slices: slices_tx,
    };
    (state, feeds)
}

/// The `workload_applied` line: what was created, with which knobs.
fn applied(
    cfg: &TrialConfig,
    k: &KubernetesConfig,
    ns: &str,
    created_ns: bool,
    behavior: DrainBehavior,
    spec: &WorkloadSpec,
    addr: &ServiceAddr,
) -> String {
    format!(
        "namespace={ns}{} deployment={PROBE_NAME} replicas={} image={} behavior={} grace={}s prestop_sleep={}s readiness_period={}s service={} clusterIP={}{}",
        if created_ns { " (created)" } else { " (given)" },
        k.replicas,
        k.image,
        behavior,
        cfg.grace_period_seconds,
        k.prestop_sleep_seconds,
        k.readiness_period_seconds,
        if spec.node_port {
            "NodePort"
        } else {
            "ClusterIP"
        },
        addr.cluster_ip,
        if k.pdb { " pdb=maxUnavailable:0" } else { "" }
    )
}

/// The probe's drain behaviour, once the request is known to fit the client processes.
fn behavior(cfg: &TrialConfig) -> Result<DrainBehavior, PlatformError> {
    let Some(behavior) = cfg.drain_behavior else {
        return Err(PlatformError::Deploy(
            "the kubernetes platform deploys drainwatch's probe and needs a --drain-behavior"
                .into(),
        ));
    };
    shard::fits(cfg)?;
    Ok(behavior)
}

/// A create call's result: an object of that name that already exists (a parallel run's in a
/// shared `--namespace`) is the named [`PlatformError::Exists`], with the run mark it carries.
async fn created<K>(
    r: Result<K, kube::Error>,
    api: &Api<K>,
    ns: &str,
    kind: &str,
) -> Result<K, PlatformError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match r {
        Ok(o) => Ok(o),
        Err(e) if crate::k8s::status_code(&e) == Some(409) => {
            let owner = api
                .get_opt(PROBE_NAME)
                .await
                .ok()
                .flatten()
                .and_then(|o| o.meta().labels.clone())
                .and_then(|l| l.get(crate::k8s::labels::RUN).cloned());
            Err(PlatformError::Exists {
                what: format!("{kind} {ns}/{PROBE_NAME}"),
                owner,
            })
        }
        Err(e) => Err(deploy_err(K8sError::api(format!(
            "create {kind} {ns}/{PROBE_NAME}"
        ))(e))),
    }
}

/// Creates the PDB (if asked), the Deployment and the Service; returns the Service's address.
async fn create_objects(
    client: &kube::Client,
    ns: &str,
    spec: &WorkloadSpec,
) -> Result<ServiceAddr, PlatformError> {
    let pp = PostParams::default();
    if let Some(pdb) = manifests::pdb(spec) {
        let api = Api::<PodDisruptionBudget>::namespaced(client.clone(), ns);
        let r = api.create(&pp, &pdb).await;
        created(r, &api, ns, "poddisruptionbudget").await?;
    }
    let api = Api::<Deployment>::namespaced(client.clone(), ns);
    let r = api.create(&pp, &manifests::deployment(spec)).await;
    created(r, &api, ns, "deployment").await?;
    let api = Api::<Service>::namespaced(client.clone(), ns);
    let r = api.create(&pp, &manifests::service(spec)).await;
    let svc = created(r, &api, ns, "service").await?;
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
    Ok(ServiceAddr {
        cluster_ip: sspec.cluster_ip.clone().unwrap_or_default(),
        tcp_node_port: node_port("probe-tcp"),
        udp_node_port: node_port("probe-udp"),
    })
}

/// A failed wait of check `c` started at `t`, as a preflight failure.
fn wrap(t: Instant) -> impl FnOnce((Check, String)) -> PlatformError {
    move |(c, why)| fail(c, t, why)
}

/// The image-present check, then the pod under test: the first running probe pod by name.
async fn choose_put(
    st: &mut TrialState,
    k: &KubernetesConfig,
    rec: &Recorder,
    ready: Duration,
) -> Result<String, PlatformError> {
    let replicas = usize::try_from(k.replicas).unwrap_or(usize::MAX);
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
        EventName::PodUnderTestChosen,
        format!(
            "{} on node {} ({}), the first running probe pod by name of {replicas}; image {} resolved as {image_id}",
            put.name,
            put.node.as_deref().unwrap_or("unknown"),
            put.host_ip.as_deref().unwrap_or("unknown"),
            k.image
        ),
    );
    let p = probe_mut(st)?;
    let _ = p.put_tx.send(Some(put.name.clone()));
    p.put = Some(put.name.clone());
    Ok(put.name)
}

/// Follows the pod under test's log; the receiver turns true at its `probe_started` line.
fn follow_probe_log(
    st: &mut TrialState,
    client: &kube::Client,
    put: &str,
    rec: &Recorder,
) -> Result<watch::Receiver<bool>, PlatformError> {
    let (started_tx, started) = watch::channel(false);
    let name = put.to_string();
    let follower = logs::follow(
        Api::namespaced(client.clone(), &st.ns),
        (put.to_string(), logs::From::Start),
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
    );
    probe_mut(st)?.probe_log = Some(follower);
    Ok(started)
}

/// The probe-log-delivering and pod-ready checks, failing early if the pod under test fails.
async fn serving(
    st: &TrialState,
    put: &str,
    image: &str,
    started: &watch::Receiver<bool>,
    ready: Duration,
) -> Result<(), PlatformError> {
    let pods = st.pods.clone();
    let put_alive = |v: &PodsView| -> Option<(Check, String)> {
        match v.probes.get(put) {
            Some(p) => checks::pod_failure(p, image),
            None => Some((preflight::POD_READY, format!("pod {put} disappeared"))),
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
        match v.probes.get(put) {
            Some(p) if p.is_ready() => Poll::Ready(()),
            _ => Poll::Waiting(format!("pod {put} not Ready")),
        }
    })
    .await
    .map_err(wrap(t))?;
    ok(&preflight::POD_READY, t);
    Ok(())
}

/// The watches-synced and endpoint-stable checks: the pod under test is listed ready in an
/// EndpointSlice of the probe's Service, and has been for 2 s.
async fn listed(st: &TrialState, put: &str) -> Result<(), PlatformError> {
    let pods = st.pods.clone();
    let t = Instant::now();
    let Some(probe) = st.probe() else {
        return Err(PlatformError::Deploy("not a probe trial".into()));
    };
    let slices = probe.slices.clone();
    let key = pod_key(put);
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
            Some(since) if host::mono_ns() - since >= stable.as_nanos() as i64 => Poll::Ready(()),
            Some(_) => Poll::Waiting(format!("{key} ready for less than 2 s")),
            None => Poll::Waiting(format!("{key} not ready in any slice")),
        },
    )
    .await
    .map_err(wrap(t))?;
    ok(&preflight::ENDPOINT_STABLE, t);
    Ok(())
}
