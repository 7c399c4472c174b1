//! Only the trial's own terminations are judged: lanes split at the trigger, and an endpoint
//! first seen not ready is never taken to have stayed ready (pure, from the event fixture of a
//! rollout that started while an earlier rollout's pod was still terminating).

use super::tests::{client, config};
use super::*;
use crate::event::{EventLine, EventName, Source};
use crate::shard::Losses;

fn names(lanes: &[PodLane]) -> Vec<&str> {
    lanes.iter().map(|l| l.pod.as_str()).collect()
}

#[test]
fn lanes_split_at_the_trigger_by_when_each_deletion_was_seen() {
    let all = lanes(&rollout_with_leftover_lines());
    // The replacements turned ready but were never terminated: no lanes.
    assert_eq!(names(&all), ["web-a", "web-b", "web-old"]);
    let (own, context) = split(all, 0);
    assert_eq!(names(&own), ["web-a", "web-b"]);
    assert_eq!(names(&context), ["web-old"]);
    assert_eq!(context[0].deletion_ns, Some(-3000 * MS));
    // The split is by time alone: the same lines with the trigger before the old deletion
    // make every pod the trial's own.
    let (own, context) = split(lanes(&rollout_with_leftover_lines()), -4000 * MS);
    assert_eq!((own.len(), context.len()), (3, 0));
    // A deletion at the trigger itself is the trial's.
    let at_t0 = PodLane {
        pod: "p".into(),
        deletion_ns: Some(0),
        ..PodLane::default()
    };
    assert!(!at_t0.before_trigger(0));
}

#[test]
fn an_endpoint_first_seen_not_ready_was_never_seen_ready() {
    let all = lanes(&rollout_with_leftover_lines());
    assert_eq!(all.len(), 3);
    let seen: Vec<(&str, Option<bool>)> = all
        .iter()
        .map(|l| (l.pod.as_str(), l.endpoint_seen_ready))
        .collect();
    assert_eq!(
        seen,
        [
            ("web-a", Some(true)),
            ("web-b", Some(true)),
            ("web-old", Some(false))
        ]
    );
    let old = &all[2];
    // No ready:false transition was ever recorded for it (it was listed not ready) ...
    assert_eq!(old.not_ready_ns, None);
    // ... yet it is not "terminating-ready" once its deletion is seen: it was never ready.
    assert_eq!(old.phase_at(0), Phase::TerminatingNotReady);
    // A pod seen ready keeps the ready phase until its ready:false.
    assert_eq!(all[0].phase_at(110 * MS), Phase::TerminatingReady);
    // Added not ready, then ready: seen ready.
    let mut lines = rollout_with_leftover_lines();
    let mut ready = EventLine::new(Source::K8s, EventName::EndpointsliceReadyTrue, -2000 * MS);
    ready.instance = Some("web-old".into());
    lines.push(ready);
    let again = lanes(&lines);
    assert_eq!(again[2].endpoint_seen_ready, Some(true));
    // A recording whose added endpoints carry no `ready` cannot say.
    let old_format: Vec<EventLine> = rollout_with_leftover_lines()
        .into_iter()
        .map(|mut l| {
            l.ready = None;
            l
        })
        .filter(|l| l.event != EventName::EndpointsliceReadyTrue)
        .collect();
    let unknown = lanes(&old_format);
    assert_eq!(unknown.len(), 3);
    assert!(unknown.iter().all(|l| l.endpoint_seen_ready.is_none()));
}

