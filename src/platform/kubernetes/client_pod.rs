//! The pod placement of the flow client: a pod of the probe's image runs `drainwatch client`
//! against the Service's ClusterIP and streams its event lines over its log, which are relayed
//! into the trial; deleting the pod (SIGTERM) closes its observation window. With `--clients N`
//! there are N such pods ([`super::shard_pods`]), their lines merged into one trial.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, PostParams, Preconditions};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::checks::{self, Poll};
use super::client_loss;
use super::relay::{self, ClientStream};
use super::shard_pods::{self, ShardPod};
use super::{TrialState, fail, ok};
use crate::evidence::attach::AttachConfig;
use crate::evidence::event::EventName;
use crate::evidence::plan::client::{AttachClient, ClientInvocation};
use crate::k8s::client::ClusterAccess;
use crate::k8s::manifests::{self, ClientSpec};
use crate::k8s::watch::PodsView;
use crate::k8s::{CLIENT_CONTAINER, K8sError, logs};
use crate::net::ClientConfig;
use crate::net::follow::LineTracker;
use crate::platform::{Flows, PlatformError, shard};
use crate::preflight;
use crate::recorder::Recorder;

/// Whether client pod `name` will write no more: its container ended, or the pod is gone. A
/// pod not seen yet, or without a container status yet, has not ended (its log may open empty
/// before the container starts).
fn client_ended(v: &PodsView, name: &str) -> bool {
    v.clients_deleted.contains(name)
        || v.clients
            .get(name)
            .and_then(|p| p.container.as_ref())
            .is_some_and(|c| c.terminated.is_some())
}

/// What runs in the client pod: drainwatch's flows against the probe, or an attach client
/// (its arguments, and the node it is pinned to).
pub(super) enum Mode {
    /// `drainwatch client` against the probe's Service.
    Probe,
    /// `drainwatch client --attach …`.
    Attach {
        /// What every client dials (the run's flows and dials; a shard takes its own part).
        dial: Box<AttachConfig>,
        /// The CA ConfigMap to mount (`--tls --ca-file`).
        ca_config_map: Option<String>,
        /// The managed ingress's name and address for /etc/hosts (`--ingress-managed`).
        host_alias: Option<(String, String)>,
    },
}

/// A client pod created and followed.
struct Started {
    pod: ShardPod,
    uid: Option<String>,
    relayed: Relayed,
}

/// Creates the client pods, relays their events and returns their merged flows once every
/// one streams.
pub(super) async fn start(
    st: &mut TrialState,
    access: &ClusterAccess,
    ccfg: ClientConfig,
    rec: &Recorder,
    ready: Duration,
    (mode, shards): (Mode, Vec<ShardPod>),
) -> Result<Flows, PlatformError> {
    let (dial, ca_config_map, host_alias) = match mode {
        Mode::Probe => (None, None, None),
        Mode::Attach {
            dial,
            ca_config_map,
            host_alias,
        } => (Some(dial), ca_config_map, host_alias),
    };
    let attached = dial.is_some();
    let pods: Api<Pod> = Api::namespaced(access.client.clone(), &st.ns);
    let tracker = Arc::new(Mutex::new(LineTracker::new(ccfg.flow_ids())));
    let progress = tracker
        .lock()
        .map(|t| t.progress())
        .map_err(|_| PlatformError::Deploy("the client progress tracker is poisoned".into()))?;
    let t = Instant::now();
    let mut started = Vec::with_capacity(shards.len());
    for pod in shards {
        let mut spec = spec(st, &ccfg, &pod, dial.as_deref());
        spec.ca_config_map = ca_config_map.clone();
        spec.host_alias = host_alias.clone();
        let uid = create(st, &pods, &spec).await?;
        rec.orchestrator(EventName::ClientPodCreated, created(&ccfg, attached, &pod));
        let relayed = follow_log(st, &pods, &pod, tracker.clone(), rec);
        started.push(Started { pod, uid, relayed });
    }
    wait_running(st, &started, ready, t).await?;
    ok(&preflight::CLIENT_POD_RUNNING, t);
    for s in &started {
        let on = st
            .pods
            .borrow()
            .clients
            .get(&s.pod.name)
            .and_then(|p| p.node.clone());
        rec.on_node(
            if attached {
                EventName::ClientPodRunning
            } else {
                EventName::TargetResolved
            },
            running(
                &s.pod.name,
                on.as_deref(),
                &s.relayed.state,
                &ccfg,
                attached,
            ),
            on,
        );
    }
    let close = closer(
        st,
        pods,
        started
            .iter()
            .map(|s| (s.pod.name.clone(), s.uid.clone()))
            .collect(),
        rec,
    );
    let shards = started.iter().map(|s| s.pod.clone()).collect();
    let lost = client_loss::watch(st, &close, shards, tracker, rec);
    let done = shard_pods::all_done(st, started.iter().map(|s| s.relayed.done.clone()).collect());
    let flows = Flows::relayed(progress, close, done).with_loss(lost);
    Ok(if attached {
        flows.with_attach(shard_pods::summed(
            st,
            started.iter().map(|s| s.relayed.state.clone()).collect(),
        ))
    } else {
        flows
    })
}

