//! Findings about the pod's termination sequence against the traffic it still received:
//! `endpoint-lag` (attach) and `readiness-not-failed` (probe and attach).

use super::{
    Derived, EvidenceRef, Finding, FindingId, Recommendation, Severity, Unit, at, ceil_secs, field,
    ingress, prestop, row, secs,
};
use crate::attach::section::{AttachReport, FailureKind, Phase};
use crate::event::EventName;
use crate::report::Report;
use crate::settings::TerminationSettings;

/// The margin added to the measured lag, in seconds: the lag varies between trials and
/// kube-proxy resyncs, so the rule leaves one more second than any trial measured.
const MARGIN_S: u64 = 1;

/// A phase in which the pod was being terminated.
fn terminating(p: Phase) -> bool {
    matches!(
        p,
        Phase::TerminatingReady
            | Phase::TerminatingNotReady
            | Phase::AfterEndpointRemoval
            | Phase::AfterExit
    )
}

/// One pod's lag: from its deletion request until the dataplane stopped sending it traffic,
/// the later of its endpoint's removal and its last failure.
struct PodLag<'a> {
    pod: &'a str,
    deletion: i64,
    last: i64,
    removed: Option<i64>,
}

impl PodLag<'_> {
    /// Until when the pod still had to serve.
    fn until(&self) -> i64 {
        self.removed.map_or(self.last, |r| r.max(self.last))
    }

    fn lag(&self) -> i64 {
        self.until() - self.deletion
    }
}
/// `endpoint-lag`: new connections or requests failed on a terminating pod. The recommended
/// preStop delay covers the longest span from a pod's deletion request to its last failure, or,
/// through an ingress whose log bounds its lag, until the ingress had stopped choosing the pod.
pub(super) fn endpoint_lag(report: &Report) -> Option<Finding> {
    let a = report.trial.attach.as_ref()?;
    let idx: Vec<usize> = a
        .failures
        .iter()
        .enumerate()
        // Only the trial's own pods: a failure on a pod already terminating before the
        // trigger (trial.attach.context_pods) is context, not this trial's termination.
        .filter(|(_, f)| {
            terminating(f.phase)
                && f.pod
                    .as_deref()
                    .is_some_and(|p| a.pods.iter().any(|l| l.pod == p))
        })
        .map(|(i, _)| i)
        .collect();
    let first = idx
        .iter()
        .filter_map(|&i| a.failures.get(i))
        .map(|f| f.t_ms)
        .min()?;
    let last = idx
        .iter()
        .filter_map(|&i| a.failures.get(i))
        .map(|f| f.t_ms)
        .max()?;
    let kinds = |k: FailureKind| {
        idx.iter()
            .filter_map(|&i| a.failures.get(i))
            .filter(|f| f.kind == k)
            .count()
    };
    let mut what = Vec::new();
    let (dials, requests, conns) = (
        kinds(FailureKind::Dial),
        kinds(FailureKind::Request),
        kinds(FailureKind::Connection),
    );
    if dials > 0 {
        let total = a.dials.as_ref().map_or(0, |d| d.total);
        what.push(format!("{dials} of {total} new connections"));
    }
    if requests > 0 {
        let total = a.requests.as_ref().map_or(0, |r| r.total);
        what.push(format!("{requests} of {total} requests"));
    }
    if conns > 0 {
        what.push(format!("{conns} held connections"));
    }
    let after_exit = idx
        .iter()
        .filter_map(|&i| a.failures.get(i))
        .filter(|f| f.phase == Phase::AfterExit)
        .count();
    let lags: Vec<PodLag> = a
        .pods
        .iter()
        .filter_map(|p| {
            let last = idx
                .iter()
                .filter_map(|&i| a.failures.get(i))
                .filter(|f| f.pod.as_deref() == Some(p.pod.as_str()))
                .map(|f| f.t_ms)
                .max()?;
            Some(PodLag {
                pod: &p.pod,
                deletion: p.deletion_requested_t_ms?,
                last,
                removed: p.endpoint_removed_t_ms,
            })
        })
        .collect();
    // The worst pod: the longest lag; ties go to the first by name (pods are sorted by name).
    let worst = lags.iter().fold(None::<&PodLag>, |best, l| match best {
        Some(b) if b.lag() >= l.lag() => Some(b),
        _ => Some(l),
    });
    let mut evidence: Vec<EvidenceRef> = idx
        .iter()
        .map(|&index| EvidenceRef::AttachFailure { index })
        .collect();
    evidence.push(field("trial.attach.failures_by_phase"));
    let why = match worst.and_then(|w| a.pods.iter().find(|p| p.pod == w.pod).map(|p| (w, p))) {
        Some((w, p)) => {
            evidence.push(EvidenceRef::Pod { pod: p.pod.clone() });
            let lane_rows = [
                (
                    EventName::PodDeletionTimestampSet,
                    p.deletion_requested_t_ms,
                ),
                (
                    EventName::EndpointsliceEndpointRemoved,
                    p.endpoint_removed_t_ms,
                ),
                (EventName::ContainerTerminated, p.exited_t_ms),
            ];
            for (event, t) in lane_rows {
                if t.is_some() {
                    evidence.extend(row(report, &event, t));
                }
            }
            let before_removal = p
                .exited_t_ms
                .zip(p.endpoint_removed_t_ms)
                .filter(|(e, r)| e < r)
                .map(|(e, r)| {
                    format!(
                        " (the container exited {} before its endpoint was removed)",
                        secs(r - e)
                    )
                })
                .unwrap_or_default();
            format!(
                "Pod {}: deletion requested at {}, endpoint not ready at {}, container exited at {}, endpoint removed at {}{before_removal}, yet connections to it kept failing until {}, {} after the deletion request ({after_exit} failures after a container exited): traffic still reached the pod after it stopped serving{}.",
                p.pod,
                at(p.deletion_requested_t_ms),
                at(p.endpoint_not_ready_t_ms),
                at(p.exited_t_ms),
                at(p.endpoint_removed_t_ms),
                secs(w.last),
                secs(w.last - w.deletion),
                prestop_clause(report),
            ) + &node_clause(a, &p.pod, &mut evidence)
                + &ingress::clause(a, &p.pod, &mut evidence)
        }
        None => format!(
            "Failures were attributed to terminating pods ({after_exit} after a container exited), but no pod's deletion request was observed, so the lag is not measured."
        ),
    };
    let settings = report.trial.termination_settings.as_ref();
    if settings.is_some() {
        evidence.push(field("trial.termination_settings.containers"));
        evidence.push(field(
            "trial.termination_settings.termination_grace_period_seconds",
        ));
    }
    let grace = settings
        .and_then(|s| s.termination_grace_period_seconds)
        .map(|g| format!(" (recorded: {g} s)"))
        .unwrap_or_default();
    // Through an ingress whose log bounds when it stopped choosing each terminated pod, the
    // sleep covers that; otherwise the span the failures give.
    let through = ingress::span(a);
    if through.is_some() {
        evidence.push(field("trial.attach.ingress.routing"));
    }
    let delay = match &through {
        Some(span) => Some(ceil_secs(span.ms()) + MARGIN_S),
        None => worst.map(|w| ceil_secs(w.lag()) + MARGIN_S),
    };
    let rule = match &through {
        Some(span) => Some(ingress::rule(span, worst.map(PodLag::lag), MARGIN_S)),
        None => worst.map(|w| {
            format!(
                "the longest span in this trial from a pod's deletion request until the dataplane stopped sending it traffic, the later of its endpoint's removal ({}) and its last failure ({}): {} ms, rounded up to the whole second, plus a {MARGIN_S} s margin; failures are placed at their recorded times, so a timed-out attempt (recorded when it gave up, at most {} ms after it was sent) makes this an upper bound",
                w.removed.map_or_else(|| "not observed".to_string(), |r| format!("{} ms after the deletion", r - w.deletion)),
                format_args!("{} ms after it", w.last - w.deletion),
                w.lag(),
                report.trial.config.attach.as_ref().map_or(0, |c| c.request_timeout_ms),
            )
        }),
    };
    let routes = if through.is_some() {
        "the ingress stops routing to it"
    } else {
        "the dataplane stops routing to it"
    };
    let recommendation = Recommendation {
        text: format!(
            "Delay SIGTERM with a preStop sleep so the container keeps serving until {routes}, and keep terminationGracePeriodSeconds{grace} above the preStop sleep plus the drain. Write it as {}.",
            prestop::prestop_hook(report.environment.kubernetes_version.as_deref(), delay)
        ),
        derived: rule.zip(delay).map(|(rule, value)| Derived {
            value,
            unit: Unit::Seconds,
            rule: rule + &recorded_prestop(settings, value),
        }),
    };
    Some(Finding {
        id: FindingId::EndpointLag,
        severity: Severity::Failure,
        title: format!(
            "{} failed on terminating pods between {} and {} after the trigger.",
            what.join(" and "),
            secs(first),
            secs(last)
        ),
        why,
        recommendation: Some(recommendation),
        evidence,
    })
}

