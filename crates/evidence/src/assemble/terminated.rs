//! Whether the trigger terminated anything the trial can judge. A trial whose window closed
//! without a single termination of the target (a drain held by a PodDisruptionBudget until
//! its bound, a rollout whose new pod was never scheduled, a StatefulSet behind a partition, a
//! scale to the count it already had) measured traffic against a pod that was never asked to
//! leave: its clean numbers prove nothing about shutdown, so it is `not-terminated`, never a
//! pass.
//!
//! Pure: the lines in, the reason out.

use crate::attach::lanes::{lanes, split};
use crate::event::{EventLine, EventName, Source};
use crate::settings::TerminationSettings;
use crate::trigger::Trigger;

/// Orchestrator and Kubernetes events whose details say why nothing was terminated, in the
/// order they are quoted.
const WHY_EVENTS: [EventName; 4] = [
    EventName::EvictionGaveUp,
    EventName::EvictionFailed,
    EventName::DisruptionNotSettled,
    EventName::PodUnschedulable,
];

/// Details quoted per event, at most: a drain of many pods repeats itself.
const QUOTED_PER_EVENT: usize = 3;

/// Whether `lines` show a termination of the trial's own reaching the workload: a container
/// of the target that exited after the trigger (a pod already leaving before it is context,
/// never the trial's), the probe's own SIGTERM, the local workload's exit. A deletion the
/// kubelet never acted on (its node down) is asked for, not done: nothing shut down.
pub(super) fn terminated(lines: &[EventLine], t0: i64) -> bool {
    let (own, context) = split(lanes(lines), t0);
    let pod_exited = own.iter().any(|l| l.exited_ns.is_some_and(|x| x >= t0));
    // A pod object that left the API after the trigger ended its graceful deletion, which the
    // API server completes only once the kubelet says the containers are gone: an exit, even
    // when the watch was in a gap as the container's status changed.
    let pod_gone = lines.iter().any(|l| {
        l.source == Some(Source::K8s)
            && l.event == EventName::PodObjectDeleted
            && l.at_ns.is_some_and(|at| at >= t0)
            && l.instance
                .as_deref()
                .is_none_or(|p| !context.iter().any(|c| c.pod == p))
    });
    let probe_signalled = lines.iter().any(|l| {
        l.source == Some(Source::Probe)
            && l.event == EventName::SigtermReceived
            && l.at_ns.is_none_or(|at| at >= t0)
    });
    // The probe's pod under test and the local workload: exit lines that name no pod.
    let unnamed_exit = lines.iter().any(|l| {
        l.event == EventName::ContainerTerminated
            && l.instance.is_none()
            && l.at_ns.is_some_and(|at| at >= t0)
    });
    pod_exited || pod_gone || probe_signalled || unnamed_exit
}

/// Deletions requested at or after the trigger: asked for, whether or not anything exited.
fn deletions_requested(lines: &[EventLine], t0: i64) -> usize {
    lines
        .iter()
        .filter(|l| {
            l.source == Some(Source::K8s)
                && l.event == EventName::PodDeletionTimestampSet
                && l.at_ns.is_some_and(|at| at >= t0)
        })
        .count()
}

/// Why a completed trial that terminated nothing is not judged; `None` when it terminated
/// something, or when drainwatch issued no trigger of its own (a manual `client` run, whose
/// termination is someone else's).
pub(super) fn not_terminated(
    lines: &[EventLine],
    t0: i64,
    trigger: Trigger,
    triggered: bool,
    settings: Option<&TerminationSettings>,
) -> Option<String> {
    if trigger == Trigger::Manual || terminated(lines, t0) {
        return None;
    }
    let asked = deletions_requested(lines, t0);
    let first = if !triggered {
        "no trigger was issued, so no shutdown was measured".to_string()
    } else if asked > 0 {
        format!(
            "the {} trigger had {asked} pod deletion(s) requested, but no container of the target exited and no SIGTERM was seen within the observation window (the node's kubelet did not act, or the window ended before the pods' grace period), so no shutdown was measured",
            trigger.as_str()
        )
    } else {
        format!(
            "the {} trigger terminated no pod of the target within the observation window (no deletion, no container exit, no SIGTERM after t=0), so no shutdown was measured",
            trigger.as_str()
        )
    };
    let mut parts = vec![first];
    parts.extend(quoted(lines));
    parts.extend(budgets(settings));
    Some(parts.join("; "))
}

