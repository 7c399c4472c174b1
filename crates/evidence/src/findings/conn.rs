//! Findings about how held connections ended: `rst-instead-of-close` (probe TCP flows, attach
//! TCP/WebSocket connections) and `keepalive-closed-in-flight` (attach HTTP requests).

use std::collections::BTreeSet;

use super::{EvidenceRef, Finding, FindingId, Recommendation, Severity, at, field, row, secs};
use crate::attach::section::{FailureKind, FailureMechanism};
use crate::classify::Mechanism;
use crate::event::EventName;
use crate::flow::Proto;
use crate::report::Report;

/// `rst-instead-of-close`: established TCP connections were reset (RST) rather than closed.
pub(super) fn rst_instead_of_close(report: &Report) -> Option<Finding> {
    let t = &report.trial;
    let s = &t.summary;
    // Probe flows: the TCP flows whose terminal mechanism was a reset.
    let flows: Vec<_> = t
        .flows
        .iter()
        .filter(|f| f.proto == Proto::Tcp && f.mechanism == Mechanism::Rst)
        .collect();
    // Attach: held TCP / WebSocket connections that broke with a reset (an HTTP connection's
    // reset shows as a request failure: keepalive-closed-in-flight).
    let conns: Vec<usize> = t.attach.as_ref().map_or_else(Vec::new, |a| {
        a.failures
            .iter()
            .enumerate()
            .filter(|(_, f)| {
                f.kind == FailureKind::Connection && f.mechanism == FailureMechanism::Reset
            })
            .map(|(i, _)| i)
            .collect()
    });
    let n = flows.len() + conns.len();
    if n == 0 {
        return None;
    }
    let times: Vec<i64> = flows
        .iter()
        .filter_map(|f| f.t_terminal_ms)
        .chain(conns.iter().filter_map(|&i| {
            t.attach
                .as_ref()
                .and_then(|a| a.failures.get(i))
                .map(|f| f.t_ms)
        }))
        .collect();
    let span = match (times.iter().min(), times.iter().max()) {
        (Some(a), Some(b)) => span(*a, *b),
        _ => String::new(),
    };
    let last_reset = flows.iter().filter_map(|f| f.t_terminal_ms).max();
    let total = if t.attach.is_some() {
        t.attach.as_ref().map_or(0, |a| a.connections.total) + s.tcp.total
    } else {
        s.tcp.total
    };
    let mut evidence: Vec<EvidenceRef> = flows
        .iter()
        .map(|f| EvidenceRef::Flow { id: f.id.clone() })
        .collect();
    evidence.extend(
        conns
            .iter()
            .map(|&index| EvidenceRef::AttachFailure { index }),
    );
    let why = if t.attach.is_some() {
        format!(
            "The connections broke with ECONNRESET instead of an orderly close; the container exited at {} (exit code {}), so the server's shutdown path reset them: a reset discards data in flight, where a close (FIN) after the last response would not.",
            at(s.trigger_to_container_terminated_ms),
            s.container_exit_code
                .map_or_else(|| "not-measured".to_string(), |c| c.to_string())
        )
    } else {
        evidence.push(field("trial.summary.mechanisms.tcp"));
        evidence.extend(row(report, &EventName::SigtermReceived, None));
        let forced = if t.config.exit_now_force_rst {
            " (this probe was configured to reset its connections on exit: exit_now_force_rst)"
        } else {
            ""
        };
        let removed = s
            .trigger_to_endpoint_removed_ms
            .map_or_else(String::new, |r| {
                format!(", while the endpoint was removed only at {}", secs(r))
            });
        format!(
            "SIGTERM arrived at {} and the last connection was reset {} after it{forced}{removed}: the process exited without closing its connections, and a reset discards data in flight where a close (FIN) would not.",
            at(s.trigger_to_sigterm_ms),
            s.trigger_to_sigterm_ms
                .zip(last_reset)
                .map_or_else(|| "not-measured".to_string(), |(a, b)| secs(b - a)),
        )
    };
    Some(Finding {
        id: FindingId::RstInsteadOfClose,
        severity: Severity::Failure,
        title: format!(
            "{n} of {total} established TCP connections were reset (RST) instead of closed{span}."
        ),
        why,
        recommendation: Some(Recommendation {
            text: "Fix the application's shutdown path: on SIGTERM stop accepting, finish or refuse in-flight work on the wire, then close each connection (FIN) before exiting; do not exit with connections open or set SO_LINGER 0.".into(),
            derived: None,
        }),
        evidence,
    })
}

