//! Real reports recorded on the local platform (tests/fixtures/ci/run-local), for the core's
//! unit tests: a draining probe, one that exits at once, and one that ignores SIGTERM; a real
//! two-pod attach rollout from the local cluster (results/2026-11-30-attach); and the event
//! lines of a rollout over a pod still terminating from an earlier one.

use super::report::Report;

/// The report of the named fixture trial: `drain`, `exit-now`, `ignore`, or `rollout` (an
/// attach rollout-restart of a two-pod Deployment, both pods replaced).
pub(crate) fn report(name: &str) -> Report {
    let text = match name {
        "drain" => include_str!("../../tests/fixtures/ci/run-local/drain/report.json"),
        "exit-now" => include_str!("../../tests/fixtures/ci/run-local/exit-now/report.json"),
        "ignore" => include_str!("../../tests/fixtures/ci/run-local/ignore/report.json"),
        "rollout" => include_str!(
            "../../results/2026-11-30-attach/bad-rollout-policy/out/bad-rollout/report.json"
        ),
        other => panic!("no fixture {other}"),
    };
    serde_json::from_str(text).expect("fixture report parses")
}

use super::event::{EventLine, EventName, Source};

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
