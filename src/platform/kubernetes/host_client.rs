//! The host placement of the flow client: this process (or, with `--clients N`, N client
//! processes on this machine) dials the Service's NodePorts on the pod under test's node (kind,
//! the local cluster), once kube-proxy has programmed them.

use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;

use super::probe::ProbeTrial;
use super::{TrialMode, TrialState, fail, ok};
use crate::evidence::event::EventName;
use crate::k8s::watch::PodsView;
use crate::net::{self, ClientConfig};
use crate::platform::shard::{self, ShardPlan};
use crate::platform::{Flows, PlatformError};
use crate::preflight::{self, Poll, Stopped};
use crate::recorder::Recorder;

/// Resolves the NodePort target, waits until it accepts, and starts the flows: in-process, or
/// sharded over `--clients` child processes of `exe`.
pub(super) async fn start(
    st: &mut TrialState,
    ccfg: ClientConfig,
    rec: &Recorder,
    exe: Option<&Path>,
    ready: Duration,
) -> Result<Flows, PlatformError> {
    let TrialMode::Probe(probe) = &mut st.mode else {
        return Err(PlatformError::Deploy(
            "the host placement is a probe trial's".into(),
        ));
    };
    let c = node_ports(probe, &st.pods.borrow(), ccfg)?;
    rec.orchestrator(
        EventName::TargetResolved,
        format!(
            "this process dials NodePorts on the pod under test's node: tcp {}:{} udp {}:{}",
            c.host, c.tcp_port, c.host, c.udp_port
        ),
    );
    programmed(&c, rec).await?;
    let (clients, hold) = (st.clients, probe.hold);
    if clients <= 1 {
        let client = net::start(c, rec.sink())
            .await
            .map_err(PlatformError::Flows)?;
        return Ok(Flows::in_process(client));
    }
    let Some(exe) = exe else {
        return Err(PlatformError::Clients(format!(
            "--clients {clients} runs this binary as client processes, but its path could not be found"
        )));
    };
    let plan = ShardPlan {
        exe,
        clients,
        hold,
        ready,
    };
    let (flows, shards) = shard::start(&plan, &c, rec).await?;
    probe.shards = Some(shards);
    Ok(flows)
}

/// `ccfg` aimed at the NodePorts on the pod under test's node.
fn node_ports(
    probe: &ProbeTrial,
    pods: &PodsView,
    ccfg: ClientConfig,
) -> Result<ClientConfig, PlatformError> {
    let mut c = ccfg;
    let host_ip = probe
        .put
        .as_ref()
        .and_then(|put| pods.probes.get(put))
        .and_then(|p| p.host_ip.clone());
    let svc = probe.service.as_ref();
    match (
        host_ip,
        svc.and_then(|s| s.tcp_node_port),
        svc.and_then(|s| s.udp_node_port),
    ) {
        (Some(h), Some(tp), Some(up)) => {
            c.host = h;
            c.tcp_port = tp;
            c.udp_port = up;
        }
        _ => {
            return Err(PlatformError::Deploy(
                "the pod under test's node IP or the NodePorts are unknown".into(),
            ));
        }
    }
    Ok(c)
}

/// How long kube-proxy may take to program the NodePort before the check fails by name.
pub const HOST_RULES_LIMIT: Duration = Duration::from_secs(30);

/// The nodeport-programmed check: the NodePort accepts a TCP connection.
async fn programmed(c: &ClientConfig, rec: &Recorder) -> Result<(), PlatformError> {
    // kube-proxy programs a new NodePort asynchronously, after the endpoint is
    // ready; a UDP flow that pings before that gets ICMP unreachable and ends. TCP and
    // UDP rules arrive in one sync, so one accepted TCP connection means both exist.
    let t = Instant::now();
    let addr = (c.host.clone(), c.tcp_port);
    let accepted = preflight::poll(HOST_RULES_LIMIT, Duration::from_millis(100), || {
        let addr = addr.clone();
        async move {
            match tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(addr))
                .await
            {
                Ok(Ok(_)) => Poll::Ready(()),
                Ok(Err(e)) => Poll::Waiting(e.to_string()),
                Err(_) => Poll::Waiting("connect timed out".into()),
            }
        }
    })
    .await;
    match accepted {
        Ok(()) => {}
        Err(Stopped::Failed(c, why)) => return Err(fail(c, t, why)),
        Err(Stopped::TimedOut(last)) => {
            return Err(fail(
                preflight::NODEPORT_PROGRAMMED,
                t,
                format!(
                    "{}:{} did not accept within {}s; last: {last}",
                    addr.0,
                    addr.1,
                    HOST_RULES_LIMIT.as_secs()
                ),
            ));
        }
    }
    ok(&preflight::NODEPORT_PROGRAMMED, t);
    rec.orchestrator(
            EventName::NodeportReachable,
            format!("{}:{} accepted a connection {} ms after flows were requested (kube-proxy programming lag)", addr.0, addr.1, t.elapsed().as_millis()),
        );
    Ok(())
}
