//! Through the user's ingress controller: located by its Service before any trial (preflight
//! `ingress-located`); each trial follows its pods' access log from the trial's start and
//! records every line that carries one of this client's ids as `ingress_access` (a request) or
//! `ingress_attempt` (one upstream attempt, where the log has them: Envoy's upstream log); the trigger
//! waits until one has arrived (preflight `ingress-access-log`), so a log that is not JSON or
//! drops the header stops the run before anything is judged. Each controller pod's request
//! counters are scraped before the trial's first request and after its last
//! (`ingress_metric`), for the retries the controller hid from the clients.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::evidence::ingress::adapter::adapter;
use crate::evidence::ingress::retries::CountedFrom;
use crate::evidence::ingress::{self as evidence_ingress, retries, traefik_metrics};
use crate::evidence::plan::attach::ingress::{IngressController, IngressTarget};
use crate::evidence::request_id::Spelling;
use crate::k8s::client::ClusterAccess;
use crate::k8s::ingress::{self, Located};
use crate::k8s::logs::{self, Follower};
use crate::k8s::watch::PodsView;
use crate::platform::PlatformError;
use crate::platform::kubernetes::{chain, fail, ok};
use crate::preflight;
use crate::recorder::Recorder;
use crate::{console, host};

/// How long the trigger waits for the first access line of this trial's requests.
pub(in crate::platform::kubernetes) const ACCESS_LOG_WITHIN: Duration = Duration::from_secs(20);

/// Finds the controller, its Service (in namespace `ns`) and running pods.
pub(super) async fn locate(
    access: &ClusterAccess,
    limit: Duration,
    it: &IngressTarget,
    ns: &str,
) -> Result<Located, PlatformError> {
    let t = Instant::now();
    let found = tokio::time::timeout(limit, ingress::locate(&access.client, it, ns))
        .await
        .map_err(|_| {
            fail(
                preflight::INGRESS_LOCATED,
                t,
                format!(
                    "no answer from {} within {}s",
                    access.server,
                    limit.as_secs()
                ),
            )
        })?
        .map_err(|e| fail(preflight::INGRESS_LOCATED, t, chain(&e)))?
        .map_err(|why| fail(preflight::INGRESS_LOCATED, t, why))?;
    ok(&preflight::INGRESS_LOCATED, t);
    Ok(found)
}

/// Follows each controller pod's log from now on; the receiver counts the lines recorded.
pub(super) fn follow(
    client: &kube::Client,
    located: &Located,
    ids: Spelling,
    rec: &Recorder,
    cancel: &CancellationToken,
) -> (Vec<Follower>, watch::Receiver<u64>) {
    let (seen_tx, seen) = watch::channel(0u64);
    // The controller's pods are not the trial's: no watch says when one ends (a closed channel
    // never does), so a follower stops when the trial is cancelled, or gives up reopening a
    // log that is gone.
    let (_, never) = watch::channel(PodsView::default());
    let it = &located.target;
    let followers = located
        .pods
        .iter()
        .map(|pod| {
            let (rec_line, seen_tx, controller) = (rec.clone(), seen_tx.clone(), it.controller);
            let ids = ids.clone();
            let replica = pod.clone();
            logs::follow(
                Api::<Pod>::namespaced(client.clone(), &located.namespace),
                (pod.clone(), logs::From::Now),
                adapter(controller).log_container,
                rec.clone(),
                move |text, at| {
                    let Some(access) = evidence_ingress::access(controller, text) else {
                        return;
                    };
                    if let Some(mut l) = access.line(at, &ids) {
                        l.replica = Some(replica.clone());
                        rec_line.send(l);
                        seen_tx.send_modify(|n| *n += 1);
                    }
                },
                never.clone(),
                |_| false,
                cancel.clone(),
            )
        })
        .collect();
    (followers, seen)
}

/// Waits until the first access line of this trial's requests was recorded.
pub(in crate::platform::kubernetes) async fn access_log_delivering(
    seen: &mut watch::Receiver<u64>,
    within: Duration,
) -> Result<(), PlatformError> {
    let t = Instant::now();
    match tokio::time::timeout(within, seen.wait_for(|n| *n > 0)).await {
        Ok(Ok(_)) => {
            ok(&preflight::INGRESS_ACCESS_LOG, t);
            Ok(())
        }
        _ => Err(fail(
            preflight::INGRESS_ACCESS_LOG,
            t,
            format!(
                "no access line with one of this trial's request ids within {}s",
                within.as_secs()
            ),
        )),
    }
}

