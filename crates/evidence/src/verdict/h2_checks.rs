//! The HTTP/2 and gRPC thresholds against one trial's attach section: `no-stream-reset` (no
//! request failed by RST_STREAM or after a GOAWAY), `goaway-before-close` (every connection
//! that ended had received a GOAWAY first) and `no-watch-cut` (no held gRPC Watch ended
//! without a status).

use crate::attach::FailureMechanism;
use crate::attach::section::ConnOutcome;
use crate::report::Report;

use super::check::{Check, none_bad, not_measured};

/// The mechanisms `no-stream-reset` counts.
const RESETS: [FailureMechanism; 2] = [
    FailureMechanism::RstStream,
    FailureMechanism::GoawayThenReset,
];

fn h2_section<'a>(trial_id: &str, r: &'a Report) -> Result<&'a crate::attach::AttachReport, Check> {
    let Some(a) = &r.trial.attach else {
        return Err(not_measured(
            trial_id,
            "the trial measured drainwatch's probe, not an attached workload".into(),
        ));
    };
    if !a.protocol.is_h2() {
        return Err(not_measured(
            trial_id,
            format!(
                "a {} arm speaks no HTTP/2, so there is no stream or GOAWAY",
                a.protocol
            ),
        ));
    }
    Ok(a)
}

/// `no-stream-reset`: no request failed with `rst-stream` or `goaway-then-reset`.
pub(super) fn no_stream_reset(trial_id: &str, r: &Report) -> Check {
    let a = match h2_section(trial_id, r) {
        Ok(a) => a,
        Err(c) => return c,
    };
    let Some(q) = a.requests.as_ref().filter(|q| q.total > 0) else {
        return not_measured(trial_id, "no request was recorded".into());
    };
    let by = |m: FailureMechanism| q.failed_by_mechanism.get(&m).copied().unwrap_or(0);
    let bad: u32 = RESETS.into_iter().map(by).sum();
    let measured = format!(
        "{bad} of {} requests reset (rst-stream {}, goaway-then-reset {})",
        q.total,
        by(FailureMechanism::RstStream),
        by(FailureMechanism::GoawayThenReset)
    );
    none_bad(trial_id, bad, q.total, measured, "no stream reset")
}

/// `goaway-before-close`: every connection that ended (gracefully or severed) had received
/// the server's GOAWAY before its end.
pub(super) fn goaway_before_close(trial_id: &str, r: &Report) -> Check {
    let a = match h2_section(trial_id, r) {
        Ok(a) => a,
        Err(c) => return c,
    };
    let ended: Vec<_> = a
        .connection_records
        .iter()
        .filter(|c| matches!(c.outcome, ConnOutcome::GracefulClose | ConnOutcome::Severed))
        .collect();
    if ended.is_empty() {
        return not_measured(trial_id, "no connection ended within the window".into());
    }
    let total = u32::try_from(ended.len()).unwrap_or(u32::MAX);
    let bad =
        u32::try_from(ended.iter().filter(|c| c.goaway_t_ms.is_none()).count()).unwrap_or(u32::MAX);
    let measured = format!("{bad} of {total} ended connections had no GOAWAY before their end");
    none_bad(
        trial_id,
        bad,
        total,
        measured,
        "a GOAWAY before every close",
    )
}

/// `no-watch-cut`: no held `grpc.health.v1.Health/Watch` was cut (ended without a gRPC
/// status). Not measured when the trial held none.
pub(super) fn no_watch_cut(trial_id: &str, r: &Report) -> Check {
    let a = match h2_section(trial_id, r) {
        Ok(a) => a,
        Err(c) => return c,
    };
    let Some(w) = &a.watches else {
        return not_measured(
            trial_id,
            "the arm held no gRPC Watch (--grpc-watch, policy key grpc-watch)".into(),
        );
    };
    if w.total == 0 {
        return not_measured(trial_id, "no Watch was recorded".into());
    }
    let by: Vec<String> = w
        .cut_by_mechanism
        .iter()
        .map(|(m, n)| format!("{m} {n}"))
        .collect();
    let measured = if by.is_empty() {
        format!("0 of {} Watches cut", w.total)
    } else {
        format!("{} of {} Watches cut ({})", w.cut, w.total, by.join(", "))
    };
    none_bad(trial_id, w.cut, w.total, measured, "no Watch cut")
}
