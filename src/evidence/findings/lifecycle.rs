//! Findings about the pod's termination sequence against the traffic it still received:
//! `endpoint-lag` (attach) and `readiness-not-failed` (probe and attach).

use super::{
    Derived, EvidenceRef, Finding, FindingId, Recommendation, Severity, Unit, at, ceil_secs, field,
    row, secs,
};
use crate::evidence::attach::section::{AttachReport, FailureKind, Phase};
use crate::evidence::event::EventName;
use crate::evidence::report::Report;

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

/// One pod's lag: from its deletion request to the last failure attributed to it.
struct PodLag<'a> {
    pod: &'a str,
    deletion: i64,
    last: i64,
}

/// `endpoint-lag`: new connections or requests failed on a terminating pod. The recommended
/// preStop delay covers the longest span from a pod's deletion request to its last failure.
pub(super) fn endpoint_lag(report: &Report) -> Option<Finding> {
    let a = report.trial.attach.as_ref()?;
    let idx: Vec<usize> = a
        .failures
        .iter()
        .enumerate()
        .filter(|(_, f)| f.pod.is_some() && terminating(f.phase))
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
            })
        })
        .collect();
    // The worst pod: the longest lag; ties go to the first by name (pods are sorted by name).
    let worst = lags.iter().fold(None::<&PodLag>, |best, l| match best {
        Some(b) if b.last - b.deletion >= l.last - l.deletion => Some(b),
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
            format!(
                "Pod {}: deletion requested at {}, endpoint not ready at {}, container exited at {}, endpoint removed at {}, yet connections to it kept failing until {}, {} after the deletion request ({after_exit} failures after a container exited): traffic still reached the pod after it stopped serving.",
                p.pod,
                at(p.deletion_requested_t_ms),
                at(p.endpoint_not_ready_t_ms),
                at(p.exited_t_ms),
                at(p.endpoint_removed_t_ms),
                secs(w.last),
                secs(w.last - w.deletion),
            )
        }
        None => format!(
            "Failures were attributed to terminating pods ({after_exit} after a container exited), but no pod's deletion request was observed, so the lag is not measured."
        ),
    };
    let recommendation = Recommendation {
        text: "Delay SIGTERM with a preStop sleep so the container keeps serving until the dataplane stops routing to it, and keep terminationGracePeriodSeconds above the preStop sleep plus the drain.".into(),
        derived: worst.map(|w| Derived {
            value: ceil_secs(w.last - w.deletion) + MARGIN_S,
            unit: Unit::Seconds,
            rule: format!(
                "the longest span in this trial from a pod's deletion request to its last failure ({} ms), rounded up to the whole second, plus a {MARGIN_S} s margin; failures are placed at their recorded times, so a timed-out attempt (recorded when it gave up, at most {} ms after it was sent) makes this an upper bound",
                w.last - w.deletion,
                report.trial.config.attach.as_ref().map_or(0, |c| c.request_timeout_ms),
            ),
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

/// `readiness-not-failed`: the endpoint stayed ready (no ready:false or serving:false seen)
/// until the container exited, though the endpoint itself was watched.
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
            p.endpoint_removed_t_ms.is_some()
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
