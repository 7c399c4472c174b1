//! Findings only a trial through an ingress can have, from what the ingress itself made of the
//! requests: `ingress-no-available-server` (it answered 503 itself, every server of the
//! service fenced or gone), `ingress-no-route` (it answered 404 itself, the route dropped with
//! its last endpoint), `ingress-upstream-hang` (clients timed out while it still waited on a pod
//! that had exited), `ingress-error-on-serving-pod` (an upstream error from a pod that was not
//! terminating, its connection closed or reset: context, not the termination's) and
//! `ingress-hidden-retry` (its counters or its log's attempt counts show failed attempts the
//! clients never saw).

use super::{
    Derived, EvidenceRef, Finding, FindingId, Recommendation, Severity, Unit, ceil_secs, field,
    ingress, secs,
};
use std::collections::BTreeSet;

use crate::attach::section::{AttachReport, FailureRecord, Phase};
use crate::ingress::IngressOutcome;
use crate::ingress::retries::CountedFrom;
use crate::report::Report;

/// The margin added to the ingress's span, as `endpoint-lag` adds it.
const MARGIN_S: u64 = 1;

/// The failures the ingress gave `outcome`, with their indices.
fn failed_with(a: &AttachReport, outcome: IngressOutcome) -> Vec<(usize, &FailureRecord)> {
    failed_as(a, |o| o == outcome)
}

/// The failures whose ingress outcome `is`, with their indices.
fn failed_as(
    a: &AttachReport,
    is: impl Fn(IngressOutcome) -> bool,
) -> Vec<(usize, &FailureRecord)> {
    a.failures
        .iter()
        .enumerate()
        .filter(|(_, f)| f.ingress.is_some_and(&is))
        .collect()
}

/// Failures with their indices into `trial.attach.failures`.
type Indexed<'a> = Vec<(usize, &'a FailureRecord)>;

/// The failures whose ingress outcome `is` that are attributed to a pod in `phase`, with their
/// indices, and those pods' names, sorted; None when there are none.
fn on_pods_in(
    a: &AttachReport,
    is: impl Fn(IngressOutcome) -> bool,
    phase: Phase,
) -> Option<(Indexed<'_>, Vec<&str>)> {
    let failed: Indexed<'_> = failed_as(a, is)
        .into_iter()
        .filter(|(_, f)| f.phase == phase && f.pod.is_some())
        .collect();
    if failed.is_empty() {
        return None;
    }
    let pods: BTreeSet<&str> = failed
        .iter()
        .filter_map(|(_, f)| f.pod.as_deref())
        .collect();
    Some((failed, pods.into_iter().collect()))
}

/// "between 1.20 s and 3.40 s after the trigger" of `failed` (not empty), "at 1.20 s after the
/// trigger" when they came at one time.
fn between(failed: &[(usize, &FailureRecord)]) -> String {
    let first = failed.iter().map(|(_, f)| f.t_ms).min().unwrap_or(0);
    let last = failed.iter().map(|(_, f)| f.t_ms).max().unwrap_or(0);
    if first == last {
        return format!("at {} after the trigger", secs(first));
    }
    format!(
        "between {} and {} after the trigger",
        secs(first),
        secs(last)
    )
}

/// "a pod that had exited (p)", "pods that had exited (p, q)": `pods` (not empty) and what was
/// true of them.
fn pods_that(pods: &[&str], what: &str) -> String {
    let noun = if pods.len() == 1 { "a pod" } else { "pods" };
    format!("{noun} {what} ({})", pods.join(", "))
}

/// "1 request", "2 requests".
fn requests(n: usize) -> String {
    if n == 1 {
        "1 request".into()
    } else {
        format!("{n} requests")
    }
}

fn cite(failed: &[(usize, &FailureRecord)]) -> Vec<EvidenceRef> {
    failed
        .iter()
        .map(|&(index, _)| EvidenceRef::AttachFailure { index })
        .collect()
}

/// `ingress-no-available-server`: the ingress answered requests 503 itself because the service
/// had no server it would choose: Traefik fences a terminating endpoint (no new request) and,
/// unlike kube-proxy, never falls back to one, so with every endpoint terminating the service
/// is empty to it although a pod still serves.
pub(super) fn no_available_server(report: &Report) -> Option<Finding> {
    let a = report.trial.attach.as_ref()?;
    let failed = failed_with(a, IngressOutcome::NoAvailableServer);
    if failed.is_empty() {
        return None;
    }
    let replicas = report
        .trial
        .termination_settings
        .as_ref()
        .and_then(|s| s.rollout.as_ref())
        .and_then(|r| r.replicas);
    let mut evidence = cite(&failed);
    if replicas.is_some() {
        evidence.push(field("trial.termination_settings.rollout"));
    }
    let recorded = replicas.map_or_else(String::new, |r| {
        format!(" (recorded: {r} replica{})", if r == 1 { "" } else { "s" })
    });
    // With 2 or more replicas recorded the number is not the fix: the ingress was slow to add
    // the new pods, or the rollout took the old ones down first.
    let derived = replicas.filter(|r| *r < 2).map(|r| Derived {
        value: 2,
        unit: Unit::Pods,
        rule: format!("the fewest replicas with which one stays ready, and so choosable by the ingress, while another terminates; the workload had {r}"),
    });
    Some(Finding {
        id: FindingId::IngressNoAvailableServer,
        severity: Severity::Failure,
        title: format!(
            "{} got 503 from the ingress itself, with no server to send them to, {}.",
            requests(failed.len()),
            between(&failed)
        ),
        why: "Every endpoint of the service was terminating or gone: the ingress sends no new request to a terminating endpoint and does not fall back to one while it still serves, as kube-proxy does, so the service was empty to it.".into(),
        recommendation: Some(Recommendation {
            text: format!(
                "Keep a ready pod through every termination{recorded}: at least 2 replicas, a rollout with maxUnavailable 0, and a PodDisruptionBudget with minAvailable 1 for evictions and drains."
            ),
            derived,
        }),
        evidence,
    })
}