/// Creates one client pod; returns its uid (the close deletes that pod and no other).
async fn create(
    st: &TrialState,
    pods: &Api<Pod>,
    spec: &ClientSpec,
) -> Result<Option<String>, PlatformError> {
    match pods
        .create(&PostParams::default(), &manifests::client_pod(spec))
        .await
    {
        Ok(p) => Ok(p.metadata.uid),
        // A parallel run's client pod in a shared --namespace: named, and left alone.
        Err(e) if crate::k8s::status_code(&e) == Some(409) => Err(PlatformError::Exists {
            what: format!("pod {}/{}", st.ns, spec.name),
            owner: None,
        }),
        Err(e) => Err(PlatformError::Cluster(K8sError::api(format!(
            "create pod {}/{}",
            st.ns, spec.name
        ))(e))),
    }
}

/// A client pod's spec: its slice of the flows of `ccfg`, or its part of the attach client's
/// connections and dials.
fn spec(
    st: &TrialState,
    ccfg: &ClientConfig,
    pod: &ShardPod,
    dial: Option<&AttachConfig>,
) -> ClientSpec {
    let invocation = match dial {
        Some(d) => ClientInvocation::Attach(Box::new(AttachClient {
            config: d.clone(),
            shard: shard_pods::attach_shard(pod),
        })),
        // An upper bound only: the trial ends the client by deleting its pod. A pod is another
        // network host: its lines carry clock samples.
        None => ClientInvocation::Probe(shard::probe_client(ccfg, pod.slice, 24 * 3600, true)),
    };
    ClientSpec {
        name: pod.name.clone(),
        namespace: st.ns.clone(),
        instance: st.instance.clone(),
        run: st.run.clone(),
        image: st.image.clone(),
        invocation,
        ca_config_map: None,
        node: pod.node.clone(),
        spread: pod.spread,
        host_alias: None,
    }
}

/// The `client_pod_created` line: what the client runs against.
fn created(ccfg: &ClientConfig, attached: bool, pod: &ShardPod) -> String {
    let name = &pod.name;
    let share = match (pod.sharded(), attached) {
        (false, _) => String::new(),
        (true, false) => format!(
            ", shard {} of {} ({})",
            pod.index + 1,
            pod.count,
            pod.slice.describe()
        ),
        (true, true) => format!(
            ", shard {} of {} (held connections {}, dials {}, {}, …)",
            pod.index + 1,
            pod.count,
            match pod.slice.tcp {
                0 => "none".to_string(),
                n => format!("{}..{}", pod.slice.first_tcp, pod.slice.first_tcp + n - 1),
            },
            pod.index + 1,
            pod.index + 1 + pod.count
        ),
    };
    let pin = pod
        .node
        .as_ref()
        .map(|n| format!(", pinned to node {n}"))
        .unwrap_or_default();
    if attached {
        format!(
            "{name} runs `drainwatch client --attach` against {}:{}{pin}{share}, streaming its events over its log",
            ccfg.host, ccfg.tcp_port,
        )
    } else {
        format!(
            "{name} runs `drainwatch client` against {}:{} (tcp) and {}:{} (udp){pin}{share}, streaming its events over its log",
            ccfg.host, ccfg.tcp_port, ccfg.host, ccfg.udp_port
        )
    }
}

/// What the relay of a client pod's log gives the trial.
struct Relayed {
    /// The stream's state (started, boot id, attach counts).
    state: watch::Receiver<ClientStream>,
    /// Turns true when the log follower has ended.
    done: watch::Receiver<bool>,
}