#[test]
fn the_section_holds_the_context_pods_apart_and_names_them() {
    let mut lines = rollout_with_leftover_lines();
    lines.push(EventLine::new(
        Source::Client,
        EventName::AttachWindowStarted,
        -1000 * MS,
    ));
    // A request answered by the old pod fails at 300 ms: it is counted and tied to that pod.
    let mut failed = client(EventName::AttachRequest, 300, "http-0001", 1);
    failed.result = Some("reset".into());
    failed.instance = Some("web-old".into());
    lines.push(failed);
    let a = attach_section(
        &lines,
        &Losses::unsharded(&lines),
        &config(AttachProtocol::Http, 0),
        0,
    );
    let own: Vec<&str> = a.pods.iter().map(|p| p.pod.as_str()).collect();
    let context: Vec<&str> = a.context_pods.iter().map(|p| p.pod.as_str()).collect();
    assert_eq!((own, context), (vec!["web-a", "web-b"], vec!["web-old"]));
    let old = &a.context_pods[0];
    assert_eq!(
        (
            old.deletion_requested_t_ms,
            old.exited_t_ms,
            old.endpoint_seen_ready,
            old.failures
        ),
        (Some(-3000), Some(400), Some(false), 1)
    );
    assert_eq!(a.failures.len(), 1);
    assert_eq!(a.failures[0].pod.as_deref(), Some("web-old"));
    assert_eq!(a.failures[0].phase, Phase::TerminatingNotReady);
    assert!(a.pods.iter().all(|p| p.failures == 0));
    let note: Vec<&String> = a
        .notes
        .iter()
        .filter(|n| n.contains("already terminating before the trigger"))
        .collect();
    assert_eq!(note.len(), 1, "{:?}", a.notes);
    assert!(
        note[0].contains("web-old (deletion requested at -3000 ms)"),
        "{}",
        note[0]
    );
    // Without a leftover pod there is no such note and no context.
    let clean: Vec<EventLine> = rollout_with_leftover_lines()
        .into_iter()
        .filter(|l| l.instance.as_deref() != Some("web-old"))
        .collect();
    let a = attach_section(
        &clean,
        &Losses::unsharded(&clean),
        &config(AttachProtocol::Http, 0),
        0,
    );
    assert!(a.context_pods.is_empty());
    assert_eq!(a.pods.len(), 2);
    assert!(
        !a.notes
            .iter()
            .any(|n| n.contains("already terminating before the trigger"))
    );
}

const MS: i64 = 1_000_000;

/// A k8s line about pod `pod` at `ms` after the trigger (t0 = 0).
fn k8s(event: EventName, ms: i64, pod: &str, ready: Option<bool>) -> EventLine {
    let mut l = EventLine::new(Source::K8s, event, ms * MS);
    l.instance = Some(pod.into());
    l.ready = ready;
    l
}

/// The watch lines of a two-pod rollout-restart (trigger at t0 = 0) that started while a pod
/// of an earlier rollout was still terminating, as an attach trial records them:
///
/// - `web-old`: listed at -3000 ms already terminating (its deletion seen then) and its
///   endpoint first seen not ready; it exits at 400 ms and leaves at 420 ms without ever
///   having been seen ready. Context, never judged.
/// - `web-a`, `web-b`: the trial's own, both listed ready; `web-a` terminates from 100 ms
///   (ready:false at 130 ms, exit 1100 ms, removed 1110 ms), `web-b` from 1500 ms (ready:false
///   at 1550 ms, exit 2600 ms, removed 2610 ms).
/// - `web-c`, `web-d`: the replacements, added not ready and ready at 900 ms and 2300 ms.
pub(crate) fn rollout_with_leftover_lines() -> Vec<EventLine> {
    use EventName::*;
    let mut trigger = EventLine::new(Source::Orchestrator, TriggerIssued, 0);
    trigger.detail = Some("rollout-restart".into());
    vec![
        k8s(PodDeletionTimestampSet, -3000, "web-old", None),
        k8s(EndpointsliceEndpointAdded, -2990, "web-old", Some(false)),
        k8s(EndpointsliceEndpointAdded, -2990, "web-a", Some(true)),
        k8s(EndpointsliceEndpointAdded, -2990, "web-b", Some(true)),
        trigger,
        k8s(PodDeletionTimestampSet, 100, "web-a", None),
        k8s(EndpointsliceReadyFalse, 130, "web-a", None),
        k8s(ContainerTerminated, 400, "web-old", None),
        k8s(EndpointsliceEndpointRemoved, 420, "web-old", None),
        k8s(EndpointsliceEndpointAdded, 600, "web-c", Some(false)),
        k8s(EndpointsliceReadyTrue, 900, "web-c", None),
        k8s(ContainerTerminated, 1100, "web-a", None),
        k8s(EndpointsliceEndpointRemoved, 1110, "web-a", None),
        k8s(PodDeletionTimestampSet, 1500, "web-b", None),
        k8s(EndpointsliceReadyFalse, 1550, "web-b", None),
        k8s(EndpointsliceEndpointAdded, 2000, "web-d", Some(false)),
        k8s(EndpointsliceReadyTrue, 2300, "web-d", None),
        k8s(ContainerTerminated, 2600, "web-b", None),
        k8s(EndpointsliceEndpointRemoved, 2610, "web-b", None),
    ]
}