/// `ingress-no-route`: the ingress answered 404 itself: no route matched, the controller
/// having dropped the route of a service left without endpoints (Traefik's Kubernetes
/// providers do so unless `allowEmptyServices` is set).
pub(super) fn no_route(report: &Report) -> Option<Finding> {
    let a = report.trial.attach.as_ref()?;
    let failed = failed_with(a, IngressOutcome::NoRoute);
    if failed.is_empty() {
        return None;
    }
    Some(Finding {
        id: FindingId::IngressNoRoute,
        severity: Severity::Failure,
        title: format!(
            "{} got 404 from the ingress itself, no route matching, {}.",
            requests(failed.len()),
            between(&failed)
        ),
        why: "The route to the service was gone while the trial ran: an ingress controller that drops the route of a service without endpoints answers 404 until a pod is ready again, which clients read as the resource not existing.".into(),
        recommendation: Some(Recommendation {
            text: "Keep a ready pod through every termination (at least 2 replicas, maxUnavailable 0, a PodDisruptionBudget), and keep the route of an empty service so clients get a retryable 503 rather than 404 (Traefik: `--providers.kubernetesingress.allowEmptyServices=true`).".into(),
            derived: None,
        }),
        evidence: cite(&failed),
    })
}

/// `ingress-upstream-hang`: requests the clients gave up on while the ingress still waited on a
/// pod that had exited (it logged them closed by the client, the exited pod its upstream). A
/// process that exits closes its sockets, so the ingress sees a reset or EOF at once; what hangs
/// is a connection to the address of a pod already gone, which nothing may answer or refuse for
/// seconds, and the ingress's connect timeout (Traefik 30 s, its ingress-nginx provider 60 s)
/// outlasts any client's.
pub(super) fn upstream_hang(report: &Report) -> Option<Finding> {
    let a = report.trial.attach.as_ref()?;
    let (hung, pods) = on_pods_in(a, |o| o == IngressOutcome::ClientClosed, Phase::AfterExit)?;
    let timeout_ms = report
        .trial
        .config
        .attach
        .as_ref()
        .map(|c| c.request_timeout_ms);
    let mut evidence = cite(&hung);
    let theirs = match timeout_ms {
        Some(ms) => {
            evidence.push(field("trial.config.attach.request_timeout_ms"));
            format!(
                "the clients' {}",
                secs(i64::try_from(ms).unwrap_or(i64::MAX))
            )
        }
        None => "the clients'".into(),
    };
    Some(Finding {
        id: FindingId::IngressUpstreamHang,
        severity: Severity::Failure,
        title: format!(
            "{} timed out at the client while the ingress still waited on {}, {}.",
            requests(hung.len()),
            pods_that(&pods, "that had exited"),
            between(&hung)
        ),
        why: format!(
            "The ingress chose the pod's address after its container had exited. An exiting process resets or closes its connections, which the ingress sees at once; the address of a pod already gone answers nothing, so each try waited on the ingress's connect timeout (Traefik: 30 s, its ingress-nginx provider: 60 s) past {theirs} timeout, and the ingress logged the request as closed by the client (499)."
        ),
        recommendation: Some(Recommendation {
            // No number: a connect timeout helps only when every try the ingress makes at a
            // gone pod fits in the client's timeout (the ingress-nginx provider makes 3), which
            // whole seconds cannot express under a few seconds; measured here, a 1 s one still
            // left clients of a 2 s timeout waiting out two tries at gone pods.
            text: "Keep the ingress from choosing a pod after it exits: a preStop sleep that covers the ingress's lag (endpoint-lag derives it). A shorter connect timeout at the ingress (ingress-nginx's annotation `nginx.ingress.kubernetes.io/proxy-connect-timeout`, which Traefik's ingress-nginx provider reads; Traefik's own provider: a ServersTransport's `forwardingTimeouts.dialTimeout` with a Retry middleware) only shortens the wait: each try at a gone pod costs the whole timeout, so the tries times the timeout must fit in the clients' timeout for a retry to reach a live pod in time.".into(),
            derived: None,
        }),
        evidence,
    })
}

