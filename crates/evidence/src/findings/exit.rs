//! `sigterm-not-handled`: a terminated pod's container exit code shows that SIGTERM reached a
//! process with no handler for it. Read from the exit codes the pod watch recorded on
//! `container_terminated` (`trial.attach.pods[].exit_code`, with the deletion request and the
//! exit on the same timebase), so it is a pure function of the report like every finding.
//!
//! - 143 is 128 + SIGTERM: the process died by SIGTERM's default action.
//! - 2 before the grace period ran out is what a Go program running as PID 1 returns when
//!   SIGTERM reaches it without `signal.Notify`: the runtime re-raises the signal to die by it,
//!   the kernel drops a default-action signal that a PID namespace's init sends itself, and
//!   the runtime falls back to `exit(2)`. Other programs may exit 2 for their own reasons, so
//!   the finding says what the code is consistent with, not that it proves a Go binary.
//! - 137 at the grace-period boundary (SIGKILL: the handler, if any, did not finish in time)
//!   is `sigkill-at-grace` (`workload::attach_sigkill`).

use super::{EvidenceRef, Finding, FindingId, Recommendation, Severity, field, row, secs};
use crate::attach::section::PodLaneReport;
use crate::event::EventName;
use crate::report::Report;

/// The exit code of a process ended by SIGTERM's default action (128 + 15).
pub(super) const SIGTERM_EXIT: i32 = 143;

/// The exit code of a Go program as PID 1 when SIGTERM reaches it with no handler.
pub(super) const GO_PID1_SIGTERM_EXIT: i32 = 2;

/// How much earlier than the grace period an exit still counts as at its end (the deletion
/// time is the API's, the exit the watch's), as in `workload`.
const GRACE_TOLERANCE_MS: i64 = 1000;

/// A pod whose exit code shows no SIGTERM handler: its code and how long after its deletion
/// request it exited.
struct Unhandled<'a> {
    pod: &'a PodLaneReport,
    code: i32,
    after_ms: i64,
}

/// The pods whose container exited 143, or 2 before the grace period ran out (a 2 at the
/// boundary is no evidence about SIGTERM), after their deletion was requested.
fn unhandled(pods: &[PodLaneReport], grace_s: Option<u32>) -> Vec<Unhandled<'_>> {
    pods.iter()
        .filter_map(|p| {
            let code = p.exit_code?;
            let after_ms = p.exited_t_ms? - p.deletion_requested_t_ms?;
            let before_grace =
                grace_s.is_none_or(|g| after_ms < i64::from(g) * 1000 - GRACE_TOLERANCE_MS);
            let shows = match code {
                SIGTERM_EXIT => true,
                GO_PID1_SIGTERM_EXIT => before_grace,
                _ => false,
            };
            (shows && after_ms >= 0).then_some(Unhandled {
                pod: p,
                code,
                after_ms,
            })
        })
        .collect()
}

/// What an exit code says about the process.
fn meaning(code: i32) -> &'static str {
    match code {
        SIGTERM_EXIT => {
            "exit code 143 is 128 + 15: the process was ended by SIGTERM's default action, so it had no handler for it"
        }
        _ => {
            "exit code 2 before the grace period ran out is what a Go program running as PID 1 returns when SIGTERM reaches it without a handler (signal.Notify): the Go runtime re-raises the signal to die by it, the kernel ignores a default-action signal sent to a PID namespace's init, and the runtime exits 2 instead (a program may also exit 2 for its own reasons)"
        }
    }
}

/// `sigterm-not-handled`: see the module documentation.
pub(super) fn sigterm_not_handled(report: &Report) -> Option<Finding> {
    let a = report.trial.attach.as_ref()?;
    let settings = report.trial.termination_settings.as_ref();
    let grace = settings.and_then(|s| s.termination_grace_period_seconds);
    let hits = unhandled(&a.pods, grace);
    let first = hits.first()?;
    let mut codes: Vec<i32> = hits.iter().map(|h| h.code).collect();
    codes.sort_unstable();
    codes.dedup();
    let why: Vec<String> = codes
        .iter()
        .map(|c| {
            let pods: Vec<String> = hits
                .iter()
                .filter(|h| h.code == *c)
                .map(|h| {
                    format!(
                        "{} {} after its deletion request",
                        h.pod.pod,
                        secs(h.after_ms)
                    )
                })
                .collect();
            format!("{} ({})", meaning(*c), pods.join(", "))
        })
        .collect();
    let mut evidence: Vec<EvidenceRef> = hits
        .iter()
        .map(|h| EvidenceRef::Pod {
            pod: h.pod.pod.clone(),
        })
        .collect();
    evidence.extend(row(
        report,
        &EventName::ContainerTerminated,
        first.pod.exited_t_ms,
    ));
    evidence.push(field("trial.attach.pods"));
    if grace.is_some() {
        evidence.push(field(
            "trial.termination_settings.termination_grace_period_seconds",
        ));
    }
    let codes_text: Vec<String> = codes.iter().map(ToString::to_string).collect();
    Some(Finding {
        id: FindingId::SigtermNotHandled,
        severity: Severity::Warning,
        title: format!(
            "No SIGTERM handler: {} of {} terminated pods exited with code {} (pod {}: exit {} {} after its deletion request).",
            hits.len(),
            a.pods.len(),
            codes_text.join(" or "),
            first.pod.pod,
            first.code,
            secs(first.after_ms)
        ),
        why: format!(
            "{}. Without a handler nothing drains: connections the process held are closed by the kernel (a bare FIN or a reset), in-flight requests are cut, and whatever the endpoint still routes to the pod is refused.",
            why.join("; ")
        ),
        recommendation: Some(Recommendation {
            text: format!(
                "Handle SIGTERM: catch it (in Go, signal.NotifyContext, then http.Server.Shutdown or grpc.Server.GracefulStop), stop accepting, finish or announce the close of in-flight work (`Connection: close`, GOAWAY), and exit 0 before terminationGracePeriodSeconds{} runs out; a preStop sleep keeps the pod serving while the endpoint is removed.",
                grace.map_or_else(String::new, |g| format!(" ({g} s recorded)"))
            ),
            derived: None,
        }),
        evidence,
    })
}
