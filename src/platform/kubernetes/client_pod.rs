//! The pod placement of the flow client: a pod of the probe's image runs `drainwatch client`
//! against the Service's ClusterIP and streams its event lines over its log, which are relayed
//! into the trial; deleting the pod (SIGTERM) closes its observation window.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::checks::{self, Poll};
use super::relay::{self, ClientStream};
use super::{TrialState, fail, ok};
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
    let (attach_args, node) = match mode {
        Mode::Probe => (None, None),
        Mode::Attach { args, node } => (Some(args), node),
    };
    let attached = attach_args.is_some();
    let image = st.image.clone();
    let spec = ClientSpec {
        namespace: st.ns.clone(),
        instance: st.instance.clone(),
        image: image.clone(),
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
        node: node.clone(),
    };
    let pods: Api<Pod> = Api::namespaced(access.client.clone(), &st.ns);
    let t = Instant::now();
    pods.create(&PostParams::default(), &manifests::client_pod(&spec))
        .await
        .map_err(K8sError::api(format!("create pod {}/{CLIENT_NAME}", st.ns)))
        .map_err(PlatformError::Cluster)?;
    rec.orchestrator(
        "client_pod_created",
        if attached {
            format!(
                "{CLIENT_NAME} runs `drainwatch client --attach` against {}:{}{}, streaming its events over its log",
                ccfg.host,
                ccfg.tcp_port,
                node.as_deref()
                    .map(|n| format!(", pinned to node {n}"))
                    .unwrap_or_default()
            )
        } else {
            format!(
                "{CLIENT_NAME} runs `drainwatch client` against {}:{} (tcp) and {}:{} (udp), streaming its events over its log",
                ccfg.host, ccfg.tcp_port, ccfg.host, ccfg.udp_port
            )
        },
    );

    let tracker = Arc::new(Mutex::new(LineTracker::new(ccfg.flow_ids())));
    let progress = tracker
        .lock()
        .map(|t| t.progress())
        .map_err(|_| PlatformError::Deploy("the client progress tracker is poisoned".into()))?;
    let (state_tx, state) = watch::channel(ClientStream::default());
    let (attach_tx, attach_rx) = watch::channel(AttachProgress::default());
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

    let view = st.pods.clone();
    checks::wait(preflight::CLIENT_POD_RUNNING, ready, || {
        let v = view.borrow();
        let Some(p) = v.clients.get(CLIENT_NAME) else {
            return Poll::Waiting("the client pod is not in the pod watch yet".into());
        };
        if let Some((_, why)) = checks::pod_failure(p, &image) {
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
    .map_err(|(c, why)| fail(c, t, why))?;
    ok(&preflight::CLIENT_POD_RUNNING, t);
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
    rec.orchestrator(
        if attached {
            "client_pod_running"
        } else {
            "target_resolved"
        },
        format!(
            "client pod {CLIENT_NAME} on node {node} (boot id {boot}) dials ClusterIP {}:{} tcp{}",
            ccfg.host,
            ccfg.tcp_port,
            if attached {
                String::new()
            } else {
                format!(" and {}:{} udp", ccfg.host, ccfg.udp_port)
            }
        ),
    );

    // Closing the window: SIGTERM to the client (pod deletion); it records observation_end for
    // every live flow, prints it and exits, and the follower relays those last lines.
    let close = CancellationToken::new();
    let closing = close.clone();
    let (rec2, ns) = (rec.clone(), st.ns.clone());
    st.tasks.push(tokio::spawn(async move {
        closing.cancelled().await;
        if let Err(e) = pods.delete(CLIENT_NAME, &DeleteParams::default()).await {
            rec2.orchestrator(
                "client_pod_delete_failed",
                format!("deleting {ns}/{CLIENT_NAME} to close the window failed: {e}"),
            );
        }
    }));
    let flows = Flows::relayed(progress, close, done);
    Ok(if attached {
        flows.with_attach(attach_rx)
    } else {
        flows
    })
}
