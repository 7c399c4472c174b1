//! The controller's own endpoint view, polled while the trial runs: every [`POLL_EVERY`], each
//! controller pod's list of servers, one task per pod so a slow one delays no other. Traefik's
//! services list (narrowed to the target's namespace) is read through the API server's pod
//! proxy on its API port; Envoy's admin clusters (the routes of the target's namespace) over a
//! port-forward to its loopback-only admin port, one keep-alive connection held per pod. What
//! changed is recorded on the orchestrator's clock (the one the EndpointSlice edges are on) as
//! `ingress_view` lines after an `ingress_view_polled` mark carrying when the poll was sent and
//! answered. A pod whose view cannot be reached, or a poll refused or unread, is said once on
//! stderr and leaves that pod's view not measured: the trial goes on.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::evidence::ingress::adapter::{ViewSource, adapter};
use crate::evidence::ingress::view::{Server, poll_lines};
use crate::evidence::ingress::{envoy_admin, traefik_api};
use crate::k8s::ingress::{self, Located};
use crate::k8s::port_forward::PodHttp;
use crate::platform::kubernetes::chain;
use crate::recorder::Recorder;
use crate::{console, host};

/// The time between two polls of one pod: the resolution of the view's lag.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// How long one poll may take before it is given up (the next one follows).
const POLL_WITHIN: Duration = Duration::from_secs(2);

/// How one controller pod's view is read, with what the reading keeps between polls.
enum ViewReader {
    /// Traefik's API on `port`, through the API server's pod proxy.
    TraefikApi { port: u16, path: String },
    /// Envoy's admin interface through a port-forward: the connection is opened by the first
    /// poll and again after one failed, the clusters of the routes in `ns` kept.
    EnvoyAdmin { conn: Option<PodHttp>, ns: String },
}

/// Why a poll was not read, and whether polling that pod can still succeed.
struct Missed {
    why: String,
    /// The API server refuses the means itself (a right not granted): polling again would
    /// only ask again, ten times a second.
    for_good: bool,
}

impl From<String> for Missed {
    fn from(why: String) -> Self {
        Self {
            why,
            for_good: false,
        }
    }
}

impl ViewReader {
    /// What the pod listed, or why it was not read.
    async fn read(
        &mut self,
        client: &kube::Client,
        ns: &str,
        pod: &str,
    ) -> Result<Vec<Server>, Missed> {
        match self {
            Self::TraefikApi { port, path } => {
                let text = ingress::proxy_get(client, ns, pod, *port, path)
                    .await
                    .map_err(|e| chain(&e))?;
                Ok(traefik_api::servers(&text).map_err(|e| e.to_string())?)
            }
            Self::EnvoyAdmin { conn, ns: routes } => {
                let http = match conn {
                    Some(c) => c,
                    None => {
                        let opened = PodHttp::open(client, ns, pod, envoy_admin::ADMIN_PORT)
                            .await
                            .map_err(|e| Missed {
                                why: chain(&e),
                                for_good: e.is_forbidden(),
                            })?;
                        conn.insert(opened)
                    }
                };
                match http.get(envoy_admin::CLUSTERS_PATH).await {
                    Ok(text) => Ok(envoy_admin::servers(&text, routes).map_err(|e| e.to_string())?),
                    Err(e) => {
                        *conn = None;
                        Err(chain(&e).into())
                    }
                }
            }
        }
    }

    /// Forgets a connection a poll gave up on mid-request: the next poll opens a new one.
    fn reset(&mut self) {
        if let Self::EnvoyAdmin { conn, .. } = self {
            *conn = None;
        }
    }
}

/// Starts polling every controller pod whose view can be read until `cancel`, the services of
/// the target's namespace `search`.
pub(in crate::platform::kubernetes) fn poll(
    client: &kube::Client,
    located: &Located,
    search: &str,
    rec: &Recorder,
    cancel: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let ns = &located.namespace;
    let readers: Vec<(String, ViewReader)> = match adapter(located.target.controller).view {
        ViewSource::TraefikApi => {
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
                    let path = path.clone();
                    (pod.clone(), ViewReader::TraefikApi { port, path })
                })
                .collect()
        }
        // Envoy Gateway gives every proxy the same admin port: no port to find by name.
        ViewSource::EnvoyAdmin => located
            .pods
            .iter()
            .map(|pod| {
                let ns = search.to_string();
                (pod.clone(), ViewReader::EnvoyAdmin { conn: None, ns })
            })
            .collect(),
    };
    readers
        .into_iter()
        .map(|(pod, reader)| {
            let (client, rec, cancel, ns) =
                (client.clone(), rec.clone(), cancel.clone(), ns.clone());
            tokio::spawn(async move { poll_one(&client, (&ns, &pod), reader, &rec, &cancel).await })
        })
        .collect()
}

/// Polls one controller pod until `cancel`.
async fn poll_one(
    client: &kube::Client,
    (ns, pod): (&str, &str),
    mut reader: ViewReader,
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
        let read = tokio::time::timeout(POLL_WITHIN, reader.read(client, ns, pod)).await;
        let answered = host::mono_ns();
        let now = read.unwrap_or_else(|_| {
            reader.reset();
            Err(format!("no answer within {}s", POLL_WITHIN.as_secs()).into())
        });
        match now {
            Ok(now) => {
                for l in poll_lines(&before, &now, pod, (sent, answered)) {
                    rec.send(l);
                }
                before = now;
            }
            Err(Missed {
                why,
                for_good: true,
            }) => {
                console::warning!(
                    "drainwatch: ingress pod {ns}/{pod}: {why}: its endpoint view is not measured"
                );
                return;
            }
            // Said once: a poll missed only widens the bound the next one gives.
            Err(Missed { why, .. }) => {
                if !said {
                    said = true;
                    console::warning!(
                        "drainwatch: ingress pod {ns}/{pod}: {why}: its endpoint view misses this poll"
                    );
                }
            }
        }
    }
}