/// `ingress-error-on-serving-pod`: the ingress answered an upstream error (Traefik's 502,
/// Envoy's 503) for requests it had sent to a pod that was not terminating, the connection
/// closed or reset (or, Traefik's, failed in a way its log does not say). Not the
/// termination's failure: context beside it, whose usual cause through an ingress is the
/// upstream keep-alive race (the pod closes an idle connection as the ingress sends on it), or
/// the pod's own errors. A connection a serving pod refused or never answered is not that race
/// (the pod did not listen, or its address was not there), and is left to the thresholds.
pub(super) fn error_on_serving_pod(report: &Report) -> Option<Finding> {
    let a = report.trial.attach.as_ref()?;
    let keep_alive_race = |o| {
        matches!(
            o,
            IngressOutcome::UpstreamError
                | IngressOutcome::UpstreamClosed
                | IngressOutcome::UpstreamReset
        )
    };
    let (failed, pods) = on_pods_in(a, keep_alive_race, Phase::BeforeTermination)?;
    let statuses: BTreeSet<String> = failed
        .iter()
        .map(|(_, f)| {
            f.status
                .map_or_else(|| "an error".into(), |s| s.to_string())
        })
        .collect();
    Some(Finding {
        id: FindingId::IngressErrorOnServingPod,
        severity: Severity::Warning,
        title: format!(
            "{} got {} from the ingress on {}, {}.",
            requests(failed.len()),
            statuses.into_iter().collect::<Vec<_>>().join(" or "),
            pods_that(&pods, "not terminating"),
            between(&failed)
        ),
        why: "The ingress chose a pod that was serving, and its connection to the pod failed before the pod answered: not a failure of the termination, which had not reached that pod. Through an ingress the usual cause is the upstream keep-alive race: the pod's server closes a connection idle longer than its keep-alive timeout just as the ingress sends a request on it; the pod's own errors are the other.".into(),
        recommendation: Some(Recommendation {
            text: "Give the service a keep-alive idle timeout longer than the ingress's for upstream connections (Traefik: the ServersTransport's idleConnTimeout, 90 s by default; ingress-nginx: upstream-keepalive-timeout, 60 s), and look in the pod's log at those times for its own errors.".into(),
            derived: None,
        }),
        evidence: cite(&failed),
    })
}

/// Where the `hidden` failed attempts were counted, and why no pod is named for them.
fn counted_how(from: Option<CountedFrom>, hidden: u64) -> (String, &'static str) {
    match from {
        Some(CountedFrom::AttemptCounts) => (
            format!(
                "Its access log gives the trial's requests {hidden} more attempts upstream than one each:"
            ),
            "the log names only each request's last upstream",
        ),
        Some(CountedFrom::Counters) => (
            format!(
                "Its request counters grew by {hidden} more 5xx over the trial's services than its access log sent the clients:"
            ),
            "the counters name no pod",
        ),
        // A report from before it was recorded what they were counted from: said as neither.
        None => (
            format!("It counted {hidden} failed attempts beyond what its clients were sent:"),
            "what counted them names no pod",
        ),
    }
}

/// `ingress-hidden-retry`: the ingress's counters show attempts that failed on an upstream and
/// were sent again, which its clients never saw: the pods failed requests while terminating,
/// and a request the ingress does not retry (a POST) would have failed at the client.
pub(super) fn hidden_retry(report: &Report) -> Option<Finding> {
    let a = report.trial.attach.as_ref()?;
    let h = a.ingress.as_ref()?.hidden_retries.as_ref()?;
    let hidden = h.hidden.filter(|n| *n > 0)?;
    let (counted, unnamed) = counted_how(h.counted_from, hidden);
    // The log's attempt lines name the pod each retried attempt failed on.
    let went = match h.upstreams.as_deref() {
        Some(u) if !u.is_empty() => crate::ingress::render::retried_where(u),
        _ => unnamed.to_string(),
    };
    let through = ingress::span(a);
    let mut evidence = vec![field("trial.attach.ingress.hidden_retries")];
    if through.is_some() {
        evidence.push(field("trial.attach.ingress.routing"));
    }
    Some(Finding {
        id: FindingId::IngressHiddenRetry,
        severity: Severity::Warning,
        title: format!(
            "The ingress retried {hidden} failed attempt{} its clients never saw.",
            if hidden == 1 { "" } else { "s" }
        ),
        why: format!(
            "{counted} attempts that failed on an upstream while the trial's pods terminated and were sent again to another ({went}). The clients were spared only because the ingress retries these requests; a request it does not retry (a POST, a request with a body) would have failed."
        ),
        recommendation: Some(Recommendation {
            text: "Make the termination clean rather than rely on the retry: a preStop sleep that keeps the pod serving until the ingress stops choosing it, then a graceful drain.".into(),
            derived: through.map(|span| Derived {
                value: ceil_secs(span.ms()) + MARGIN_S,
                unit: Unit::Seconds,
                rule: ingress::rule(&span, None, MARGIN_S),
            }),
        }),
        evidence,
    })
}
