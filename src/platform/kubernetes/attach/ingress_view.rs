//! The controller's own endpoint view, polled through its API while the trial runs: every
//! [`POLL_EVERY`], each controller pod's `GET /api/http/services` through the API server's pod
//! proxy, and what changed recorded on the orchestrator's clock (the one the EndpointSlice edges
//! are on) as `ingress_view` lines after an `ingress_view_polled` mark. A pod without the API
//! port, or a poll refused or unread, is said once on stderr and leaves that pod's view not
//! measured: the trial goes on.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::evidence::ingress::traefik_api::{self, Server};
use crate::evidence::ingress::view::poll_lines;
use crate::k8s::ingress::{self, Located};
use crate::platform::kubernetes::chain;
use crate::recorder::Recorder;
use crate::{console, host};

/// The time between two polls of one pod: the resolution of the view's lag.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// How long one poll may take before it is given up (the next one follows).
const POLL_WITHIN: Duration = Duration::from_secs(2);

/// Starts polling every controller pod with an API port until `cancel`.
pub(in crate::platform::kubernetes) fn poll(
    client: &kube::Client,
    located: &Located,
    rec: &Recorder,
    cancel: &CancellationToken,
) -> JoinHandle<()> {
    let (client, located, rec, cancel) =
        (client.clone(), located.clone(), rec.clone(), cancel.clone());
    tokio::spawn(async move {
        let ns = located.target.namespace.clone();
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
        let polled: Vec<(&String, u16)> = located.api_ports.iter().map(|(p, &n)| (p, n)).collect();
        let mut before: Vec<Vec<Server>> = vec![Vec::new(); polled.len()];
        let mut said: BTreeSet<&String> = BTreeSet::new();
        let mut tick = tokio::time::interval(POLL_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                _ = tick.tick() => {}
            }
            for (i, &(pod, port)) in polled.iter().enumerate() {
                let read = tokio::time::timeout(
                    POLL_WITHIN,
                    ingress::proxy_get(&client, &ns, pod, port, traefik_api::SERVICES_PATH),
                )
                .await;
                let now = match read {
                    Ok(Ok(text)) => traefik_api::servers(&text).map_err(|e| e.to_string()),
                    Ok(Err(e)) => Err(chain(&e)),
                    Err(_) => Err(format!("no answer within {}s", POLL_WITHIN.as_secs())),
                };
                match now {
                    Ok(now) => {
                        for l in poll_lines(&before[i], &now, pod, host::mono_ns()) {
                            rec.send(l);
                        }
                        before[i] = now;
                    }
                    // Said once: a poll missed widens the bound the next one gives.
                    Err(why) => {
                        if said.insert(pod) {
                            console::warning!(
                                "drainwatch: ingress pod {ns}/{pod} port {port}{}: {why}: its endpoint view misses this poll",
                                traefik_api::SERVICES_PATH
                            );
                        }
                    }
                }
            }
        }
    })
}
