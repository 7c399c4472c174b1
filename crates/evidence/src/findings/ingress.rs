//! What `endpoint-lag` says about a trial that went through an ingress: the controller balances
//! from its own view of the EndpointSlices, so the pod must keep serving until that view let
//! go of it, and the ingress's access log shows when it did (`trial.attach.ingress.routing`).

use super::{EvidenceRef, field, secs};
use crate::attach::section::AttachReport;

/// The longest span the ingress needed, over the pods the trial terminated: from a pod's
/// deletion request until the ingress had, at the latest, stopped sending it requests.
pub(super) struct IngressSpan<'a> {
    /// The pod with the longest span (the first by name on a tie).
    pub pod: &'a str,
    /// The replica whose bound was the latest for that pod (null: not recorded).
    pub replica: Option<&'a str>,
    /// Its endpoint turned not ready this long after its deletion request, in ms.
    pub not_ready_after_deletion_ms: i64,
    /// The replica's routing lag after that edge was at most this, in ms.
    pub lag_at_most_ms: i64,
}

impl IngressSpan<'_> {
    /// From the deletion request until the ingress had stopped routing to the pod, in ms.
    pub fn ms(&self) -> i64 {
        self.not_ready_after_deletion_ms + self.lag_at_most_ms
    }
}

/// The ingress's span, when its log bounds the lag of every replica for every pod the trial
/// terminated; `None` otherwise (a pod's deletion or not-ready edge not seen, a replica with no
/// later run of requests other pods answered): a preStop sleep derived from some pods, or some
/// replicas, would not cover the others.
pub(super) fn span(a: &AttachReport) -> Option<IngressSpan<'_>> {
    let i = a.ingress.as_ref()?;
    let routing = i.routing.as_ref()?;
    if routing.replicas.is_empty() || a.pods.is_empty() {
        return None;
    }
    // A replica the report knows of (its API polled, its counters scraped) that routed none of
    // the trial's requests has a lag nothing here bounds: a sleep from the others may not cover
    // it.
    let routed = |name: Option<&str>| {
        routing
            .replicas
            .iter()
            .any(|r| r.replica.as_deref() == name)
    };
    let known = i.view.iter().flatten().map(|v| v.replica.as_deref()).chain(
        i.hidden_retries
            .iter()
            .flat_map(|h| h.replicas.iter().map(|r| r.replica.as_deref())),
    );
    if known.into_iter().any(|name| !routed(name)) {
        return None;
    }
    let mut worst: Option<IngressSpan<'_>> = None;
    for lane in &a.pods {
        let not_ready = lane.endpoint_not_ready_t_ms? - lane.deletion_requested_t_ms?;
        let mut latest: Option<(Option<&str>, i64)> = None;
        for r in &routing.replicas {
            let lag = r.pods.iter().find(|p| p.pod == lane.pod)?.lag_at_most_ms?;
            if latest.is_none_or(|(_, l)| lag > l) {
                latest = Some((r.replica.as_deref(), lag));
            }
        }
        let (replica, lag_at_most_ms) = latest?;
        let this = IngressSpan {
            pod: &lane.pod,
            replica,
            not_ready_after_deletion_ms: not_ready,
            lag_at_most_ms,
        };
        if worst.as_ref().is_none_or(|w| this.ms() > w.ms()) {
            worst = Some(this);
        }
    }
    worst
}

/// " Through the ingress, traefik-0 sent this pod requests until …" when the trial went
/// through an ingress whose log shows it routing to `pod` after its endpoint turned not ready
/// (`trial.attach.ingress.routing`): the controller balances from its own view of the
/// EndpointSlices, and the preStop sleep must cover that view too. Empty otherwise.
pub(super) fn clause(a: &AttachReport, pod: &str, evidence: &mut Vec<EvidenceRef>) -> String {
    let Some(routing) = a.ingress.as_ref().and_then(|i| i.routing.as_ref()) else {
        return String::new();
    };
    let Some((replica, last, lag)) = routing
        .replicas
        .iter()
        .filter_map(|r| {
            let p = r.pods.iter().find(|p| p.pod == pod)?;
            let lag = p.lag_at_least_ms.filter(|l| *l > 0)?;
            Some((r.replica.as_deref(), p.last_routed_t_ms?, lag))
        })
        .max_by_key(|&(_, _, lag)| lag)
    else {
        return String::new();
    };
    evidence.push(field("trial.attach.ingress.routing"));
    let kube_proxy = a
        .ingress
        .as_ref()
        .and_then(|i| crate::ingress::render::beside_kube_proxy(i, a.kube_proxy_views()))
        .map_or_else(String::new, |s| {
            evidence.push(field("trial.attach.data_plane"));
            format!(" In the same trial, {s}.")
        });
    format!(
        " Through the ingress, {} sent this pod a request at {}, {} after its endpoint turned not ready: the controller balances from its own view of the EndpointSlices, and a preStop sleep must cover that view too.{kube_proxy}",
        replica.unwrap_or("a controller replica not recorded"),
        secs(last),
        secs(lag)
    )
}

/// The rule of a preStop sleep derived from the ingress's `span`, with the span the failures
/// alone give (`failures_ms`, when one was measured) beside it.
pub(super) fn rule(span: &IngressSpan<'_>, failures_ms: Option<i64>, margin_s: u64) -> String {
    let beside = failures_ms.map_or_else(String::new, |f| {
        format!(
            "; the failures' span (the later of an endpoint's removal and a pod's last failure, a timed-out attempt placed when the client gave up) is {f} ms, while the ingress's log shows when it stopped choosing the pod, which is what the sleep must outlast"
        )
    });
    format!(
        "the longest span in this trial from a pod's deletion request until the ingress had stopped sending it requests: pod {}'s endpoint turned not ready {} ms after its deletion, and {} sent it requests for at most {} ms after that (the first of a run of later requests other pods answered, from its access log): {} ms, rounded up to the whole second, plus a {margin_s} s margin{beside}",
        span.pod,
        span.not_ready_after_deletion_ms,
        span.replica.unwrap_or("a controller replica not recorded"),
        span.lag_at_most_ms,
        span.ms(),
    )
}
