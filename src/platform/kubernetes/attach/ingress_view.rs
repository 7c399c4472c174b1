//! The controller's own endpoint view, polled through its API while the trial runs: every
//! [`POLL_EVERY`], each controller pod's services list (narrowed to the target's namespace)
//! through the API server's pod proxy, one task per pod so a slow one delays no other; what
//! changed is recorded on the orchestrator's clock (the one the EndpointSlice edges are on) as
//! `ingress_view` lines after an `ingress_view_polled` mark carrying when the poll was sent and
//! answered. A pod without the API port, or a poll refused or unread, is said once on stderr
//! and leaves that pod's view not measured: the trial goes on.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::evidence::ingress::traefik_api::{self, Server};
use crate::evidence::ingress::view::poll_lines;
use crate::evidence::plan::attach::ingress::IngressController;
use crate::k8s::ingress::{self, Located};
use crate::platform::kubernetes::chain;
use crate::recorder::Recorder;
use crate::{console, host};

/// The time between two polls of one pod: the resolution of the view's lag.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// How long one poll may take before it is given up (the next one follows).
const POLL_WITHIN: Duration = Duration::from_secs(2);

/// Starts polling every controller pod with an API port until `cancel`, the services named
/// with `search` (the target's namespace).
pub(in crate::platform::kubernetes) fn poll(
    client: &kube::Client,
    located: &Located,
    search: &str,
    rec: &Recorder,
    cancel: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let ns = &located.namespace;
    if located.target.controller != IngressController::Traefik {
        console::warning!(
            "drainwatch: {}'s endpoint view is not measured (drainwatch reads Traefik's API only)",
            located.target.controller
        );
        return Vec::new();
    }
    for pod in located
        .pods
        .iter()
        .filter(|p| !located.api_ports.contains_key(*p))
    {
        console::warning!(
            "drainwatch: ingress pod {ns}/{pod} has no container port named {}: its endpoint view is not measured",
            traefik_api::API_PORT_NAME
        );
    }
    let path = traefik_api::services_path(search);
    located
        .api_ports
        .iter()
        .map(|(pod, &port)| {
            let (client, rec, cancel) = (client.clone(), rec.clone(), cancel.clone());
            let (ns, pod, path) = (ns.clone(), pod.clone(), path.clone());
            tokio::spawn(
                async move { poll_one(&client, (&ns, &pod, port), &path, &rec, &cancel).await },
            )
        })
        .collect()
}

/// Polls one controller pod until `cancel`.
async fn poll_one(
    client: &kube::Client,
    (ns, pod, port): (&str, &str, u16),
    path: &str,
    rec: &Recorder,
    cancel: &CancellationToken,
) {
    let mut before: Vec<Server> = Vec::new();
    let mut said = false;
    let mut tick = tokio::time::interval(POLL_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = tick.tick() => {}
        }
        let sent = host::mono_ns();
        let read =
            tokio::time::timeout(POLL_WITHIN, ingress::proxy_get(client, ns, pod, port, path))
                .await;
        let answered = host::mono_ns();
        let now = match read {
            Ok(Ok(text)) => traefik_api::servers(&text).map_err(|e| e.to_string()),
            Ok(Err(e)) => Err(chain(&e)),
            Err(_) => Err(format!("no answer within {}s", POLL_WITHIN.as_secs())),
        };
        match now {
            Ok(now) => {
                for l in poll_lines(&before, &now, pod, (sent, answered)) {
                    rec.send(l);
                }
                before = now;
            }
            // Said once: a poll missed only widens the bound the next one gives.
            Err(why) => {
                if !said {
                    said = true;
                    console::warning!(
                        "drainwatch: ingress pod {ns}/{pod} port {port}{path}: {why}: its endpoint view misses this poll"
                    );
                }
            }
        }
    }
}