/// " Per client node, the worst was node2: …" when the trial saw two or more nodes' data planes
/// route to `pod` (`trial.attach.data_plane`): each node is programmed on its own, and the
/// preStop sleep must cover the slowest one. Empty otherwise.
fn node_clause(a: &AttachReport, pod: &str, evidence: &mut Vec<EvidenceRef>) -> String {
    // Through an ingress the clients' traffic goes from the controller to pod IPs: the nodes'
    // data planes are the direct prober's, set beside the ingress's by its own clause.
    if a.kube_proxy_views().is_some() {
        return String::new();
    }
    let mut lags: Vec<(&str, i64)> = a
        .data_plane
        .iter()
        .flatten()
        .filter_map(|v| {
            let lag = v
                .pods
                .iter()
                .find(|p| p.pod == pod)?
                .lag_after_not_ready_ms?;
            Some((v.node.as_deref().unwrap_or("a node not recorded"), lag))
        })
        .collect();
    if lags.len() < 2 {
        return String::new();
    }
    evidence.push(field("trial.attach.data_plane"));
    // The latest first; ties by node name (the views are in name order).
    lags.sort_by_key(|&(_, lag)| std::cmp::Reverse(lag));
    let (worst, lag) = lags[0];
    let rest: Vec<String> = lags[1..]
        .iter()
        .map(|(n, l)| format!("{n} {}", secs(*l)))
        .collect();
    format!(
        " Per client node, the worst was {worst}: it sent this pod new connections until {} after its endpoint turned not ready ({}); a preStop sleep must cover the slowest node's data plane.",
        secs(lag),
        rest.join(", ")
    )
}

