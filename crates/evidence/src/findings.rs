//! Findings: what went wrong in a trial, why, and what to change, as a pure function of the
//! report's evidence (issue 17, item 2).
//!
//! A finding is computed from a report without findings, so a replay stays a fixed point: the
//! same report always yields the same findings in the same order (severity, worst first, then
//! id). Each finding cites its evidence by reference (timeline row indices, flow ids, indices
//! into `trial.attach.failures`, pod names, paths of counts and intervals), never by copy, and a
//! recommendation's number states the rule that derived it from the measurement.
//!
//! Only what the report records is used: the evidence, and the workload's termination
//! settings recorded at the start of the trial (`trial.termination_settings`, schema 3.1),
//! which recommendations cite beside the measured numbers; a report without them (an older
//! recording) yields the same findings with those citations left out.

mod conn;
#[cfg(test)]
mod context_tests;
mod exit;
#[cfg(test)]
mod exit_tests;
mod ingress;
mod ingress_outcomes;
#[cfg(test)]
mod ingress_tests;
mod lifecycle;
mod not_terminated;
mod prestop;
mod probe;
#[cfg(test)]
mod probe_tests;
pub mod render;
mod rollout;
#[cfg(test)]
mod settings_tests;
#[cfg(test)]
mod tests;
mod workload;

use super::event::EventName;
use super::report::{Report, TrialStatus};

pub use super::finding::{
    Derived, EvidenceRef, Finding, FindingId, Recommendation, Severity, Unit,
};

/// The findings of one report, most severe first, then by id.
pub fn findings(report: &Report) -> Vec<Finding> {
    let mut out: Vec<Finding> = [
        lifecycle::endpoint_lag(report),
        probe::sigkill_at_grace(report),
        conn::rst_instead_of_close(report),
        conn::keepalive_closed_in_flight(report),
        probe::udp_rehomed(report),
        lifecycle::readiness_not_failed(report),
        workload::pdb_blocked_eviction(report),
        workload::attach_sigkill(report),
        exit::sigterm_not_handled(report),
        rollout::rollout_no_ready_endpoint(report),
        not_terminated::not_terminated(report),
        ingress_outcomes::no_available_server(report),
        ingress_outcomes::no_route(report),
        ingress_outcomes::upstream_hang(report),
        ingress_outcomes::error_on_serving_pod(report),
        ingress_outcomes::hidden_retry(report),
    ]
    .into_iter()
    .flatten()
    .collect();
    if out.is_empty() {
        out.extend(nothing_wrong(report));
    }
    out.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.id.as_str().cmp(b.id.as_str()))
    });
    out
}

/// The findings `report` holds (schema 3.1), else those computed from it (an older report):
/// what the summary, the comment and JUnit show.
pub fn of_report(report: &Report) -> Vec<Finding> {
    report.findings.clone().unwrap_or_else(|| findings(report))
}

/// Failures the report counts, whether or not a finding explains them.
fn failures_counted(report: &Report) -> u64 {
    let s = &report.trial.summary;
    let mut n = u64::from(s.tcp.severed + s.tcp.read_timeout + s.udp.severed + s.udp.read_timeout);
    if let Some(a) = &report.trial.attach {
        n += u64::from(a.requests.as_ref().map_or(0, |r| r.failed));
        n += u64::from(a.dials.as_ref().map_or(0, |d| d.failed));
        n += u64::from(a.connections_lost());
        // A cut gRPC Watch is counted apart from the requests, but it is a failure.
        n += u64::from(a.watches.as_ref().map_or(0, |w| w.cut));
    }
    n
}

