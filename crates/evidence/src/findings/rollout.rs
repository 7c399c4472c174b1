//! `rollout-no-ready-endpoint`: during a rollout the Service had no ready endpoint for a
//! while (attach, from `trial.attach.no_ready_endpoint_windows`), set beside the recorded
//! rollout strategy.

use super::{
    Derived, EvidenceRef, Finding, FindingId, Recommendation, Severity, Unit, field, secs,
};
use crate::report::Report;
use crate::settings::RolloutStrategy;
use crate::trigger::Trigger;

/// The finding, for a rollout-restart whose windows after the trigger are not empty.
pub(super) fn rollout_no_ready_endpoint(report: &Report) -> Option<Finding> {
    let t = &report.trial;
    if t.config.trigger != Trigger::RolloutRestart {
        return None;
    }
    let a = t.attach.as_ref()?;
    let windows: Vec<_> = a
        .no_ready_endpoint_windows
        .as_ref()?
        .iter()
        .filter(|w| w.end_t_ms >= 0)
        .collect();
    let first = windows.first()?;
    let total: i64 = windows.iter().map(|w| w.duration_ms).sum();
    let longest = windows.iter().map(|w| w.duration_ms).max().unwrap_or(0);
    let inside: Vec<usize> = a
        .failures
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            windows
                .iter()
                .any(|w| f.t_ms >= w.start_t_ms && f.t_ms <= w.end_t_ms)
        })
        .map(|(i, _)| i)
        .collect();
    let mut evidence = vec![field("trial.attach.no_ready_endpoint_windows")];
    evidence.extend(
        inside
            .iter()
            .map(|&index| EvidenceRef::AttachFailure { index }),
    );
    let rollout = t
        .termination_settings
        .as_ref()
        .and_then(|s| s.rollout.as_ref());
    if rollout.is_some() {
        evidence.push(field("trial.termination_settings.rollout"));
    }
    let n = |v: Option<i32>| v.map_or_else(|| "not read".to_string(), |v| v.to_string());
    let (why, text, derived) = match rollout {
        Some(r) if r.strategy == RolloutStrategy::Recreate => (
            format!("The Deployment's strategy is Recreate (replicas {}): every old pod goes before a new one starts, so the Service is empty in between.", n(r.replicas)),
            "Use the RollingUpdate strategy with maxUnavailable 0 and maxSurge 1, so a new pod is ready before an old one is taken down.".to_string(),
            Some(Derived { value: 0, unit: Unit::Pods, rule: "maxUnavailable 0 keeps every replica ready until its replacement is: Recreate allows all of them to be unavailable at once".into() }),
        ),
        Some(r) if r.max_surge.is_none() => (
            format!("The StatefulSet replaces its pods one at a time without surging (replicas {}, maxUnavailable {}, partition {}): with a single replica, or as many unavailable as there are replicas, none is ready while a pod restarts.", n(r.replicas), n(r.max_unavailable_pods), n(r.partition)),
            "Run at least two replicas (and keep maxUnavailable below the replicas), so one stays ready while another restarts.".to_string(),
            r.replicas.and_then(|k| u64::try_from(k.max(1) + 1).ok()).map(|value| Derived { value, unit: Unit::Pods, rule: format!("the replicas recorded ({}) plus one, so one pod is ready while the controller replaces another", n(r.replicas)) }),
        ),
        Some(r) if r.max_unavailable_pods.is_some_and(|u| u > 0) => (
            format!("The rollout may take {} of {} replicas down at once (maxUnavailable {} resolved to {}, maxSurge {} resolved to {}): the old pods left rotation before the new ones were ready.", n(r.max_unavailable_pods), n(r.replicas), r.max_unavailable.as_ref().map_or_else(|| "unset".to_string(), ToString::to_string), n(r.max_unavailable_pods), r.max_surge.as_ref().map_or_else(|| "unset".to_string(), ToString::to_string), n(r.max_surge_pods)),
            "Set maxUnavailable 0 and maxSurge to at least 1, so the controller takes an old pod down only after its replacement is ready.".to_string(),
            Some(Derived { value: 0, unit: Unit::Pods, rule: format!("maxUnavailable resolved to {} of {} replicas and that many pods left rotation before replacements were ready; 0 keeps them until then", n(r.max_unavailable_pods), n(r.replicas)) }),
        ),
        Some(r) => (
            format!("maxUnavailable resolved to {} (maxSurge {}) should keep a ready pod, so the controller counted a new pod available before its endpoint was ready.", n(r.max_unavailable_pods), n(r.max_surge_pods)),
            "Make availability mean serving: a readiness probe that passes only when the pod serves, and minReadySeconds covering the time its endpoint takes to become ready.".to_string(),
            u64::try_from(longest).ok().map(|ms| Derived { value: ms.div_ceil(1000), unit: Unit::Seconds, rule: format!("the longest window without a ready endpoint ({longest} ms), rounded up to the whole second, as a lower bound for minReadySeconds") }),
        ),
        None => (
            "The rollout strategy was not recorded, so which setting allowed it is not known.".to_string(),
            "Set maxUnavailable 0 and maxSurge to at least 1, so the controller takes an old pod down only after its replacement is ready.".to_string(),
            None,
        ),
    };
    Some(Finding {
        id: FindingId::RolloutNoReadyEndpoint,
        severity: if inside.is_empty() {
            Severity::Warning
        } else {
            Severity::Failure
        },
        title: format!(
            "During the rollout the Service had no ready endpoint for {} in {} window{} (the first from {} to {}{}); {} failures fell inside.",
            secs(total),
            windows.len(),
            if windows.len() > 1 { "s" } else { "" },
            secs(first.start_t_ms),
            secs(first.end_t_ms),
            if first.open_at_end {
                ", still open when the observation ended"
            } else {
                ""
            },
            inside.len()
        ),
        why: format!(
            "{why} (kube-proxy may still route to terminating endpoints that serve, but a client sees whatever the last ready pod does while it shuts down.)"
        ),
        recommendation: Some(Recommendation { text, derived }),
        evidence,
    })
}