/// "; the recorded preStop (…) delays SIGTERM N s, M s short" when the report recorded the
/// workload's settings: how far the hook it has is from the `value` derived.
fn recorded_prestop(settings: Option<&TerminationSettings>, value: u64) -> String {
    settings.map_or_else(String::new, |s| match s.prestop_seconds() {
        Some(p) if u64::from(p) >= value => format!(
            "; the recorded preStop ({}) already delays SIGTERM this long, so the exit is not what lets traffic fail: look for a hook that is not the sleep it seems",
            s.prestop_phrase()
        ),
        Some(p) => format!(
            "; the recorded preStop ({}) delays SIGTERM {p} s, {} s short",
            s.prestop_phrase(),
            value - u64::from(p)
        ),
        None => format!(
            "; the recorded preStop ({}) has no duration the spec states",
            s.prestop_phrase()
        ),
    })
}

/// ", and the recorded preStop is …" when the report recorded the workload's settings.
fn prestop_clause(report: &Report) -> String {
    report
        .trial
        .termination_settings
        .as_ref()
        .map(|s| format!("; the recorded preStop hook: {}", s.prestop_phrase()))
        .unwrap_or_default()
}

/// `readiness-not-failed`: the endpoint stayed ready (no ready:false or serving:false seen)
/// until the container exited, though the endpoint itself was watched and was seen ready.
pub(super) fn readiness_not_failed(report: &Report) -> Option<Finding> {
    match &report.trial.attach {
        Some(a) => attach_readiness(report, a),
        None => probe_readiness(report),
    }
}

