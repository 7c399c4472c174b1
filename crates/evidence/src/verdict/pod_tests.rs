//! The attach thresholds that read pods and nodes: each pod the trial terminated judged on its
//! own lane, node-propagation-lag between its bounds, and a lost client shard's slice.

use super::CheckState;
use super::attach_tests::{attach_report, line};
use super::measure::check;
use crate::attach::section::PodLaneReport;
use crate::attach::{AttachProtocol, attach_section};
use crate::event::{EventLine, EventName, Source};
use crate::policy::threshold::parse;
use crate::report::{Report, TimelineEntry};
use crate::shard::Losses;
use crate::test_fixtures::report as fixture;

#[test]
fn node_propagation_lag_is_judged_as_the_bound_it_is() {
    let t = parse("node-propagation-lag <= 500ms").unwrap();
    let k8s = |event: EventName, at_ms: i64| {
        let mut l = EventLine::new(Source::K8s, event, at_ms * 1_000_000);
        l.instance = Some("web-a".into());
        l
    };
    let served = |at_ms: i64, pod: &str| {
        let mut l = line(EventName::AttachDial, at_ms, "dial-000001", "served");
        l.instance = Some(pod.into());
        l
    };
    let signals = [
        k8s(EventName::PodDeletionTimestampSet, 0),
        k8s(EventName::EndpointsliceReadyFalse, 200),
    ];
    let report = |dials: &[EventLine]| {
        let lines: Vec<EventLine> = signals.iter().chain(dials).cloned().collect();
        attach_report(AttachProtocol::Http, &lines)
    };
    // The node sent web-a a new connection 800 ms after its endpoint turned not ready: at
    // least 800 ms, a miss of 500 ms whatever came after.
    let r = report(&[served(100, "web-a"), served(1000, "web-a")]);
    let c = check(&t, "trial-001", Some(&r));
    assert_eq!(c.state, CheckState::Missed, "{c:?}");
    assert_eq!(c.value, Some(800));
    assert!(c.message.contains("at least 800 ms"), "{}", c.message);
    // 1 s is not shown by it: nothing after 1000 ms bounds the lag from above. The old
    // reading held it on the lower bound; it is not measured.
    let c = check(
        &parse("node-propagation-lag <= 1s").unwrap(),
        "trial-001",
        Some(&r),
    );
    assert_eq!(c.state, CheckState::NotMeasured, "{c:?}");
    assert!(c.message.contains("has no upper bound"), "{}", c.message);
    // One dial web-b answered at 1100 ms says little: a node choosing at random between two
    // pods sends one of two elsewhere. Five in a row (0.5^5 ≤ 5 %) bound the lag: at most 900 ms
    // after not-ready, and that holds 1 s.
    let run_b = |from: i64, n: i64| -> Vec<EventLine> {
        (0..n).map(|i| served(from + 50 * i, "web-b")).collect()
    };
    let mut dials = vec![served(100, "web-a"), served(1000, "web-a")];
    dials.extend(run_b(1100, 4));
    let r = report(&dials);
    let c = check(
        &parse("node-propagation-lag <= 1s").unwrap(),
        "trial-001",
        Some(&r),
    );
    assert_eq!(
        c.state,
        CheckState::NotMeasured,
        "four in a row are not enough: {c:?}"
    );
    dials.extend(run_b(1300, 1));
    let r = report(&dials);
    let c = check(
        &parse("node-propagation-lag <= 1s").unwrap(),
        "trial-001",
        Some(&r),
    );
    assert_eq!(c.state, CheckState::Held, "{c:?}");
    assert_eq!(c.value, Some(900));
    assert!(c.message.contains("at most 900 ms"), "{}", c.message);
    // A dial refused inside web-a's termination (it exits at 2,000 ms), attributed to it,
    // shows the node still routing there: it raises the lower bound though web-a answered
    // nothing after 100 ms.
    let mut dials = vec![
        k8s(EventName::ContainerTerminated, 2_000),
        served(100, "web-a"),
        line(EventName::AttachDial, 900, "dial-000002", "refused"),
    ];
    dials.extend(run_b(1000, 5));
    let r = report(&dials);
    let v = &r
        .trial
        .attach
        .as_ref()
        .unwrap()
        .data_plane
        .as_ref()
        .unwrap()[0];
    assert_eq!(v.pods[0].lag_after_not_ready_ms, Some(-100), "served only");
    assert_eq!(
        (v.pods[0].lag_at_least_ms, v.pods[0].lag_at_most_ms),
        (Some(700), Some(800))
    );
    let c = check(&t, "trial-001", Some(&r));
    assert_eq!((c.state, c.value), (CheckState::Missed, Some(700)), "{c:?}");

    // Without an answered dial no node's routing was seen: not measured, never held.
    let r = report(&[]);
    assert!(r.trial.attach.as_ref().unwrap().data_plane.is_none());
    let c = check(&t, "trial-001", Some(&r));
    assert_eq!(c.state, CheckState::NotMeasured, "{c:?}");
}

