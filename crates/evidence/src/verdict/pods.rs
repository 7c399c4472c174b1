//! Timeline thresholds on an attach trial, judged pod by pod: each pod the trial terminated on
//! its own lane, the worst of them deciding. A rollout terminates several pods; the first event
//! of any pod says nothing about the last one, and a pod already terminating before the trigger
//! (context) is in no threshold.

use crate::attach::AttachReport;
use crate::attach::judged::{self, Worst};
use crate::attach::section::PodLaneReport;

use super::check::{Check, decide, not_measured};

/// Which lane time an interval threshold reads, from the trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LaneTime {
    /// The container was seen terminated.
    Exit,
    /// The endpoint left the EndpointSlice.
    EndpointRemoved,
}

impl LaneTime {
    fn of(self, p: &PodLaneReport) -> Option<i64> {
        match self {
            Self::Exit => p.exited_t_ms,
            Self::EndpointRemoved => p.endpoint_removed_t_ms,
        }
    }

    fn words(self) -> &'static str {
        match self {
            Self::Exit => "container exit",
            Self::EndpointRemoved => "endpoint removal",
        }
    }
}

/// `trigger-to-… <= D`: the latest over the terminated pods; not measured when a pod's time
/// was not observed (it could be the one over the bound).
pub(super) fn worst(
    trial_id: &str,
    a: &AttachReport,
    which: LaneTime,
    name: &str,
    max_ms: u64,
) -> Check {
    match judged::worst(a, |p| which.of(p)) {
        Worst::NoPods => not_measured(trial_id, "the trial terminated no pod of the target".into()),
        Worst::Unseen(pods) => not_measured(
            trial_id,
            format!(
                "the {} of {} was not observed, so the worst of the terminated pods cannot be shown",
                which.words(),
                pods.join(", ")
            ),
        ),
        Worst::Value { pod, t_ms, of } => decide(
            trial_id,
            t_ms <= i64::try_from(max_ms).unwrap_or(i64::MAX),
            format!("{name} {t_ms} ms (the worst of {of} pods: {pod})"),
            t_ms,
            None,
            format_args!("the threshold is ≤ {max_ms} ms"),
        ),
    }
}

/// `endpoint-not-ready-before-exit`: every terminated pod's endpoint left the ready set (not
/// ready, not serving, or removed) strictly before its own container exited, on the lane's
/// full-precision order (`left_ready_before_exit`); a report without it compares whole
/// milliseconds, where a tie is not "before".
pub(super) fn endpoint_before_exit(trial_id: &str, a: &AttachReport) -> Check {
    let pods = judged::terminated(a);
    if pods.is_empty() {
        return not_measured(trial_id, "the trial terminated no pod of the target".into());
    }
    let left = |p: &PodLaneReport| {
        [p.endpoint_not_ready_t_ms, p.endpoint_removed_t_ms]
            .into_iter()
            .flatten()
            .min()
    };
    let mut unseen = Vec::new();
    let mut late = Vec::new();
    // The smallest margin (exit − not ready) over the pods: the one closest to failing.
    let mut margin: Option<(i64, &str)> = None;
    for p in &pods {
        match (left(p), p.exited_t_ms) {
            (Some(r), Some(x)) => {
                // The full-precision order where recorded; whole ms (a tie is not before) else.
                if !p.left_ready_before_exit.unwrap_or(r < x) {
                    late.push(format!("{} ({r} ms not ready, {x} ms exit)", p.pod));
                }
                if margin.is_none_or(|(m, _)| x - r < m) {
                    margin = Some((x - r, p.pod.as_str()));
                }
            }
            (_, None) => unseen.push(format!("{}'s exit", p.pod)),
            (None, Some(_)) => unseen.push(format!("{}'s endpoint transition", p.pod)),
        }
    }
    if !late.is_empty() {
        return decide(
            trial_id,
            false,
            format!(
                "{} of {} pods exited before their endpoint left the ready set: {}",
                late.len(),
                pods.len(),
                late.join(", ")
            ),
            margin.map_or(0, |(m, _)| m),
            None,
            format_args!("the endpoint must leave the ready set before the exit"),
        );
    }
    if !unseen.is_empty() {
        return not_measured(trial_id, format!("{} not observed", unseen.join(", ")));
    }
    let Some((m, pod)) = margin else {
        return not_measured(trial_id, "no pod's transitions were observed".into());
    };
    decide(
        trial_id,
        true,
        format!(
            "every one of {} pods left the ready set before its exit (closest: {pod}, {m} ms before)",
            pods.len()
        ),
        m,
        None,
        format_args!("the endpoint must leave the ready set before the exit"),
    )
}
