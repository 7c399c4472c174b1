//! Findings on probe trials' flows: `sigkill-at-grace` (the kill cut open TCP connections) and
//! `udp-rehomed` (UDP flows answered by another pod).

use super::{
    Derived, EvidenceRef, Finding, FindingId, Recommendation, Severity, Unit, at, field, row, secs,
};
use crate::classify::{Mechanism, Outcome};
use crate::event::EventName;
use crate::flow::Proto;
use crate::report::Report;

/// The exit code of a process killed by SIGKILL (128 + 9).
const SIGKILL_EXIT: i32 = 137;

/// `sigkill-at-grace`: the container exited 137 while TCP flows it had at SIGTERM were still
/// open; they ended without a clean close. Probe trials; an attached pod killed at its grace
/// period is `workload::attach_sigkill`.
pub(super) fn sigkill_at_grace(report: &Report) -> Option<Finding> {
    let t = &report.trial;
    let s = &t.summary;
    if t.attach.is_some() || s.container_exit_code != Some(SIGKILL_EXIT) {
        return None;
    }
    let sigterm = s.trigger_to_sigterm_ms.unwrap_or(0);
    let open: Vec<_> = t
        .flows
        .iter()
        .filter(|f| {
            f.proto == Proto::Tcp
                && !matches!(f.outcome, Outcome::DrainedCleanClose | Outcome::NotMeasured)
                && f.t_terminal_ms.is_none_or(|e| e >= sigterm)
        })
        .collect();
    if open.is_empty() {
        return None;
    }
    // The recorded grace period is the deployed one; a recording without it falls back to the
    // plan's, which is what drainwatch deployed.
    let recorded = t
        .termination_settings
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds);
    let grace = recorded.unwrap_or(t.config.grace_period_seconds);
    let drain = t.config.drain_max_seconds;
    let measured = s
        .trigger_to_sigterm_ms
        .zip(s.trigger_to_container_terminated_ms)
        .map(|(a, b)| b - a);
    let last = open.iter().filter_map(|f| f.t_terminal_ms).max();
    let mut evidence: Vec<EvidenceRef> = open
        .iter()
        .map(|f| EvidenceRef::Flow { id: f.id.clone() })
        .collect();
    evidence.push(field("trial.summary.container_exit_code"));
    evidence.push(field("trial.summary.sigterm_to_last_flow_terminal_ms"));
    evidence.push(field(if recorded.is_some() {
        "trial.termination_settings.termination_grace_period_seconds"
    } else {
        "trial.config.grace_period_seconds"
    }));
    evidence.push(field("trial.config.drain_max_seconds"));
    evidence.extend(row(report, &EventName::SigtermReceived, None));
    let ignored = row(report, &EventName::SigtermIgnored, None);
    let ignored_text = if ignored.is_some() {
        " (the process logged that it ignored SIGTERM)"
    } else {
        ""
    };
    evidence.extend(ignored);
    evidence.extend(row(
        report,
        &EventName::ContainerTerminated,
        s.trigger_to_container_terminated_ms,
    ));
    let after = last.map(|l| l - sigterm);
    let recommendation = if drain < grace {
        Recommendation {
            text: format!(
                "Handle SIGTERM: finish the drain and exit within the drain window, at most {drain} s after SIGTERM, {} s before the kubelet's SIGKILL.",
                grace - drain
            ),
            derived: Some(Derived {
                value: u64::from(drain),
                unit: Unit::Seconds,
                rule: format!(
                    "the configured drain window (drain_max_seconds = {drain} s), which already fits inside terminationGracePeriodSeconds = {grace} s"
                ),
            }),
        }
    } else {
        Recommendation {
            text: "Raise terminationGracePeriodSeconds above the drain window, or shorten the drain window below the grace period.".into(),
            derived: Some(Derived {
                value: u64::from(drain) + 1,
                unit: Unit::Seconds,
                rule: format!(
                    "the drain window ({drain} s) plus a 1 s margin, since the kubelet sends SIGKILL when the grace period ({grace} s) ends"
                ),
            }),
        }
    };
    Some(Finding {
        id: FindingId::SigkillAtGrace,
        severity: Severity::Failure,
        title: format!(
            "SIGKILL at the grace-period boundary (exit {SIGKILL_EXIT}) ended {} of {} TCP connections still open, {} after SIGTERM.",
            open.len(),
            s.tcp.total,
            after.map_or_else(|| "not-measured".to_string(), secs)
        ),
        why: format!(
            "The grace period is {grace} s{} and the configured drain window {drain} s, but the process was still running when the grace period ran out{ignored_text}: the measured drain window, SIGTERM to exit, was {}; SIGTERM at {}, connections ended at {}, container exited at {}.",
            if recorded.is_some() {
                " (terminationGracePeriodSeconds as recorded)"
            } else {
                ""
            },
            measured.map_or_else(|| "not-measured".to_string(), secs),
            at(s.trigger_to_sigterm_ms),
            at(last),
            at(s.trigger_to_container_terminated_ms)
        ),
        recommendation: Some(recommendation),
        evidence,
    })
}

