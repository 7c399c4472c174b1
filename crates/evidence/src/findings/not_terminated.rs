//! `not-terminated`: the trigger terminated no pod of the target, so the trial measured traffic
//! against pods that were never asked to leave. Clean numbers from such a trial prove nothing
//! about shutdown; the finding says what held the termination back and what to change so that
//! the next trial terminates something.

use super::{EvidenceRef, Finding, FindingId, Recommendation, Severity, field, row};
use crate::event::EventName;
use crate::report::{Report, TrialStatus};
use crate::trigger::Trigger;

/// What held the termination back, read from the timeline and the recorded settings, most
/// specific first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    /// The Eviction API refused (429) until the bound: a PodDisruptionBudget.
    Budget,
    /// A replacement pod could not be scheduled, so the rollout or drain went no further.
    Unschedulable,
    /// A StatefulSet's partition keeps its pods from being updated.
    Partition,
    /// A scale that removed no replica.
    ScaleNoChange,
    /// Nothing recorded says.
    Unknown,
}

fn cause(report: &Report) -> Cause {
    let t = &report.trial;
    let seen = |ev: EventName| t.timeline.iter().any(|e| e.event == ev);
    let partition = t
        .termination_settings
        .as_ref()
        .and_then(|s| s.rollout.as_ref())
        .and_then(|r| r.partition)
        .is_some_and(|p| p > 0);
    if seen(EventName::EvictionGaveUp) || seen(EventName::EvictionRefused) {
        Cause::Budget
    } else if seen(EventName::PodUnschedulable) {
        Cause::Unschedulable
    } else if partition {
        Cause::Partition
    } else if t.config.trigger == Trigger::Scale {
        Cause::ScaleNoChange
    } else {
        Cause::Unknown
    }
}

fn advice(c: Cause) -> &'static str {
    match c {
        Cause::Budget => {
            "Let the PodDisruptionBudget allow one disruption during the trial (run more ready replicas than it demands, or relax minAvailable / maxUnavailable); a budget that allows none holds every drain and eviction."
        }
        Cause::Unschedulable => {
            "Give the cluster room for the replacement pod (the scheduler's message is on the timeline), or roll with maxSurge 0 and maxUnavailable 1 so that an old pod leaves before a new one must be placed."
        }
        Cause::Partition => {
            "Lower the StatefulSet's rollingUpdate partition to 0 for the trial, or target a pod at or above the partition: pods below it are never updated."
        }
        Cause::ScaleNoChange => {
            "Scale to fewer replicas than the workload runs, so that the scale-down removes a pod."
        }
        Cause::Unknown => {
            "Check that --target names the workload behind the Service and that the observation window (--observe-timeout) is long enough for the trigger to take effect; then run the trial again."
        }
    }
}

/// The finding, on a `not-terminated` trial only.
pub(super) fn not_terminated(report: &Report) -> Option<Finding> {
    let t = &report.trial;
    if t.status != TrialStatus::NotTerminated {
        return None;
    }
    let mut evidence: Vec<EvidenceRef> = vec![field("trial.status")];
    for ev in [
        EventName::TriggerIssued,
        EventName::EvictionGaveUp,
        EventName::PodUnschedulable,
        EventName::DisruptionNotSettled,
    ] {
        evidence.extend(row(report, &ev, None));
    }
    if t.termination_settings
        .as_ref()
        .is_some_and(|s| s.pdbs.as_ref().is_some_and(|p| !p.is_empty()))
    {
        evidence.push(field("trial.termination_settings.pdbs"));
    }
    Some(Finding {
        id: FindingId::NotTerminated,
        // Clients saw no failure; the trial fails by what it could not measure.
        severity: Severity::Warning,
        title: format!(
            "The {} trigger terminated no pod of {}: no shutdown was measured, so the trial is not judged.",
            t.config.trigger.as_str(),
            t.config.workload
        ),
        why: t
            .status_detail
            .clone()
            .unwrap_or_else(|| "no deletion, container exit or SIGTERM was seen after t=0".into()),
        recommendation: Some(Recommendation {
            text: advice(cause(report)).into(),
            derived: None,
        }),
        evidence,
    })
}