/// A lane of a pod the trial terminated (deleted at t=0).
fn lane(pod: &str, not_ready: i64, removed: i64, exited: Option<i64>) -> PodLaneReport {
    PodLaneReport {
        pod: pod.into(),
        deletion_requested_t_ms: Some(0),
        endpoint_not_ready_t_ms: Some(not_ready),
        endpoint_removed_t_ms: Some(removed),
        exited_t_ms: exited,
        exit_code: exited.map(|_| 0),
        failures: 0,
        endpoint_seen_ready: Some(true),
        left_ready_before_exit: None,
    }
}

/// Two pods of a rollout: web-a leaves the ready set at 100 ms and exits at 5,000; web-b exits
/// at 300 before its endpoint turns not ready at 400. The first event of any pod (web-a's
/// not-ready, web-b's exit) says "not ready before exit, exit at 300 ms"; each pod on its own
/// says web-b exited first and web-a exited at 5,000. A context pod (deleted before t=0) exits
/// last, at 9,000, and counts in neither.
fn rollout_of_two() -> Report {
    let mut r = attach_report(AttachProtocol::Http, &[]);
    let row = |t_ms: i64, event: EventName| TimelineEntry {
        t_ms,
        source: Source::K8s,
        event,
        flow_id: None,
        detail: None,
        approximate: false,
        pod: None,
        ready: None,
    };
    r.trial.timeline = vec![
        row(100, EventName::EndpointsliceReadyFalse),
        row(300, EventName::ContainerTerminated),
        row(400, EventName::EndpointsliceReadyFalse),
        row(600, EventName::EndpointsliceEndpointRemoved),
        row(5_000, EventName::ContainerTerminated),
        row(9_000, EventName::ContainerTerminated),
    ];
    r.trial.summary.trigger_to_container_terminated_ms = Some(300);
    r.trial.summary.trigger_to_endpoint_removed_ms = Some(600);
    let a = r.trial.attach.as_mut().unwrap();
    a.pods = vec![
        lane("web-a", 100, 600, Some(5_000)),
        lane("web-b", 400, 700, Some(300)),
    ];
    let mut context = lane("web-old", 50, 60, Some(9_000));
    context.deletion_requested_t_ms = Some(-2_000);
    a.context_pods = vec![context];
    r
}

#[test]
fn timeline_thresholds_take_the_worst_pod_the_trial_terminated() {
    let r = rollout_of_two();
    let c = check(
        &parse("endpoint-not-ready-before-exit").unwrap(),
        "trial-001",
        Some(&r),
    );
    assert_eq!(c.state, CheckState::Missed, "{c:?}");
    assert!(
        c.message
            .contains("1 of 2 pods exited before their endpoint left the ready set: web-b (400 ms not ready, 300 ms exit)"),
        "{}",
        c.message
    );
    let c = check(
        &parse("trigger-to-container-exit <= 1s").unwrap(),
        "trial-001",
        Some(&r),
    );
    assert_eq!(c.state, CheckState::Missed, "{c:?}");
    assert_eq!(c.value, Some(5_000));
    assert!(
        c.message.contains("the worst of 2 pods: web-a"),
        "{}",
        c.message
    );
    // The context pod's 9,000 ms exit is in no threshold.
    let c = check(
        &parse("trigger-to-container-exit <= 6s").unwrap(),
        "trial-001",
        Some(&r),
    );
    assert_eq!(c.state, CheckState::Held, "{c:?}");
    let c = check(
        &parse("trigger-to-endpoint-removed <= 650ms").unwrap(),
        "trial-001",
        Some(&r),
    );
    assert_eq!((c.state, c.value), (CheckState::Missed, Some(700)), "{c:?}");
}