/// `udp-rehomed`: UDP flows whose replies moved to another pod.
pub(super) fn udp_rehomed(report: &Report) -> Option<Finding> {
    let t = &report.trial;
    let s = &t.summary;
    let moved: Vec<_> = t
        .flows
        .iter()
        .filter(|f| f.proto == Proto::Udp && f.mechanism == Mechanism::Rehomed)
        .filter_map(|f| f.rehomed.as_ref().map(|r| (f, r)))
        .collect();
    // The old pod stopped serving at the first of its container's exit and its first TCP
    // connection's end; a re-homing after that is failover, not this finding.
    let exited = s.trigger_to_container_terminated_ms;
    let first_tcp_end = t
        .flows
        .iter()
        .filter(|f| f.proto == Proto::Tcp)
        .filter_map(|f| f.t_terminal_ms)
        .min();
    let stopped = match (exited, first_tcp_end) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let stopped = stopped?;
    let moved: Vec<_> = moved
        .into_iter()
        .filter(|(_, r)| r.first_new_reply_t_ms < stopped)
        .collect();
    let (_, r0) = moved.first()?;
    let gap = moved
        .iter()
        .filter_map(|(_, r)| {
            r.last_original_reply_t_ms
                .map(|l| r.first_new_reply_t_ms - l)
        })
        .max();
    let first_new = moved.iter().map(|(_, r)| r.first_new_reply_t_ms).min();
    let ready_false = s
        .trigger_to_sigterm_ms
        .zip(s.sigterm_to_ready_false_ms)
        .map(|(a, b)| a + b);
    let mut evidence: Vec<EvidenceRef> = moved
        .iter()
        .map(|(f, _)| EvidenceRef::Flow { id: f.id.clone() })
        .collect();
    evidence.push(field("trial.summary.mechanisms.udp"));
    evidence.push(field("trial.summary.trigger_to_container_terminated_ms"));
    Some(Finding {
        id: FindingId::UdpRehomed,
        severity: Severity::Warning,
        title: format!(
            "{} of {} UDP flows were re-homed from pod {} onto {} while the old pod was still serving.",
            moved.len(),
            s.udp.total,
            r0.from_instance,
            r0.to_instance
        ),
        why: format!(
            "The first reply from the new pod came at {} while the old pod served until {} (first TCP connection ended at {}, container exited at {}, endpoint ready:false at {}); kube-proxy keeps no UDP connection, only conntrack entries, and drops those of an endpoint it stops routing to, so the client's next datagram reaches another pod even while the old one still answers (largest reply gap {}).",
            at(first_new),
            secs(stopped),
            at(first_tcp_end),
            at(exited),
            at(ready_false),
            gap.map_or_else(|| "not-measured".to_string(), |g| format!("{g} ms"))
        ),
        recommendation: Some(Recommendation {
            text: "This is inherent to kube-proxy's UDP handling: a UDP client must tolerate its server changing mid-flow (keep no per-server session state, or re-establish it when replies come from a new source) and a gap in replies.".into(),
            derived: gap.map(|g| Derived {
                value: u64::try_from(g.max(0)).unwrap_or(0),
                unit: Unit::Milliseconds,
                rule: "the largest gap in this trial between a flow's last reply from the original pod and its first from the new one: the client's retry budget must cover at least this".into(),
            }),
        }),
        evidence,
    })
}