fn recommendation() -> Recommendation {
    Recommendation {
        text: "Fail the readiness probe as soon as SIGTERM arrives (or let the EndpointSlice mark the terminating endpoint not ready), so the endpoint leaves rotation while the pod still serves.".into(),
        derived: None,
    }
}

fn attach_readiness(report: &Report, a: &AttachReport) -> Option<Finding> {
    let late: Vec<_> = a
        .pods
        .iter()
        .filter(|p| {
            // An endpoint first seen not ready and never seen ready did not "stay ready".
            p.endpoint_removed_t_ms.is_some()
                && p.endpoint_seen_ready != Some(false)
                && p.exited_t_ms
                    .is_some_and(|e| p.endpoint_not_ready_t_ms.is_none_or(|n| n >= e))
        })
        .collect();
    let p = late.first()?;
    let mut evidence: Vec<EvidenceRef> = late
        .iter()
        .map(|p| EvidenceRef::Pod { pod: p.pod.clone() })
        .collect();
    evidence.extend(row(report, &EventName::ContainerTerminated, p.exited_t_ms));
    Some(Finding {
        id: FindingId::ReadinessNotFailed,
        severity: Severity::Warning,
        title: format!(
            "The endpoint of {} of {} terminated pods stayed ready until its container exited (pod {}: exited at {}, not ready at {}).",
            late.len(),
            a.pods.len(),
            p.pod,
            at(p.exited_t_ms),
            at(p.endpoint_not_ready_t_ms)
        ),
        why: format!(
            "Pod {}'s deletion was requested at {} but its endpoint was not marked not ready before the container exited, so the dataplane kept sending new connections to a pod that was shutting down.",
            p.pod,
            at(p.deletion_requested_t_ms)
        ),
        recommendation: Some(recommendation()),
        evidence,
    })
}

fn probe_readiness(report: &Report) -> Option<Finding> {
    let s = &report.trial.summary;
    let sigterm = s.trigger_to_sigterm_ms?;
    let exited = s.trigger_to_container_terminated_ms?;
    // Without an observed endpoint removal the endpoint was not watched: absence proves nothing.
    s.trigger_to_endpoint_removed_ms?;
    let ready_false = s.sigterm_to_ready_false_ms.map(|d| sigterm + d);
    if ready_false.is_some_and(|r| r < exited) {
        return None;
    }
    let mut evidence = vec![
        field("trial.summary.sigterm_to_ready_false_ms"),
        field("trial.summary.trigger_to_container_terminated_ms"),
    ];
    evidence.extend(row(report, &EventName::SigtermReceived, None));
    evidence.extend(row(report, &EventName::ContainerTerminated, Some(exited)));
    Some(Finding {
        id: FindingId::ReadinessNotFailed,
        severity: Severity::Warning,
        title: format!(
            "The endpoint stayed ready until the container exited at {} (ready:false at {}).",
            secs(exited),
            at(ready_false)
        ),
        why: format!(
            "SIGTERM arrived at {} and the container exited {} later, but the endpoint was not marked not ready before the exit, so new connections were still routed to it.",
            secs(sigterm),
            secs(exited - sigterm)
        ),
        recommendation: Some(recommendation()),
        evidence,
    })
}