#[test]
fn a_terminated_pod_whose_exit_was_not_seen_leaves_the_worst_unknown() {
    let mut r = rollout_of_two();
    let a = r.trial.attach.as_mut().unwrap();
    a.pods = vec![
        lane("web-a", 100, 600, Some(500)),
        lane("web-b", 400, 700, None),
    ];
    for t in [
        "trigger-to-container-exit <= 1s",
        "endpoint-not-ready-before-exit",
    ] {
        let c = check(&parse(t).unwrap(), "trial-001", Some(&r));
        assert_eq!(c.state, CheckState::NotMeasured, "{t}: {c:?}");
        assert!(c.message.contains("web-b"), "{t}: {}", c.message);
    }
    // Every pod seen and every one in order: held, the closest named.
    let a = r.trial.attach.as_mut().unwrap();
    a.pods[1].exited_t_ms = Some(450);
    let c = check(
        &parse("endpoint-not-ready-before-exit").unwrap(),
        "trial-001",
        Some(&r),
    );
    assert_eq!(c.state, CheckState::Held, "{c:?}");
    assert!(
        c.message.contains("closest: web-b, 50 ms before"),
        "{}",
        c.message
    );
    // In the same whole millisecond the full-precision order decides, when recorded.
    let a = r.trial.attach.as_mut().unwrap();
    a.pods[1].exited_t_ms = Some(400);
    let t = parse("endpoint-not-ready-before-exit").unwrap();
    assert_eq!(check(&t, "trial-001", Some(&r)).state, CheckState::Missed);
    r.trial.attach.as_mut().unwrap().pods[1].left_ready_before_exit = Some(true);
    assert_eq!(check(&t, "trial-001", Some(&r)).state, CheckState::Held);
}

#[test]
fn a_lost_shard_leaves_nothing_failed_unshown_but_a_miss_stands() {
    let lost = |ok: bool| {
        let mut lines = vec![
            line(EventName::AttachRequest, 1, "http-0001", "ok"),
            line(
                EventName::AttachRequest,
                2,
                "http-0001",
                if ok { "ok" } else { "refused" },
            ),
            line(EventName::AttachRequest, 1, "http-0002", "ok"),
        ];
        let mut l = EventLine::new(Source::Orchestrator, EventName::ClientLost, 3_000_000)
            .detail("client pod ns/drainwatch-client-2 was deleted");
        l.shard = Some(2);
        lines.push(l);
        let mut r = fixture("drain");
        let cfg = crate::attach::tests::config(AttachProtocol::Http, 20);
        r.trial.attach = Some(attach_section(
            &lines,
            &Losses::of(&lines, 2, 0, 2),
            &cfg,
            0,
        ));
        r
    };
    let t = parse("no-request-failed").unwrap();
    let r = lost(true);
    let a = r.trial.attach.as_ref().unwrap();
    let slices = a.lost_clients.as_ref().unwrap();
    assert_eq!(slices.len(), 1);
    assert_eq!(slices[0].slice, "http-0002..http-0002");
    let c = check(&t, "trial-001", Some(&r));
    assert_eq!(c.state, CheckState::NotMeasured, "{c:?}");
    assert!(
        c.message
            .contains("partly measured: 1 client shard(s) lost")
            && c.message
                .contains("http-0002 (client pod ns/drainwatch-client-2 was deleted)")
            && c.message
                .contains("the rest measured 0 of 3 requests failed"),
        "{}",
        c.message
    );
    // A failure in the measured part is a miss, whatever the lost part did.
    let c = check(&t, "trial-002", Some(&lost(false)));
    assert_eq!(c.state, CheckState::Missed, "{c:?}");
}