/// `keepalive-closed-in-flight`: requests on held keep-alive connections were cut, the
/// response truncated or the connection reset, instead of the server announcing the close.
pub(super) fn keepalive_closed_in_flight(report: &Report) -> Option<Finding> {
    let a = report.trial.attach.as_ref()?;
    let requests = a.requests.as_ref()?;
    let idx: Vec<usize> = a
        .failures
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            f.kind == FailureKind::Request
                && matches!(
                    f.mechanism,
                    FailureMechanism::Truncated | FailureMechanism::Reset
                )
        })
        .map(|(i, _)| i)
        .collect();
    let cut: Vec<_> = idx.iter().filter_map(|&i| a.failures.get(i)).collect();
    let first = cut.iter().map(|f| f.t_ms).min()?;
    let last = cut.iter().map(|f| f.t_ms).max()?;
    let truncated = cut
        .iter()
        .filter(|f| f.mechanism == FailureMechanism::Truncated)
        .count();
    let reset = cut.len() - truncated;
    let flows: BTreeSet<&str> = cut.iter().map(|f| f.flow_id.as_str()).collect();
    let c = &a.connections;
    let mut evidence: Vec<EvidenceRef> = idx
        .iter()
        .map(|&index| EvidenceRef::AttachFailure { index })
        .collect();
    evidence.push(field("trial.attach.requests.failed_by_mechanism"));
    evidence.push(field("trial.attach.connections"));
    let first_cut = cut.iter().min_by_key(|f| f.t_ms)?;
    let pod = first_cut
        .pod
        .as_deref()
        .and_then(|p| a.pods.iter().find(|l| l.pod == p));
    let whose = match pod {
        Some(p) => {
            evidence.push(EvidenceRef::Pod { pod: p.pod.clone() });
            format!(
                "the first was cut at {} on pod {} ({}; deletion requested at {}, container exited at {})",
                secs(first_cut.t_ms),
                p.pod,
                first_cut.phase,
                at(p.deletion_requested_t_ms),
                at(p.exited_t_ms)
            )
        }
        None => format!(
            "the first was cut at {} ({})",
            secs(first_cut.t_ms),
            first_cut.phase
        ),
    };
    Some(Finding {
        id: FindingId::KeepaliveClosedInFlight,
        severity: Severity::Failure,
        title: format!(
            "{} of {} requests on held keep-alive connections ({}) were cut in flight ({truncated} truncated, {reset} reset){}.",
            cut.len(),
            requests.total,
            flows.into_iter().collect::<Vec<_>>().join(", "),
            span(first, last)
        ),
        why: format!(
            "The server ended connections with a request outstanding instead of answering it with `Connection: close` or closing only while idle: {whose}; of {} connections, {}, {} broke.",
            c.total,
            crate::attach::render::closed_phrase(c),
            c.severed,
        ),
        recommendation: Some(Recommendation {
            text: "On SIGTERM, answer in-flight requests with `Connection: close` and close keep-alive connections only when idle (a graceful server shutdown such as Go's http.Server.Shutdown), then exit.".into(),
            derived: None,
        }),
        evidence,
    })
}

/// ", at X after the trigger" or ", between X and Y after the trigger".
fn span(first: i64, last: i64) -> String {
    if first == last {
        format!(", {} after the trigger", secs(first))
    } else {
        format!(
            ", between {} and {} after the trigger",
            secs(first),
            secs(last)
        )
    }
}