/// Follows a client pod's log and relays its lines into the trial; a shard's dials carry its
/// node, so the data plane is seen per node.
fn follow_log(
    st: &mut TrialState,
    pods: &Api<Pod>,
    pod: &ShardPod,
    tracker: Arc<Mutex<LineTracker>>,
    rec: &Recorder,
) -> Relayed {
    let (state_tx, state) = watch::channel(ClientStream::default());
    let name = pod.name.clone();
    let view = st.pods.clone();
    let stamp: relay::NodeStamp = pod.sharded().then(|| {
        let name = name.clone();
        Box::new(move || {
            view.borrow()
                .clients
                .get(&name)
                .and_then(|p| p.node.clone())
        }) as Box<dyn Fn() -> Option<String> + Send>
    });
    let ended_name = name.clone();
    let follower = logs::follow(
        pods.clone(),
        (name, logs::From::Start),
        CLIENT_CONTAINER,
        rec.clone(),
        relay::client_lines(rec.clone(), tracker, state_tx, stamp),
        st.pods.clone(),
        move |v| client_ended(v, &ended_name),
        st.cancel.clone(),
    );
    let done = follower.done.clone();
    st.client_logs.push(follower);
    Relayed { state, done }
}

/// The client-pod-running check: every client pod runs and its log has streamed
/// `trial_started`.
async fn wait_running(
    st: &TrialState,
    started: &[Started],
    ready: Duration,
    t: Instant,
) -> Result<(), PlatformError> {
    let view = st.pods.clone();
    let image = &st.image;
    checks::wait(preflight::CLIENT_POD_RUNNING, ready, || {
        let v = view.borrow();
        let mut waiting = Vec::new();
        for s in started {
            let name = &s.pod.name;
            let Some(p) = v.clients.get(name) else {
                waiting.push(format!("{name} is not in the pod watch yet"));
                continue;
            };
            if let Some((_, why)) = checks::pod_failure(p, image) {
                let why = why.replace("the probe", "the client");
                return Poll::Failed(
                    preflight::CLIENT_POD_RUNNING,
                    if s.pod.sharded() {
                        format!("client pod {name}: {why}")
                    } else {
                        why
                    },
                );
            }
            if !s.relayed.state.borrow().started {
                waiting.push(format!(
                    "client pod {name} phase={} node={}, no trial_started line yet",
                    p.phase.as_deref().unwrap_or("unknown"),
                    p.node.as_deref().unwrap_or("unscheduled")
                ));
            }
        }
        if waiting.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Waiting(waiting.join("; "))
        }
    })
    .await
    .map_err(|(c, why)| fail(c, t, why))
}

/// Where a running client pod is and what it dials.
fn running(
    name: &str,
    node: Option<&str>,
    state: &watch::Receiver<ClientStream>,
    ccfg: &ClientConfig,
    attached: bool,
) -> String {
    let node = node.unwrap_or("unknown");
    let boot = state
        .borrow()
        .boot_id
        .clone()
        .unwrap_or_else(|| "unknown".into());
    format!(
        "client pod {name} on node {node} (boot id {boot}) dials ClusterIP {}:{} tcp{}",
        ccfg.host,
        ccfg.tcp_port,
        if attached {
            String::new()
        } else {
            format!(" and {}:{} udp", ccfg.host, ccfg.udp_port)
        }
    )
}

/// Closing the window: SIGTERM to every client (pod deletion); each records observation_end
/// for its live flows, prints it and exits, and its follower relays those last lines. The
/// deletion names each pod this trial created by its uid, so no other pod of the name is hit.
fn closer(
    st: &mut TrialState,
    pods: Api<Pod>,
    created: Vec<(String, Option<String>)>,
    rec: &Recorder,
) -> CancellationToken {
    let close = CancellationToken::new();
    let closing = close.clone();
    let (rec2, ns) = (rec.clone(), st.ns.clone());
    st.tasks.push(tokio::spawn(async move {
        closing.cancelled().await;
        for (name, uid) in created {
            let dp = DeleteParams {
                preconditions: Some(Preconditions {
                    uid,
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            match pods.delete(&name, &dp).await {
                Ok(_) => {}
                // Gone already (a client lost under the trial): what the close wanted.
                Err(e) if crate::k8s::status_code(&e) == Some(404) => {}
                Err(e) => {
                    rec2.orchestrator(
                        EventName::ClientPodDeleteFailed,
                        format!("deleting {ns}/{name} to close the window failed: {e}"),
                    );
                }
            }
        }
    }));
    close
}
