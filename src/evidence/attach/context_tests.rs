//! Only the trial's own terminations are judged: lanes split at the trigger, and an endpoint
//! first seen not ready is never taken to have stayed ready (pure, from the event fixture of a
//! rollout that started while an earlier rollout's pod was still terminating).

use super::tests::{client, config};
use super::*;
use crate::evidence::event::{EventLine, EventName};
use crate::evidence::test_fixtures::rollout_with_leftover_lines;

const MS: i64 = 1_000_000;

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
    let mut ready = EventLine::new(
        crate::evidence::event::Source::K8s,
        EventName::EndpointsliceReadyTrue,
        -2000 * MS,
    );
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
        crate::evidence::event::Source::Client,
        EventName::AttachWindowStarted,
        -1000 * MS,
    ));
    // A request answered by the old pod fails at 300 ms: it is counted and tied to that pod.
    let mut failed = client(EventName::AttachRequest, 300, "http-0001", 1);
    failed.result = Some("reset".into());
    failed.instance = Some("web-old".into());
    lines.push(failed);
    let a = attach_section(&lines, &config(AttachProtocol::Http, 0), 0);
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
    let a = attach_section(&clean, &config(AttachProtocol::Http, 0), 0);
    assert!(a.context_pods.is_empty());
    assert_eq!(a.pods.len(), 2);
    assert!(
        !a.notes
            .iter()
            .any(|n| n.contains("already terminating before the trigger"))
    );
}
