//! `no-ingress-hidden-retry`: the ingress retried no failed attempt behind the clients' backs
//! (`trial.attach.ingress.hidden_retries`). A retry that succeeds leaves the client an answer
//! and the access log one line; only the controller's counters show the attempts that failed,
//! and a POST the ingress could not have retried would have failed for the user.

use crate::ingress::retries::ReplicaRetries;
use crate::report::Report;

use super::check::{Check, decide, not_measured};

/// `no-ingress-hidden-retry` against one trial.
pub(super) fn no_hidden_retry(trial_id: &str, r: &Report) -> Check {
    let Some(ingress) = r.trial.attach.as_ref().and_then(|a| a.ingress.as_ref()) else {
        return not_measured(
            trial_id,
            "the trial's flows did not go through an ingress, or its access log recorded none of them".into(),
        );
    };
    if ingress.not_logged > 0 {
        return not_measured(
            trial_id,
            format!(
                "{} of the trial's requests and dials are not in the ingress's access log: they may have gone through a replica whose counters were not read",
                ingress.not_logged
            ),
        );
    }
    let Some(h) = &ingress.hidden_retries else {
        return not_measured(
            trial_id,
            "the ingress's request counters were not scraped (Traefik's: --metrics.prometheus=true, on a container port named metrics) and its access log counts no attempts (Envoy's: upstream_request_attempt_count), so its retries were not seen".into(),
        );
    };
    if let Some(why) = h.replicas.iter().find_map(unmeasured) {
        return not_measured(trial_id, why);
    }
    let Some(hidden) = h.hidden else {
        return not_measured(trial_id, "no replica's retries were measured".into());
    };
    let logged: u64 = h.replicas.iter().map(|r| r.requests_logged).sum();
    let per_replica: Vec<String> = h
        .replicas
        .iter()
        .filter(|r| r.hidden.is_some_and(|n| n > 0))
        .map(|r| {
            format!(
                "{} {}",
                r.replica.as_deref().unwrap_or("a replica not recorded"),
                r.hidden.unwrap_or(0)
            )
        })
        .collect();
    let by = if per_replica.is_empty() {
        String::new()
    } else {
        format!(" ({})", per_replica.join(", "))
    };
    decide(
        trial_id,
        hidden == 0,
        format!(
            "{hidden} failed attempt(s) the ingress retried behind {logged} logged request(s){by}"
        ),
        i64::try_from(hidden).unwrap_or(i64::MAX),
        None,
        format_args!(
            "the clients were answered, but those attempts failed on an upstream (a request the ingress could not retry, such as a POST already sent, would have failed)"
        ),
    )
}

/// Why one replica's figure is not measured; `None` when it is.
fn unmeasured(r: &ReplicaRetries) -> Option<String> {
    if r.hidden.is_some() {
        return None;
    }
    let name = r.replica.as_deref().unwrap_or("a replica not recorded");
    if r.services.is_empty() {
        return Some(
            "the ingress's access log names no service for the trial's requests (Traefik's ServiceName), so its counters cannot be matched to them".into(),
        );
    }
    Some(match r.other_requests() {
        None => format!(
            "{name}'s request counters were not scraped both before the trial's first request and after its last, one went back (a restart), or they still moved after the access log went quiet (or, where the log counts attempts, a line of the trial's did not), so its retries cannot be counted"
        ),
        Some(other) if other > 0 => format!(
            "{name}'s counters of {} hold {other} request(s) its access log does not name as the trial's (another client's, or a line not read), so its failed attempts are not the trial's alone",
            r.services.join(", ")
        ),
        Some(other) if other < 0 => format!(
            "{name}'s access log names {} more of the trial's requests than its counters of {} hold (a line of a request counted before the first scrape or after the last), so they do not count the same requests",
            -other,
            r.services.join(", ")
        ),
        Some(_) => format!(
            "{name}'s counters hold fewer 5xx of some status than its access log sent the trial's clients ({} in the log, {} counted in all), so they do not count the same requests",
            r.failed_logged,
            r.failed_counted.unwrap_or(0)
        ),
    })
}
