//! The ingress's lag after a terminated pod's endpoint turned not ready, from its access log
//! (`trial.attach.ingress.routing`):
//!
//! - `ingress-propagation-lag <= D` is a bound per controller replica, as the node's is
//!   (`node_lag`): at least until the last request the replica sent the pod, at most until the
//!   first of a run of later requests other pods answered. A replica whose lower bound is over
//!   D misses; the threshold holds only when every replica's upper bound is within D.
//! - `ingress-last-request-lag <= D` is the last request any replica sent the pod after that
//!   edge: over D misses; it holds only when every terminated pod's edge was seen, the ingress
//!   logged requests after the last of them, and the log names the pod of every request after
//!   the first (an unlogged one may have gone to a terminated pod).

use crate::attach::AttachReport;
use crate::ingress::routing::IngressRouting;

use super::bounded::{View, Words, judge};
use super::check::{Check, decide, not_measured};

/// The routing the ingress thresholds judge, or the check that says why there is none.
fn routing<'a>(trial_id: &str, a: &'a AttachReport) -> Result<&'a IngressRouting, Check> {
    let Some(ingress) = &a.ingress else {
        return Err(not_measured(
            trial_id,
            "the trial's flows did not go through an ingress, or its access log recorded none of them".into(),
        ));
    };
    ingress.routing.as_ref().ok_or_else(|| {
        not_measured(
            trial_id,
            "no request the ingress logged was answered by a known pod, so its routing was not seen".into(),
        )
    })
}

/// `ingress-propagation-lag <= max_ms` against one trial.
pub(super) fn propagation(trial_id: &str, a: &AttachReport, max_ms: u64) -> Check {
    let r = match routing(trial_id, a) {
        Ok(r) => r,
        Err(c) => return c,
    };
    if r.replicas.iter().all(|rep| rep.lag_at_least_ms.is_none()) {
        return not_measured(
            trial_id,
            "no terminated pod's endpoint was seen turning not ready".into(),
        );
    }
    let views: Vec<View> = r
        .replicas
        .iter()
        .map(|rep| View {
            name: rep
                .replica
                .clone()
                .unwrap_or_else(|| "the ingress (replica not recorded)".into()),
            at_least: rep.lag_at_least_ms,
            at_most: rep.lag_at_most_ms,
        })
        .collect();
    let words = Words {
        measure: "ingress-propagation-lag",
        sent: "sent a request",
        run_of: "requests",
        stopped: "choosing the pod",
        view: "replica",
    };
    judge(trial_id, &views, max_ms, &words)
}

/// `ingress-last-request-lag <= max_ms` against one trial.
pub(super) fn last_request(trial_id: &str, a: &AttachReport, max_ms: u64) -> Check {
    let r = match routing(trial_id, a) {
        Ok(r) => r,
        Err(c) => return c,
    };
    let (Some(lag), Some(logged), Some(unlogged)) = (
        r.last_request_lag_ms,
        r.logged_after_not_ready,
        r.not_logged_after_not_ready,
    ) else {
        return not_measured(
            trial_id,
            "a terminated pod's endpoint was not seen turning not ready, so its lag cannot be read"
                .into(),
        );
    };
    let max = i64::try_from(max_ms).unwrap_or(i64::MAX);
    let measured = format!(
        "ingress-last-request-lag {lag} ms (the last request the ingress sent a terminating pod after its endpoint turned not ready)"
    );
    if lag > max {
        return decide(
            trial_id,
            false,
            measured,
            lag,
            None,
            format_args!("the threshold is ≤ {max_ms} ms"),
        );
    }
    if logged == 0 {
        return not_measured(
            trial_id,
            "no request the ingress logged was sent after the last terminated pod's endpoint turned not ready, so whether it still chose that pod was not seen".into(),
        );
    }
    if unlogged > 0 {
        return not_measured(
            trial_id,
            format!(
                "{unlogged} request(s) sent after a terminated pod's endpoint turned not ready are not in the ingress's access log with the pod they went to; any of them may have gone to a terminated pod, so \"ingress-last-request-lag <= {max_ms}ms\" cannot be shown"
            ),
        );
    }
    decide(
        trial_id,
        true,
        measured,
        lag,
        None,
        format_args!("the threshold is ≤ {max_ms} ms"),
    )
}
