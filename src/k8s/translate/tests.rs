//! Translation tests on inline YAML, the shapes the API server returns.

use super::*;
use crate::evidence::event::EventName;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::discovery::v1::EndpointSlice;

fn pod(yaml: &str) -> PodFacts {
    let p: Pod = serde_norway::from_str(yaml).unwrap();
    PodFacts::of(&p, "probe")
}

const RUNNING: &str = r#"
metadata: {name: drainwatch-probe-abc, namespace: ns}
spec: {nodeName: node1, containers: [{name: probe}]}
status:
  phase: Running
  hostIP: 10.10.0.1
  conditions:
  - {type: Ready, status: "True", lastTransitionTime: "2026-11-30T15:51:15Z"}
  containerStatuses:
  - name: probe
    ready: true
    restartCount: 0
    image: img
    imageID: img@sha256:abc
    state: {running: {startedAt: "2026-11-30T15:51:14Z"}}
"#;

const TERMINATING: &str = r#"
metadata:
  name: drainwatch-probe-abc
  namespace: ns
  deletionTimestamp: "2026-11-30T15:51:50Z"
  deletionGracePeriodSeconds: 30
spec: {nodeName: node1, containers: [{name: probe}]}
status:
  phase: Running
  conditions:
  - {type: Ready, status: "False", lastTransitionTime: "2026-11-30T15:51:21Z"}
  containerStatuses:
  - name: probe
    ready: false
    restartCount: 0
    image: img
    imageID: img@sha256:abc
    state: {running: {startedAt: "2026-11-30T15:51:14Z"}}
"#;

const KILLED: &str = r#"
metadata:
  name: drainwatch-probe-abc
  namespace: ns
  deletionTimestamp: "2026-11-30T15:51:50Z"
  deletionGracePeriodSeconds: 30
spec: {nodeName: node1, containers: [{name: probe}]}
status:
  phase: Failed
  conditions:
  - {type: Ready, status: "False", lastTransitionTime: "2026-11-30T15:51:21Z"}
  containerStatuses:
  - name: probe
    ready: false
    restartCount: 0
    image: img
    imageID: img@sha256:abc
    state:
      terminated: {exitCode: 137, reason: Error, finishedAt: "2026-11-30T15:51:51Z"}
"#;

fn events(c: &[Change]) -> Vec<EventName> {
    c.iter().map(|c| c.event.clone()).collect()
}

#[test]
fn a_pod_under_test_goes_from_running_to_sigkill() {
    let (a, b, c) = (pod(RUNNING), pod(TERMINATING), pod(KILLED));
    assert_eq!(a.host_ip.as_deref(), Some("10.10.0.1"));
    assert!(a.is_ready());
    let first = pod_changes(None, &a, Role::UnderTest);
    assert_eq!(events(&first), [EventName::PodObserved]);
    assert!(first[0].detail.ends_with("node=node1 (pod under test)"));

    let del = pod_changes(Some(&a), &b, Role::UnderTest);
    assert_eq!(
        events(&del),
        [EventName::PodDeletionTimestampSet, EventName::PodReadyFalse]
    );
    assert!(del[0].detail.contains("deletionGracePeriodSeconds=30"));
    assert_eq!(del[1].server_time.as_deref(), Some("2026-11-30T15:51:21Z"));

    let end = pod_changes(Some(&b), &c, Role::UnderTest);
    assert_eq!(events(&end), [EventName::ContainerTerminated]);
    assert_eq!(end[0].exit_code, Some(137));
    assert_eq!(end[0].server_time.as_deref(), Some("2026-11-30T15:51:51Z"));
    let line = end[0].clone().into_line(42);
    assert_eq!(line.source, Some(Source::K8s));
    assert_eq!((line.at_ns, line.exit_code), (Some(42), Some(137)));
    assert_eq!(line.wall.as_deref(), Some("2026-11-30T15:51:51Z"));
    // Seeing the same state again changes nothing.
    assert!(pod_changes(Some(&c), &c, Role::UnderTest).is_empty());
    assert_eq!(
        events(&pod_deleted(&c, Role::UnderTest)),
        [EventName::PodObjectDeleted]
    );
}