/// The recorded reasons: eviction refusals given up on, a disruption that did not settle, a
/// pod the scheduler could not place.
fn quoted(lines: &[EventLine]) -> Vec<String> {
    let mut out = Vec::new();
    for ev in WHY_EVENTS {
        let details: Vec<&str> = lines
            .iter()
            .filter(|l| l.event == ev)
            .filter_map(|l| l.detail.as_deref())
            .collect();
        let shown: Vec<&str> = details.iter().take(QUOTED_PER_EVENT).copied().collect();
        if shown.is_empty() {
            continue;
        }
        let more = details.len() - shown.len();
        let tail = if more > 0 {
            format!(" (and {more} more)")
        } else {
            String::new()
        };
        out.push(format!("{}: {}{tail}", ev.as_str(), shown.join(" | ")));
    }
    out
}

/// The PodDisruptionBudgets recorded as selecting the target, by name, with what each allowed
/// at the start: the usual reason a drain or eviction removes nothing.
fn budgets(settings: Option<&TerminationSettings>) -> Option<String> {
    let pdbs = settings?.pdbs.as_ref().filter(|p| !p.is_empty())?;
    let named: Vec<String> = pdbs
        .iter()
        .map(|p| match p.disruptions_allowed {
            Some(d) => format!("{} (disruptionsAllowed {d})", p.name),
            None => p.name.clone(),
        })
        .collect();
    Some(format!(
        "PodDisruptionBudget{} selecting the target: {}",
        if named.len() > 1 { "s" } else { "" },
        named.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assemble::build_report;
    use crate::assemble::tests::drain_trial;
    use crate::report::TrialStatus;

    fn k8s(event: EventName, pod: &str, at_ms: i64) -> EventLine {
        let mut l = EventLine::new(Source::K8s, event, at_ms * 1_000_000);
        l.instance = Some(pod.into());
        l
    }

    fn orchestrator(event: EventName, at_ms: i64, detail: &str) -> EventLine {
        let mut l = EventLine::new(Source::Orchestrator, event, at_ms * 1_000_000);
        l.detail = Some(detail.into());
        l
    }

    const T0: i64 = 1_000 * 1_000_000;

    #[test]
    fn a_pod_deleted_after_the_trigger_that_exits_is_a_termination() {
        let lines = [
            k8s(EventName::PodDeletionTimestampSet, "web-1", 1_200),
            k8s(EventName::ContainerTerminated, "web-1", 3_000),
        ];
        assert!(terminated(&lines, T0));
        assert_eq!(
            not_terminated(&lines, T0, Trigger::Delete, true, None),
            None
        );
    }

    #[test]
    fn a_deletion_nothing_acted_on_is_asked_for_not_done() {
        // The node's kubelet down: the deletion is recorded, nothing exits.
        let mut lines = vec![k8s(EventName::PodDeletionTimestampSet, "web-1", 1_200)];
        assert!(!terminated(&lines, T0));
        let why = not_terminated(&lines, T0, Trigger::Delete, true, None).unwrap();
        assert!(
            why.contains("1 pod deletion(s) requested, but no container"),
            "{why}"
        );
        // The probe's pod under test names no instance on its lines.
        lines[0].instance = None;
        let mut exit = k8s(EventName::ContainerTerminated, "web-1", 3_000);
        exit.instance = None;
        lines.push(exit);
        assert!(terminated(&lines, T0));
    }

    #[test]
    fn a_context_pod_leaving_is_no_termination_of_the_trials() {
        // Deleted before the trigger (an earlier rollout) and exiting after it: context.
        let lines = [
            k8s(EventName::PodDeletionTimestampSet, "web-old", 500),
            k8s(EventName::ContainerTerminated, "web-old", 1_500),
        ];
        assert!(!terminated(&lines, T0));
        let why = not_terminated(&lines, T0, Trigger::RolloutRestart, true, None).unwrap();
        assert!(
            why.starts_with("the rollout-restart trigger terminated no pod"),
            "{why}"
        );
    }

    #[test]
    fn an_exit_after_the_trigger_without_a_seen_deletion_counts() {
        let lines = [k8s(EventName::ContainerTerminated, "web-1", 1_100)];
        assert!(terminated(&lines, T0));
    }

    #[test]
    fn a_pod_that_left_the_api_after_the_trigger_was_terminated() {
        // Its container's status fell into a watch gap; the object's removal says it ended.
        let gone = k8s(EventName::PodObjectDeleted, "web-1", 1_300);
        assert!(terminated(std::slice::from_ref(&gone), T0));
        // A context pod's removal is not the trial's.
        let context = [k8s(EventName::PodDeletionTimestampSet, "web-1", 500), gone];
        assert!(!terminated(&context, T0));
    }

    #[test]
    fn a_readiness_flap_alone_is_no_termination() {
        let lines = [k8s(EventName::EndpointsliceReadyFalse, "web-1", 1_100)];
        assert!(!terminated(&lines, T0));
    }

    #[test]
    fn the_probes_sigterm_and_the_local_exit_are_terminations() {
        let sig = EventLine::new(Source::Probe, EventName::SigtermReceived, 1_100 * 1_000_000);
        assert!(terminated(&[sig], T0));
        let exit = orchestrator(EventName::ContainerTerminated, 1_100, "exit 0");
        assert!(terminated(&[exit], T0));
        // A context pod's exit names it: never the trial's.
        let early = orchestrator(EventName::ContainerTerminated, 900, "exit 0");
        assert!(!terminated(&[early], T0));
    }

    #[test]
    fn a_drain_given_up_names_the_refusals_and_the_budget() {
        let lines = [
            orchestrator(EventName::NodeCordoned, 1_000, "node2"),
            orchestrator(
                EventName::EvictionGaveUp,
                9_000,
                "web-1: still refused after 2 attempt(s)",
            ),
        ];
        let settings = TerminationSettings {
            source: crate::settings::SettingsSource::Workload,
            workload: "deployment/web".into(),
            termination_grace_period_seconds: Some(30),
            containers: None,
            rollout: None,
            pdbs: Some(vec![crate::settings::PdbSettings {
                name: "web-pdb".into(),
                min_available: None,
                max_unavailable: None,
                disruptions_allowed: Some(0),
                current_healthy: None,
                desired_healthy: None,
                expected_pods: None,
            }]),
            unread: Vec::new(),
        };
        let why = not_terminated(&lines, T0, Trigger::DrainNode, true, Some(&settings)).unwrap();
        assert!(
            why.contains("the drain-node trigger terminated no pod"),
            "{why}"
        );
        assert!(
            why.contains("eviction_gave_up: web-1: still refused after 2 attempt(s)"),
            "{why}"
        );
        assert!(
            why.contains(
                "PodDisruptionBudget selecting the target: web-pdb (disruptionsAllowed 0)"
            ),
            "{why}"
        );
    }

    #[test]
    fn many_repeated_reasons_are_quoted_three_times_and_counted() {
        let lines: Vec<EventLine> = (0..5)
            .map(|i| orchestrator(EventName::EvictionGaveUp, 2_000 + i, &format!("web-{i}")))
            .collect();
        assert_eq!(lines.len(), 5);
        let why = not_terminated(&lines, T0, Trigger::DrainNode, true, None).unwrap();
        assert!(why.contains("web-0 | web-1 | web-2 (and 2 more)"), "{why}");
    }

    #[test]
    fn a_manual_run_is_never_not_terminated() {
        assert_eq!(not_terminated(&[], T0, Trigger::Manual, false, None), None);
        let why = not_terminated(&[], T0, Trigger::Delete, false, None).unwrap();
        assert!(why.starts_with("no trigger was issued"), "{why}");
    }

    #[test]
    fn a_trial_that_terminated_nothing_is_not_terminated_and_judges_nothing() {
        // The drain trial without its SIGTERM and its exit: the trigger was issued, nothing left.
        let lines: Vec<EventLine> = drain_trial()
            .into_iter()
            .filter(|l| {
                l.event != EventName::SigtermReceived && l.event != EventName::ContainerTerminated
            })
            .collect();
        let r = build_report(&lines).unwrap();
        assert_eq!(r.trial.status, TrialStatus::NotTerminated);
        let why = r.trial.status_detail.as_deref().unwrap();
        assert!(why.contains("terminated no pod of the target"), "{why}");
        // Its clean numbers are no pass: every threshold is not measured, with the reason.
        let t = crate::policy::threshold::parse("severed <= 0").unwrap();
        assert!(!crate::verdict::trial_held(&[t], "trial-001", Some(&r)));
        // The finding says so and what to change; nothing-wrong is not said.
        let ids: Vec<_> = r.findings.as_ref().unwrap().iter().map(|f| f.id).collect();
        use crate::finding::FindingId;
        assert!(ids.contains(&FindingId::NotTerminated), "{ids:?}");
        assert!(!ids.contains(&FindingId::NothingWrong), "{ids:?}");
        // The same trial with its SIGTERM is completed, as before.
        assert_eq!(
            build_report(&drain_trial()).unwrap().trial.status,
            TrialStatus::Completed
        );
    }
}
