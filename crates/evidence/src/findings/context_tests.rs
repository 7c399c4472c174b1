//! Findings judge only the trial's own terminations: a pod already terminating before the
//! trigger, or an endpoint never seen ready, gives no `readiness-not-failed` and no
//! `endpoint-lag` (pure, from the event fixture of a rollout over a leftover pod).

use super::tests::{attach, ids};
use super::*;
use crate::attach::attach_section;
use crate::attach::tests::{client, config};
use crate::event::EventLine;
use crate::plan::attach::config::AttachProtocol;
use crate::shard::Losses;
use crate::test_fixtures::rollout_with_leftover_lines;

/// A report whose attach section is built from `lines` (trigger at 0).
fn report(lines: &[EventLine]) -> Report {
    let mut r = attach(Vec::new());
    r.trial.attach = Some(attach_section(
        lines,
        &Losses::unsharded(lines),
        &config(AttachProtocol::Http, 0),
        0,
    ));
    r
}

fn failing_on(pod: &str, at_ms: i64) -> EventLine {
    let mut l = client(EventName::AttachRequest, at_ms, "http-0001", 1);
    l.result = Some("reset".into());
    l.instance = Some(pod.into());
    l
}

#[test]
fn a_pod_terminating_before_the_trigger_is_not_judged() {
    let mut lines = rollout_with_leftover_lines();
    lines.push(failing_on("web-old", 300));
    let r = report(&lines);
    let a = r.trial.attach.as_ref().unwrap();
    assert_eq!(a.context_pods.len(), 1);
    // The old pod exited without a recorded ready:false: before, a false readiness warning;
    // and a failure on it: before, an endpoint-lag on a termination the trial did not cause.
    let found = ids(&r);
    assert!(!found.contains(&FindingId::ReadinessNotFailed), "{found:?}");
    assert!(!found.contains(&FindingId::EndpointLag), "{found:?}");
    // The same failure on the trial's own pod is judged.
    let mut lines = rollout_with_leftover_lines();
    lines.push(failing_on("web-a", 300));
    assert!(ids(&report(&lines)).contains(&FindingId::EndpointLag));
}

#[test]
fn an_endpoint_never_seen_ready_did_not_stay_ready() {
    // The trial's own pod web-a, its endpoint listed not ready and never ready, exits
    // without a ready:false transition.
    let first_seen_not_ready: Vec<EventLine> = rollout_with_leftover_lines()
        .into_iter()
        .filter(|l| l.instance.as_deref() != Some("web-old"))
        .map(|mut l| {
            if l.instance.as_deref() == Some("web-a") {
                if l.event == EventName::EndpointsliceEndpointAdded {
                    l.ready = Some(false);
                }
                if l.event == EventName::EndpointsliceReadyFalse {
                    l.event = EventName::PodReadyFalse;
                }
            }
            l
        })
        .collect();
    let r = report(&first_seen_not_ready);
    let a = r.trial.attach.as_ref().unwrap();
    assert_eq!(a.pods.len(), 2);
    assert_eq!(
        (a.pods[0].pod.as_str(), a.pods[0].endpoint_seen_ready),
        ("web-a", Some(false))
    );
    assert!(!ids(&r).contains(&FindingId::ReadinessNotFailed));
    // Listed ready, the same exit without ready:false is the warning.
    let seen_ready: Vec<EventLine> = first_seen_not_ready
        .into_iter()
        .map(|mut l| {
            if l.instance.as_deref() == Some("web-a")
                && l.event == EventName::EndpointsliceEndpointAdded
            {
                l.ready = Some(true);
            }
            l
        })
        .collect();
    let r = report(&seen_ready);
    assert!(ids(&r).contains(&FindingId::ReadinessNotFailed));
    assert_eq!(
        r.trial.attach.as_ref().unwrap().pods[0].endpoint_seen_ready,
        Some(true)
    );
}