/// `nothing-wrong`: a completed trial that measured something and counted no failure. A probe
/// trial whose pod under test never exited within the window (its node's kubelet down, a
/// window shorter than the grace period) measured no termination: flows that merely outlived
/// the window are not "nothing wrong", so it says nothing.
fn nothing_wrong(report: &Report) -> Option<Finding> {
    let t = &report.trial;
    if t.status != TrialStatus::Completed || failures_counted(report) > 0 {
        return None;
    }
    let s = &t.summary;
    if t.attach.is_none() && s.trigger_to_container_terminated_ms.is_none() {
        return None;
    }
    let mut parts = Vec::new();
    let mut evidence = Vec::new();
    if s.tcp.total > 0 {
        parts.push(format!(
            "{} of {} TCP flows drained cleanly",
            s.tcp.drained, s.tcp.total
        ));
        evidence.push(field("trial.summary.tcp"));
    }
    if s.udp.total > 0 {
        parts.push(format!("{} UDP flows lost no reply", s.udp.total));
        evidence.push(field("trial.summary.udp"));
    }
    if let Some(a) = &t.attach {
        if let Some(r) = &a.requests {
            parts.push(format!("{} of {} requests succeeded", r.ok, r.total));
            evidence.push(field("trial.attach.requests"));
        }
        if let Some(d) = &a.dials {
            parts.push(format!(
                "{} of {} new connections were served",
                d.served, d.total
            ));
            evidence.push(field("trial.attach.dials"));
        }
        let c = &a.connections;
        if c.total > 0 {
            parts.push(format!(
                "{} held connections ended without a break: {}; {} open at the window's end",
                c.total,
                super::attach::render::closed_phrase(c),
                c.survived_observation_window
            ));
            evidence.push(field("trial.attach.connections"));
        }
        if let Some(w) = a.watches.as_ref().filter(|w| w.total > 0) {
            parts.push(format!(
                "{} gRPC Watches were not cut ({} drained after NOT_SERVING)",
                w.total, w.drained
            ));
            evidence.push(field("trial.attach.watches"));
        }
    }
    if parts.is_empty() {
        return None;
    }
    let mut why = vec![format!(
        "endpoint removed at {}, container exited at {} with exit code {}",
        at(s.trigger_to_endpoint_removed_ms),
        at(s.trigger_to_container_terminated_ms),
        s.container_exit_code
            .map_or_else(|| "not-measured".to_string(), |c| c.to_string())
    )];
    if let Some(last) = s.sigterm_to_last_flow_terminal_ms {
        why.insert(
            0,
            format!(
                "SIGTERM at {}, last flow ended {} after it",
                at(s.trigger_to_sigterm_ms),
                secs(last)
            ),
        );
    }
    evidence.push(field("trial.summary.trigger_to_endpoint_removed_ms"));
    evidence.push(field("trial.summary.trigger_to_container_terminated_ms"));
    Some(Finding {
        id: FindingId::NothingWrong,
        severity: Severity::Info,
        title: format!("Nothing failed: {}.", parts.join(", ")),
        why: format!(
            "The termination was measured end to end ({}) and no observation failed.",
            why.join("; ")
        ),
        recommendation: None,
        evidence,
    })
}

/// A reference to a field by path.
fn field(path: &str) -> EvidenceRef {
    EvidenceRef::Field { path: path.into() }
}

/// The first timeline row with `event` at `t_ms` (any time when `t_ms` is None).
fn row(report: &Report, event: &EventName, t_ms: Option<i64>) -> Option<EvidenceRef> {
    report
        .trial
        .timeline
        .iter()
        .position(|e| &e.event == event && t_ms.is_none_or(|t| e.t_ms == t))
        .map(|index| EvidenceRef::TimelineRow {
            index,
            event: event.clone(),
        })
}

/// Milliseconds as seconds with two decimals.
fn secs(ms: i64) -> String {
    // Integer arithmetic keeps the text exact and free of float formatting.
    let sign = if ms < 0 { "-" } else { "" };
    let a = ms.unsigned_abs();
    format!("{sign}{}.{:02} s", a / 1000, (a % 1000) / 10)
}

/// A time after the trigger, or `not-measured`.
fn at(ms: Option<i64>) -> String {
    ms.map_or_else(|| "not-measured".to_string(), secs)
}

/// `ms` rounded up to the next whole second (0 stays 0; negative counts as 0).
fn ceil_secs(ms: i64) -> u64 {
    u64::try_from(ms.max(0)).unwrap_or(0).div_ceil(1000)
}
