//! The pod placement of the flow client: a pod of the probe's image runs `drainwatch client`
//! against the Service's ClusterIP and streams its event lines over its log, which are relayed
//! into the trial; deleting the pod (SIGTERM) closes its observation window.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, PostParams, Preconditions};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::checks::{self, Poll};
use super::relay::{self, ClientStream};
use super::{TrialState, fail, ok};
use crate::evidence::event::EventName;
use crate::k8s::client::ClusterAccess;
use crate::k8s::manifests::{self, ClientSpec};
use crate::k8s::watch::PodsView;
use crate::k8s::{CLIENT_CONTAINER, CLIENT_NAME, K8sError, logs};
use crate::net::ClientConfig;
use crate::net::follow::LineTracker;
use crate::platform::flows::AttachProgress;
use crate::platform::{Flows, PlatformError};
use crate::preflight;
use crate::recorder::Recorder;

/// Whether the client pod will write no more: its container ended, or the pod is gone. A pod
/// not seen yet, or without a container status yet, has not ended (its log may open empty
/// before the container starts).
fn client_ended(v: &PodsView) -> bool {
    v.clients_deleted.contains(CLIENT_NAME)
        || v.clients
            .get(CLIENT_NAME)
            .and_then(|p| p.container.as_ref())
            .is_some_and(|c| c.terminated.is_some())
}

/// What runs in the client pod: drainwatch's flows against the probe, or an attach client
/// (its arguments, and the node it is pinned to).
pub(super) enum Mode {
    /// `drainwatch client` against the probe's Service.
    Probe,
    /// `drainwatch client --attach …`, optionally pinned to a `kubernetes.io/hostname`.
    Attach {
        /// The client's arguments.
        args: Vec<String>,
        /// The node to pin to.
        node: Option<String>,
        /// The CA ConfigMap to mount (`--tls --ca-file`).
        ca_config_map: Option<String>,
    },
}

/// Creates the client pod, relays its events and returns its flows once it streams.
pub(super) async fn start(
    st: &mut TrialState,
    access: &ClusterAccess,
    ccfg: ClientConfig,
    rec: &Recorder,
    ready: Duration,
    mode: Mode,
) -> Result<Flows, PlatformError> {
    let (attach_args, node, ca_config_map) = match mode {
        Mode::Probe => (None, None, None),
        Mode::Attach {
            args,
            node,
            ca_config_map,
        } => (Some(args), node, ca_config_map),
    };
    let attached = attach_args.is_some();
    let mut spec = spec(st, &ccfg, attach_args, node.clone());
    spec.ca_config_map = ca_config_map;
    let pods: Api<Pod> = Api::namespaced(access.client.clone(), &st.ns);
    let t = Instant::now();
    let pod = match pods
        .create(&PostParams::default(), &manifests::client_pod(&spec))
        .await
    {
        Ok(p) => p,
        // A parallel run's client pod in a shared --namespace: named, and left alone.
        Err(e) if crate::k8s::status_code(&e) == Some(409) => {
            return Err(PlatformError::Exists {
                what: format!("pod {}/{CLIENT_NAME}", st.ns),
                owner: None,
            });
        }
        Err(e) => {
            return Err(PlatformError::Cluster(K8sError::api(format!(
                "create pod {}/{CLIENT_NAME}",
                st.ns
            ))(e)));
        }
    };
    rec.orchestrator(
        EventName::ClientPodCreated,
        created(&ccfg, attached, node.as_deref()),
    );

    let relayed = follow_log(st, &pods, &ccfg, rec)?;
    wait_running(st, &relayed.state, ready, t).await?;
    ok(&preflight::CLIENT_POD_RUNNING, t);
    rec.orchestrator(
        if attached {
            EventName::ClientPodRunning
        } else {
            EventName::TargetResolved
        },
        running(st, &relayed.state, &ccfg, attached),
    );

    let close = closer(st, pods, pod.metadata.uid, rec);
    let flows = Flows::relayed(relayed.progress, close, relayed.done);
    Ok(if attached {
        flows.with_attach(relayed.attach)
    } else {
        flows
    })
}

/// The client pod's spec: the flows of `ccfg`, or the attach client's arguments.
fn spec(
    st: &TrialState,
    ccfg: &ClientConfig,
    attach_args: Option<Vec<String>>,
    node: Option<String>,
) -> ClientSpec {
    ClientSpec {
        namespace: st.ns.clone(),
        instance: st.instance.clone(),
        run: st.run.clone(),
        image: st.image.clone(),
        host: ccfg.host.clone(),
        tcp_port: ccfg.tcp_port,
        udp_port: ccfg.udp_port,
        tcp_flows: ccfg.tcp_flows,
        udp_flows: ccfg.udp_flows,
        interval_ms: u64::try_from(ccfg.interval.as_millis()).unwrap_or(u64::MAX),
        flow_timeout_ms: u64::try_from(ccfg.flow_timeout.as_millis()).unwrap_or(u64::MAX),
        udp_silence_datagrams: ccfg.udp_silence_datagrams,
        // An upper bound only: the trial ends the client by deleting its pod.
        duration_seconds: 24 * 3600,
        attach_args,
        ca_config_map: None,
        node,
    }
}