#[test]
fn other_pods_only_say_when_they_are_ready() {
    let mut pending = pod(RUNNING);
    pending.ready = Some((false, None));
    assert_eq!(
        events(&pod_changes(None, &pending, Role::Other)),
        [EventName::PodObserved]
    );
    let ready = pod(RUNNING);
    assert_eq!(
        events(&pod_changes(Some(&pending), &ready, Role::Other)),
        [EventName::OtherPodReady]
    );
    assert!(pod_changes(Some(&ready), &pod(KILLED), Role::Other).is_empty());
    assert!(pod_deleted(&ready, Role::Other).is_empty());
}

#[test]
fn image_pull_errors_and_crash_loops_are_named() {
    let pulling = pod(r#"
metadata: {name: p}
status:
  phase: Pending
  containerStatuses:
  - name: probe
    ready: false
    restartCount: 0
    image: 127.0.0.1:1/none:0
    imageID: ""
    state: {waiting: {reason: ErrImagePull, message: "failed to pull image: connection refused"}}
"#);
    let c = pulling.container.as_ref().unwrap();
    assert_eq!(c.waiting.as_ref().unwrap().0, "ErrImagePull");
    assert_eq!(c.image_id, None);
    let ch = pod_changes(
        Some(&PodFacts {
            name: "p".into(),
            ..PodFacts::default()
        }),
        &pulling,
        Role::UnderTest,
    );
    assert_eq!(events(&ch), [EventName::ContainerWaiting]);
    assert!(ch[0].detail.contains("connection refused"));

    let looping = pod(r#"
metadata: {name: p}
status:
  phase: Running
  containerStatuses:
  - name: probe
    ready: false
    restartCount: 2
    image: img
    imageID: img@sha256:abc
    state: {waiting: {reason: CrashLoopBackOff, message: back-off}}
    lastState: {terminated: {exitCode: 2, reason: Error}}
"#);
    let ch = pod_changes(Some(&pulling), &looping, Role::Candidate);
    assert_eq!(
        events(&ch),
        [EventName::ContainerRestarted, EventName::ContainerWaiting]
    );
    assert!(ch[0].detail.contains("exitCode=2"));
}

fn slice(yaml: &str) -> SliceFacts {
    let s: EndpointSlice = serde_norway::from_str(yaml).unwrap();
    slice_facts(&s)
}

const SLICE_READY: &str = r#"
metadata: {name: drainwatch-probe-x1}
addressType: IPv4
endpoints:
- addresses: [10.244.0.5]
  conditions: {ready: true, serving: true, terminating: false}
  targetRef: {kind: Pod, name: drainwatch-probe-abc}
"#;

const SLICE_TERMINATING: &str = r#"
metadata: {name: drainwatch-probe-x1}
addressType: IPv4
endpoints:
- addresses: [10.244.0.5]
  conditions: {ready: false, serving: true, terminating: true}
  targetRef: {kind: Pod, name: drainwatch-probe-abc}
- addresses: [10.244.1.7]
  conditions: {ready: true}
  targetRef: {kind: Pod, name: drainwatch-probe-def}
"#;

const SLICE_NOT_SERVING: &str = r#"
metadata: {name: drainwatch-probe-x1}
addressType: IPv4
endpoints:
- addresses: [10.244.0.5]
  conditions: {ready: false, serving: false, terminating: true}
  targetRef: {kind: Pod, name: drainwatch-probe-abc}
- addresses: [10.244.1.7]
  conditions: {ready: true}
  targetRef: {kind: Pod, name: drainwatch-probe-def}
"#;

const SLICE_REMOVED: &str = r#"
metadata: {name: drainwatch-probe-x1}
addressType: IPv4
endpoints:
- addresses: [10.244.1.7]
  conditions: {ready: true}
  targetRef: {kind: Pod, name: drainwatch-probe-def}
"#;

#[test]
fn endpoint_transitions_are_scoped_to_the_pod_under_test() {
    let put = Some("drainwatch-probe-abc");
    let (a, b, c, d) = (
        slice(SLICE_READY),
        slice(SLICE_TERMINATING),
        slice(SLICE_NOT_SERVING),
        slice(SLICE_REMOVED),
    );
    let name = "drainwatch-probe-x1";
    let first = slice_changes(name, None, &a, put);
    assert_eq!(
        events(&first),
        [
            EventName::EndpointsliceObserved,
            EventName::EndpointsliceEndpointAdded
        ]
    );
    // An added endpoint's line names its address: an ingress's upstream maps to the pod by it.
    let added = first[1].clone().into_line(1);
    assert_eq!(
        (added.ready, added.address.as_deref()),
        (Some(true), Some("10.244.0.5"))
    );
    let term = slice_changes(name, Some(&a), &b, put);
    assert_eq!(
        events(&term),
        [
            EventName::EndpointsliceReadyFalse,
            EventName::EndpointsliceTerminatingTrue,
            EventName::OtherEndpointReady
        ]
    );
    let rf = term
        .iter()
        .find(|c| c.event == EventName::EndpointsliceReadyFalse)
        .unwrap();
    assert_eq!(
        rf.detail,
        "Pod/drainwatch-probe-abc in drainwatch-probe-x1 (terminating=true) serving=true"
    );
    assert_eq!(
        events(&slice_changes(name, Some(&b), &c, put)),
        [EventName::EndpointsliceServingFalse]
    );
    let removed = slice_changes(name, Some(&c), &d, put);
    assert_eq!(events(&removed), [EventName::EndpointsliceEndpointRemoved]);
    // Another pod under test is not followed; before one is chosen, every endpoint is.
    assert!(slice_changes(name, Some(&c), &d, Some("drainwatch-probe-zzz")).is_empty());
    assert_eq!(
        events(&slice_changes(name, Some(&c), &d, None)),
        [EventName::EndpointsliceEndpointRemoved]
    );
    assert_eq!(
        events(&slice_deleted(name, &c, put)),
        [EventName::EndpointsliceEndpointRemoved]
    );
    assert!(slice_deleted(name, &d, put).is_empty());
}

#[test]
fn nil_conditions_follow_the_api_rules() {
    let f = slice(
        r#"
metadata: {name: s}
addressType: IPv4
endpoints:
- addresses: [10.244.0.9, 10.244.0.8]
"#,
    );
    let e = f.get("addr/10.244.0.8").unwrap();
    assert_eq!((e.ready, e.serving, e.terminating), (true, true, false));
    assert_eq!(
        e.address.as_deref(),
        Some("10.244.0.9"),
        "the first as listed"
    );
}

#[test]
fn every_change_names_its_pod_and_the_deletion_request_time_is_derived() {
    let (a, b) = (pod(RUNNING), pod(TERMINATING));
    // deletionTimestamp 15:51:50 minus 30 s of grace: the request reached the API at 15:51:20.
    assert_eq!(
        b.deletion_requested.as_deref(),
        Some("2026-11-30T15:51:20Z")
    );
    let del = pod_changes(Some(&a), &b, Role::Candidate);
    assert_eq!(del[0].event, EventName::PodDeletionTimestampSet);
    assert_eq!(del[0].server_time.as_deref(), Some("2026-11-30T15:51:20Z"));
    assert!(
        del[0]
            .detail
            .contains("deletion requested at 2026-11-30T15:51:20Z")
    );
    assert!(
        del.iter()
            .all(|c| c.pod.as_deref() == Some("drainwatch-probe-abc"))
    );
    let mut s1 = SliceFacts::new();
    s1.insert(
        pod_key("web-1"),
        EndpointFacts {
            ready: true,
            serving: true,
            terminating: false,
            uid: Some("u1".into()),
            address: None,
        },
    );
    let mut s2 = s1.clone();
    s2.insert(
        pod_key("web-1"),
        EndpointFacts {
            ready: false,
            serving: true,
            terminating: true,
            uid: Some("u1".into()),
            address: None,
        },
    );
    let ch = slice_changes("web-abc", Some(&s1), &s2, None);
    assert_eq!(
        events(&ch),
        [
            EventName::EndpointsliceReadyFalse,
            EventName::EndpointsliceTerminatingTrue
        ]
    );
    assert!(ch.iter().all(|c| c.pod.as_deref() == Some("web-1")));
    let gone = slice_changes("web-abc", Some(&s2), &SliceFacts::new(), None);
    assert_eq!(events(&gone), [EventName::EndpointsliceEndpointRemoved]);
    assert_eq!(gone[0].pod.as_deref(), Some("web-1"));
    let line = gone[0].clone().into_line(7);
    assert_eq!(
        line.instance, None,
        "into_line leaves lanes to the attach watchers"
    );
}

/// A StatefulSet's replacement pod takes its predecessor's name: when one slice update swaps
/// them, the predecessor's endpoint is removed and the replacement's added, never merged.
#[test]
fn a_same_named_replacement_is_a_removal_and_an_addition() {
    let ep = |ready: bool, terminating: bool, uid: &str| EndpointFacts {
        ready,
        serving: ready,
        terminating,
        uid: Some(uid.into()),
        address: None,
    };
    let mut old = SliceFacts::new();
    old.insert(pod_key("db-1"), ep(false, true, "old"));
    let mut new = SliceFacts::new();
    new.insert(pod_key("db-1"), ep(false, false, "new"));
    let ch = slice_changes("db-abc", Some(&old), &new, None);
    assert_eq!(
        events(&ch),
        [
            EventName::EndpointsliceEndpointRemoved,
            EventName::EndpointsliceEndpointAdded
        ]
    );
    assert!(ch.iter().all(|c| c.pod.as_deref() == Some("db-1")));
    assert!(ch[0].detail.contains("uid old"), "{}", ch[0].detail);
    // The same pod seen again, or a uid not reported, is no replacement.
    let same = slice_changes("db-abc", Some(&old), &old.clone(), None);
    assert!(events(&same).is_empty());
    let mut unknown = SliceFacts::new();
    unknown.insert(
        pod_key("db-1"),
        EndpointFacts {
            uid: None,
            ..ep(false, true, "")
        },
    );
    assert!(events(&slice_changes("db-abc", Some(&old), &unknown, None)).is_empty());
}

const UNSCHEDULABLE: &str = r#"
metadata: {name: web-new, namespace: ns}
spec: {containers: [{name: probe}]}
status:
  phase: Pending
  conditions:
  - type: PodScheduled
    status: "False"
    reason: Unschedulable
    message: "0/2 nodes are available: 2 Insufficient cpu."
"#;

#[test]
fn a_pod_the_scheduler_cannot_place_is_recorded_once_with_its_message() {
    let p = pod(UNSCHEDULABLE);
    assert_eq!(
        p.unschedulable.as_deref(),
        Some("0/2 nodes are available: 2 Insufficient cpu.")
    );
    // Whatever the role: a replacement pod is an Other or a Candidate, never under test.
    let first = pod_changes(None, &p, Role::Other);
    assert_eq!(
        events(&first),
        [EventName::PodObserved, EventName::PodUnschedulable]
    );
    assert_eq!(
        first[1].detail,
        "web-new cannot be scheduled: 0/2 nodes are available: 2 Insufficient cpu."
    );
    assert_eq!(first[1].pod.as_deref(), Some("web-new"));
    assert!(pod_changes(Some(&p), &p, Role::Other).is_empty());
    assert_eq!(pod(RUNNING).unschedulable, None);
}
