//! A lag known only between two bounds, judged against `<= D` across several views of the
//! routing (client nodes for `node-propagation-lag`, ingress replicas for
//! `ingress-propagation-lag`): a view whose lower bound is over D misses whatever the rest
//! says; the threshold holds only when every view's upper bound is within D; a view without an
//! upper bound leaves it not measured.

use super::check::{Check, decide, not_measured};

/// One view's bounds of its lag after a terminated pod's endpoint turned not ready, ms.
pub(super) struct View {
    /// The node or replica, as messages name it.
    pub name: String,
    /// The lag is at least this; `None` when no pod's not-ready was seen.
    pub at_least: Option<i64>,
    /// ... and at most this; `None` when not bounded.
    pub at_most: Option<i64>,
}

/// How messages speak of the views and what they route.
pub(super) struct Words {
    /// The threshold's measure, e.g. `node-propagation-lag`.
    pub measure: &'static str,
    /// What a view sent the pod, e.g. "routed a new connection".
    pub sent: &'static str,
    /// What makes a run, e.g. "dials".
    pub run_of: &'static str,
    /// What a view stopped doing, e.g. "routing there".
    pub stopped: &'static str,
    /// One view, e.g. "node".
    pub view: &'static str,
}

/// `views`' lag against `<= max_ms` in one trial.
pub(super) fn judge(trial_id: &str, views: &[View], max_ms: u64, w: &Words) -> Check {
    let max = i64::try_from(max_ms).unwrap_or(i64::MAX);
    // A lower bound over D is a miss whatever the rest says.
    if let Some((v, least)) = views
        .iter()
        .filter_map(|v| v.at_least.map(|l| (v, l)))
        .max_by_key(|(_, l)| *l)
        .filter(|(_, l)| *l > max)
    {
        return decide(
            trial_id,
            false,
            format!(
                "{} at least {least} ms ({} still {} to a terminating pod that long after its endpoint turned not ready)",
                w.measure, v.name, w.sent
            ),
            least,
            None,
            format_args!("the threshold is ≤ {max_ms} ms"),
        );
    }
    let unbounded: Vec<&str> = views
        .iter()
        .filter(|v| v.at_most.is_none())
        .map(|v| v.name.as_str())
        .collect();
    if !unbounded.is_empty() {
        return not_measured(
            trial_id,
            format!(
                "{} sent no run of {} after a terminated pod's endpoint turned not ready that other pods answered, long enough to show it had stopped {}, so its lag has no upper bound and \"{} <= {max_ms}ms\" cannot be shown",
                unbounded.join(", "),
                w.run_of,
                w.stopped,
                w.measure
            ),
        );
    }
    let Some((v, most)) = views
        .iter()
        .filter_map(|v| v.at_most.map(|m| (v, m)))
        .max_by_key(|(_, m)| *m)
    else {
        return not_measured(trial_id, format!("no {}'s lag was bounded", w.view));
    };
    decide(
        trial_id,
        most <= max,
        format!(
            "{} at most {most} ms (the worst of {} {}(s): {})",
            w.measure,
            views.len(),
            w.view,
            v.name
        ),
        most,
        None,
        format_args!("the threshold is ≤ {max_ms} ms"),
    )
}