/// The `client_pod_created` line: what the client runs against.
fn created(ccfg: &ClientConfig, attached: bool, node: Option<&str>) -> String {
    if attached {
        format!(
            "{CLIENT_NAME} runs `drainwatch client --attach` against {}:{}{}, streaming its events over its log",
            ccfg.host,
            ccfg.tcp_port,
            node.map(|n| format!(", pinned to node {n}"))
                .unwrap_or_default()
        )
    } else {
        format!(
            "{CLIENT_NAME} runs `drainwatch client` against {}:{} (tcp) and {}:{} (udp), streaming its events over its log",
            ccfg.host, ccfg.tcp_port, ccfg.host, ccfg.udp_port
        )
    }
}

/// What the relay of the client's log gives the trial.
struct Relayed {
    /// The flows' progress, as the relayed lines report it.
    progress: Arc<crate::net::progress::Progress>,
    /// The stream's state (started, boot id, attach counts).
    state: watch::Receiver<ClientStream>,
    /// The attach counts alone, for the trial loop.
    attach: watch::Receiver<AttachProgress>,
    /// Turns true when the log follower has ended.
    done: watch::Receiver<bool>,
}

/// Follows the client pod's log and relays its lines into the trial.
fn follow_log(
    st: &mut TrialState,
    pods: &Api<Pod>,
    ccfg: &ClientConfig,
    rec: &Recorder,
) -> Result<Relayed, PlatformError> {
    let tracker = Arc::new(Mutex::new(LineTracker::new(ccfg.flow_ids())));
    let progress = tracker
        .lock()
        .map(|t| t.progress())
        .map_err(|_| PlatformError::Deploy("the client progress tracker is poisoned".into()))?;
    let (state_tx, state) = watch::channel(ClientStream::default());
    let (attach_tx, attach) = watch::channel(AttachProgress::default());
    let mut counts = state.clone();
    // The trial loop reads only the attach counts; they follow the stream's state.
    st.tasks.push(tokio::spawn(async move {
        while counts.changed().await.is_ok() {
            let a = counts.borrow_and_update().attach.clone();
            attach_tx.send_replace(a);
        }
    }));
    let follower = logs::follow(
        pods.clone(),
        CLIENT_NAME.to_string(),
        CLIENT_CONTAINER,
        rec.clone(),
        relay::client_lines(rec.clone(), tracker, state_tx),
        st.pods.clone(),
        client_ended,
        st.cancel.clone(),
    );
    let done = follower.done.clone();
    st.client_log = Some(follower);
    Ok(Relayed {
        progress,
        state,
        attach,
        done,
    })
}

/// The client-pod-running check: the pod runs and its log has streamed `trial_started`.
async fn wait_running(
    st: &TrialState,
    state: &watch::Receiver<ClientStream>,
    ready: Duration,
    t: Instant,
) -> Result<(), PlatformError> {
    let view = st.pods.clone();
    let image = &st.image;
    checks::wait(preflight::CLIENT_POD_RUNNING, ready, || {
        let v = view.borrow();
        let Some(p) = v.clients.get(CLIENT_NAME) else {
            return Poll::Waiting("the client pod is not in the pod watch yet".into());
        };
        if let Some((_, why)) = checks::pod_failure(p, image) {
            return Poll::Failed(
                preflight::CLIENT_POD_RUNNING,
                why.replace("the probe", "the client"),
            );
        }
        if state.borrow().started {
            return Poll::Ready(());
        }
        Poll::Waiting(format!(
            "client pod phase={} node={}, no trial_started line yet",
            p.phase.as_deref().unwrap_or("unknown"),
            p.node.as_deref().unwrap_or("unscheduled")
        ))
    })
    .await
    .map_err(|(c, why)| fail(c, t, why))
}

/// Where the running client pod is and what it dials.
fn running(
    st: &TrialState,
    state: &watch::Receiver<ClientStream>,
    ccfg: &ClientConfig,
    attached: bool,
) -> String {
    let node = st
        .pods
        .borrow()
        .clients
        .get(CLIENT_NAME)
        .and_then(|p| p.node.clone())
        .unwrap_or_else(|| "unknown".into());
    let boot = state
        .borrow()
        .boot_id
        .clone()
        .unwrap_or_else(|| "unknown".into());
    format!(
        "client pod {CLIENT_NAME} on node {node} (boot id {boot}) dials ClusterIP {}:{} tcp{}",
        ccfg.host,
        ccfg.tcp_port,
        if attached {
            String::new()
        } else {
            format!(" and {}:{} udp", ccfg.host, ccfg.udp_port)
        }
    )
}

/// Closing the window: SIGTERM to the client (pod deletion); it records observation_end for
/// every live flow, prints it and exits, and the follower relays those last lines. The
/// deletion names the pod this trial created by its uid, so no other pod of the name is hit.
fn closer(
    st: &mut TrialState,
    pods: Api<Pod>,
    uid: Option<String>,
    rec: &Recorder,
) -> CancellationToken {
    let close = CancellationToken::new();
    let closing = close.clone();
    let (rec2, ns) = (rec.clone(), st.ns.clone());
    st.tasks.push(tokio::spawn(async move {
        closing.cancelled().await;
        let dp = DeleteParams {
            preconditions: Some(Preconditions {
                uid,
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        if let Err(e) = pods.delete(CLIENT_NAME, &dp).await {
            rec2.orchestrator(
                EventName::ClientPodDeleteFailed,
                format!("deleting {ns}/{CLIENT_NAME} to close the window failed: {e}"),
            );
        }
    }));
    close
}
