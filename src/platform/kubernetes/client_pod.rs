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
    let on = st
        .pods
        .borrow()
        .clients
        .get(CLIENT_NAME)
        .and_then(|p| p.node.clone());
    rec.on_node(
        if attached {
            EventName::ClientPodRunning
        } else {
            EventName::TargetResolved
        },
        running(on.as_deref(), &relayed.state, &ccfg, attached),
        on,
    );

    let close = closer(st, pods, pod.metadata.uid, rec);
    let lost = watch_loss(st, &close, rec);
    let flows = Flows::relayed(relayed.progress, close, relayed.done).with_loss(lost);
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

/// Why the client pod will write no more before the trial closes the window, if so: deleted
/// (by anyone: the trial's own close is told apart by the caller), gone from the API, or its
/// container failed. A container that exited 0 ended on its own once every flow had ended
/// (`drainwatch client` stops early then): nothing was lost.
fn loss(v: &PodsView, ns: &str) -> Option<String> {
    let pod = format!("{ns}/{CLIENT_NAME}");
    if v.clients_deleted.contains(CLIENT_NAME) {
        return Some(format!("client pod {pod} left the API"));
    }
    let p = v.clients.get(CLIENT_NAME)?;
    if let Some((deadline, grace)) = &p.deletion {
        return Some(format!(
            "client pod {pod} was deleted (deletionTimestamp {deadline}{})",
            grace.map(|g| format!(", grace {g}s")).unwrap_or_default()
        ));
    }
    let t = p.container.as_ref()?.terminated.as_ref()?;
    (t.exit_code != 0).then(|| {
        format!(
            "the client container of pod {pod} ended (exit code {}{})",
            t.exit_code,
            t.reason
                .as_deref()
                .map(|r| format!(", {r}"))
                .unwrap_or_default()
        )
    })
}

/// Watches for the client's loss until the trial closes the window (`close`) or tears down:
/// a client pod deleted or ended before that was not ended by the trial. Records
/// `client_lost` once, and says why on the returned channel.
fn watch_loss(
    st: &mut TrialState,
    close: &CancellationToken,
    rec: &Recorder,
) -> watch::Receiver<Option<String>> {
    let (tx, rx) = watch::channel(None);
    let (close, cancel) = (close.clone(), st.cancel.clone());
    let (mut view, ns, rec) = (st.pods.clone(), st.ns.clone(), rec.clone());
    st.tasks.push(tokio::spawn(async move {
        let why = tokio::select! {
            biased;
            () = close.cancelled() => return,
            () = cancel.cancelled() => return,
            v = view.wait_for(|v| loss(v, &ns).is_some()) => match v {
                Ok(v) => loss(&v, &ns),
                Err(_) => return,
            },
        };
        if let Some(why) = why {
            rec.orchestrator(EventName::ClientLost, why.clone());
            tx.send_replace(Some(why));
        }
    }));
    rx
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
        match pods.delete(CLIENT_NAME, &dp).await {
            Ok(_) => {}
            // Gone already (a client lost under the trial): what the close wanted.
            Err(e) if crate::k8s::status_code(&e) == Some(404) => {}
            Err(e) => {
                rec2.orchestrator(
                    EventName::ClientPodDeleteFailed,
                    format!("deleting {ns}/{CLIENT_NAME} to close the window failed: {e}"),
                );
            }
        }
    }));
    close
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::translate::{ContainerFacts, PodFacts, Terminated};

    fn ended(exit_code: i32, reason: &str) -> PodFacts {
        PodFacts {
            container: Some(ContainerFacts {
                terminated: Some(Terminated {
                    exit_code,
                    reason: Some(reason.into()),
                    signal: None,
                    finished_at: None,
                }),
                ..ContainerFacts::default()
            }),
            ..PodFacts::default()
        }
    }

    #[test]
    fn a_deleted_or_failed_client_is_lost_and_one_that_finished_is_not() {
        let mut v = PodsView::default();
        assert_eq!(loss(&v, "ns"), None, "not seen yet: not lost");
        v.clients.insert(CLIENT_NAME.into(), PodFacts::default());
        assert_eq!(loss(&v, "ns"), None, "running");
        v.clients.insert(CLIENT_NAME.into(), ended(0, "Completed"));
        assert_eq!(loss(&v, "ns"), None, "every flow ended, so it stopped");
        v.clients.insert(CLIENT_NAME.into(), ended(137, "Error"));
        let why = loss(&v, "ns").unwrap();
        assert!(why.contains("exit code 137, Error"), "{why}");
        let mut deleted = ended(0, "Completed");
        deleted.deletion = Some(("2026-12-02T07:00:30Z".into(), Some(30)));
        v.clients.insert(CLIENT_NAME.into(), deleted);
        let why = loss(&v, "ns").unwrap();
        assert!(
            why.contains("ns/drainwatch-client was deleted") && why.contains("grace 30s"),
            "{why}"
        );
        v.clients.clear();
        v.clients_deleted.insert(CLIENT_NAME.into());
        assert!(loss(&v, "ns").unwrap().contains("left the API"));
    }
}