/// How long one scrape of a controller pod's counters may take.
const SCRAPE_WITHIN: Duration = Duration::from_secs(10);

/// The scrape before the trial's first request, the one after its last, and the one once the
/// access log has gone quiet after that (the counters must not have moved since).
pub(in crate::platform::kubernetes) const BEFORE: u64 = 1;
/// See [`BEFORE`].
pub(in crate::platform::kubernetes) const AFTER: u64 = 2;
/// See [`BEFORE`].
pub(in crate::platform::kubernetes) const SETTLED: u64 = 3;

/// Scrapes each controller pod's request counters through the API server's pod proxy and
/// records them as scrape `seq`. A pod without a `metrics` port, or a scrape refused (pods/proxy
/// get is optional) or unread, is said on stderr and leaves that pod's hidden retries not
/// measured: the trial goes on.
pub(in crate::platform::kubernetes) async fn scrape_counters(
    client: &kube::Client,
    located: &Located,
    rec: &Recorder,
    seq: u64,
) {
    let ns = &located.namespace;
    // A controller whose log counts each request's attempts (Envoy) has its hidden retries
    // read there: no counters to scrape.
    if adapter(located.target.controller).retries != CountedFrom::Counters {
        return;
    }
    for pod in &located.pods {
        let Some(&port) = located.metrics_ports.get(pod) else {
            if seq == BEFORE {
                console::warning!(
                    "drainwatch: ingress pod {ns}/{pod} has no container port named {}: its hidden retries are not measured",
                    ingress::METRICS_PORT_NAME
                );
            }
            continue;
        };
        let path = traefik_metrics::METRICS_PATH;
        let read = tokio::time::timeout(
            SCRAPE_WITHIN,
            ingress::proxy_get(client, ns, pod, port, path),
        )
        .await;
        let text = match read {
            Ok(Ok(text)) => text,
            Ok(Err(e)) => {
                console::warning!(
                    "drainwatch: ingress pod {ns}/{pod}: {}: its hidden retries are not measured",
                    chain(&e)
                );
                continue;
            }
            Err(_) => {
                console::warning!(
                    "drainwatch: ingress pod {ns}/{pod}: no answer from {path} on port {port} within {}s: its hidden retries are not measured",
                    SCRAPE_WITHIN.as_secs()
                );
                continue;
            }
        };
        match traefik_metrics::service_requests(&text) {
            Ok(samples) => {
                for l in retries::scrape_lines(&samples, pod, seq, host::mono_ns()) {
                    rec.send(l);
                }
            }
            Err(e) => console::warning!(
                "drainwatch: ingress pod {ns}/{pod} port {port}{path}: {e}: its hidden retries are not measured"
            ),
        }
    }
}

/// How long `controller`'s access log must stay quiet after the last scrape before the
/// followers stop: longer than the controller may hold written lines back (its adapter's).
fn log_quiet(controller: IngressController) -> Duration {
    Duration::from_millis(adapter(controller).log_quiet_ms)
}

/// The scrape after the trial's last request, then the wait for the access lines of the
/// requests those counters hold (a controller counts a request and logs it as its response
/// ends, and the log reaches drainwatch a moment later): once no line came for
/// [`log_quiet`] (at most that and [`SCRAPE_WITHIN`] more), the counters are scraped again.
/// Counters that moved in between, or a line still missing, leave the hidden retries not
/// measured, never 0.
pub(in crate::platform::kubernetes) async fn after_last_request(
    client: &kube::Client,
    located: &Located,
    rec: &Recorder,
    seen: Option<&watch::Receiver<u64>>,
) {
    scrape_counters(client, located, rec, AFTER).await;
    if let Some(seen) = seen {
        let mut seen = seen.clone();
        let quiet = log_quiet(located.target.controller);
        let until = Instant::now() + quiet + SCRAPE_WITHIN;
        while Instant::now() < until {
            match tokio::time::timeout(quiet, seen.changed()).await {
                Ok(Ok(())) => continue,
                // Quiet that long, or every follower gone.
                Ok(Err(_)) | Err(_) => break,
            }
        }
    }
    scrape_counters(client, located, rec, SETTLED).await;
}
