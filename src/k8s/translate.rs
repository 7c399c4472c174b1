//! Pure translation of API objects into k8s event lines: what changed between two observations
//! of a pod or an EndpointSlice, scoped to the pod under test.
//!
//! The watchers keep the last facts per object and call these functions on every watch event,
//! so a transition that happened while a watch was down still shows up, at the relist, as one
//! change. Each change keeps the server's own timestamp where the object has one (container
//! `finishedAt`, a condition's `lastTransitionTime`) in the line's `wall`, beside the local
//! receive time in `at_ns`. Only the pod under test produces the events the report's summary
//! reads (`container_terminated`, `endpointslice_ready_false`, …); other pods of the trial appear
//! as `pod_observed` and `other_*` events that explain re-homing.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ContainerStateTerminated, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;

use crate::evidence::event::{EventLine, EventName, Source};

/// How a container ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terminated {
    /// Exit code (137 after SIGKILL).
    pub exit_code: i32,
    /// Kubelet's reason (Completed, Error, OOMKilled).
    pub reason: Option<String>,
    /// Signal, when the runtime reports one.
    pub signal: Option<i32>,
    /// Server time of the exit (second precision).
    pub finished_at: Option<String>,
}

impl Terminated {
    fn of(t: &ContainerStateTerminated) -> Self {
        Self {
            exit_code: t.exit_code,
            reason: t.reason.clone(),
            signal: t.signal,
            finished_at: t.finished_at.as_ref().map(|f| f.0.to_string()),
        }
    }

    /// `exitCode=137 reason=Error signal=0 finishedAt=…`, as the Go tool wrote it.
    pub fn describe(&self) -> String {
        format!(
            "exitCode={} reason={} signal={} finishedAt={}",
            self.exit_code,
            self.reason.as_deref().unwrap_or("unknown"),
            self.signal.unwrap_or(0),
            self.finished_at.as_deref().unwrap_or("unknown")
        )
    }
}

/// What drainwatch reads from one container's status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerFacts {
    /// The container's name.
    pub name: Option<String>,
    /// The container is running.
    pub running: bool,
    /// Why it waits (ErrImagePull, ImagePullBackOff, CrashLoopBackOff, …) and the message.
    pub waiting: Option<(String, Option<String>)>,
    /// Its current termination.
    pub terminated: Option<Terminated>,
    /// Its previous termination (after a restart).
    pub last_terminated: Option<Terminated>,
    /// Restarts so far.
    pub restart_count: i32,
    /// The image as resolved by the runtime (digest), once known.
    pub image_id: Option<String>,
}

/// What drainwatch reads from a pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodFacts {
    /// Pod name.
    pub name: String,
    /// metadata.uid: a StatefulSet's replacement pod reuses its predecessor's name, not this.
    pub uid: Option<String>,
    /// Phase.
    pub phase: Option<String>,
    /// Node it is bound to.
    pub node: Option<String>,
    /// The node's IP.
    pub host_ip: Option<String>,
    /// deletionTimestamp (the deadline: request time + grace) and deletionGracePeriodSeconds.
    pub deletion: Option<(String, Option<i64>)>,
    /// When the deletion was requested, by the API server's clock: deletionTimestamp minus
    /// deletionGracePeriodSeconds (the server sets the one from the other at the request).
    pub deletion_requested: Option<String>,
    /// The Ready condition and its lastTransitionTime.
    pub ready: Option<(bool, Option<String>)>,
    /// The named container's status.
    pub container: Option<ContainerFacts>,
    /// The scheduler's message while the pod cannot be placed (PodScheduled False, reason
    /// Unschedulable): a rollout's new pod that never runs terminates no old one.
    pub unschedulable: Option<String>,
}

impl PodFacts {
    /// Facts of `pod`, reading the status of `container`.
    pub fn of(pod: &Pod, container: &str) -> Self {
        let meta = &pod.metadata;
        let status = pod.status.as_ref();
        let ready = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
            .map(|c| {
                (
                    c.status == "True",
                    c.last_transition_time.as_ref().map(|t| t.0.to_string()),
                )
            });
        let unschedulable = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| {
                cs.iter().find(|c| {
                    c.type_ == "PodScheduled"
                        && c.status == "False"
                        && c.reason.as_deref() == Some("Unschedulable")
                })
            })
            .map(|c| c.message.clone().unwrap_or_default());
        let container = status
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.name == container))
            .map(|c| {
                let state = c.state.as_ref();
                ContainerFacts {
                    name: Some(c.name.clone()),
                    running: state.is_some_and(|s| s.running.is_some()),
                    waiting: state
                        .and_then(|s| s.waiting.as_ref())
                        .and_then(|w| w.reason.clone().map(|r| (r, w.message.clone()))),
                    terminated: state
                        .and_then(|s| s.terminated.as_ref())
                        .map(Terminated::of),
                    last_terminated: c
                        .last_state
                        .as_ref()
                        .and_then(|s| s.terminated.as_ref())
                        .map(Terminated::of),
                    restart_count: c.restart_count,
                    image_id: Some(c.image_id.clone()).filter(|i| !i.is_empty()),
                }
            });
        Self {
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone(),
            phase: status.and_then(|s| s.phase.clone()),
            node: pod.spec.as_ref().and_then(|s| s.node_name.clone()),
            host_ip: status.and_then(|s| s.host_ip.clone()),
            deletion: meta
                .deletion_timestamp
                .as_ref()
                .map(|t| (t.0.to_string(), meta.deletion_grace_period_seconds)),
            deletion_requested: meta.deletion_timestamp.as_ref().and_then(|t| {
                let grace = meta.deletion_grace_period_seconds?;
                t.0.checked_sub(k8s_openapi::jiff::SignedDuration::from_secs(grace))
                    .ok()
                    .map(|r| r.to_string())
            }),
            ready,
            container,
            unschedulable,
        }
    }

    /// Facts of a pod of someone else's workload: its first container is the one followed
    /// (the main container by convention; sidecars come after it).
    pub fn of_first(pod: &Pod) -> Self {
        let first = pod
            .spec
            .as_ref()
            .and_then(|s| s.containers.first())
            .map(|c| c.name.clone())
            .unwrap_or_default();
        Self::of(pod, &first)
    }

    /// Whether the Ready condition is True.
    pub fn is_ready(&self) -> bool {
        self.ready.as_ref().is_some_and(|r| r.0)
    }
}

/// One change, before it is stamped with its receive time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Event name.
    pub event: EventName,
    /// Detail for humans.
    pub detail: String,
    /// The server's timestamp of the change, when the object carries one.
    pub server_time: Option<String>,
    /// Exit code, on `container_terminated`.
    pub exit_code: Option<i32>,
    /// Signal, on `container_terminated`.
    pub signal: Option<i32>,
    /// The pod the change is about (from the pod itself or an endpoint's targetRef), so that
    /// every pod of an attached workload gets its own lane.
    pub pod: Option<String>,
    /// Whether an added endpoint was ready, on `endpointslice_endpoint_added`.
    pub ready: Option<bool>,
}

impl Change {
    fn new(event: EventName, detail: String) -> Self {
        Self {
            event,
            detail,
            server_time: None,
            exit_code: None,
            signal: None,
            pod: None,
            ready: None,
        }
    }

    fn about(mut self, pod: Option<&str>) -> Self {
        self.pod = pod.map(str::to_string);
        self
    }

    /// The event line, received at `at_ns`.
    pub fn into_line(self, at_ns: i64) -> EventLine {
        let mut l = EventLine::new(Source::K8s, self.event, at_ns).detail(self.detail);
        l.wall = self.server_time;
        l.exit_code = self.exit_code;
        l.signal = self.signal;
        l.ready = self.ready;
        l
    }
}

/// Whose changes a pod's are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The pod under test: every transition is recorded.
    UnderTest,
    /// No pod under test has been chosen yet: every transition is recorded, unlabelled.
    Candidate,
    /// Another pod of the trial: only its first sight and its readiness.
    Other,
}

impl Role {
    /// The role of pod `name` when `put` is the pod under test (if chosen).
    pub fn of(name: &str, put: Option<&str>) -> Self {
        match put {
            None => Self::Candidate,
            Some(p) if p == name => Self::UnderTest,
            Some(_) => Self::Other,
        }
    }
}

/// What changed between two observations of a pod (`prev` is `None` on first sight).
pub fn pod_changes(prev: Option<&PodFacts>, cur: &PodFacts, role: Role) -> Vec<Change> {
    let mut out = Vec::new();
    let name = &cur.name;
    if prev.is_none() {
        out.push(first_sight(cur, role));
    }
    out.extend(unschedulable_change(prev, cur));
    let was_ready = prev.is_some_and(PodFacts::is_ready);
    if role == Role::Other {
        if cur.is_ready() && !was_ready {
            let mut c = Change::new(
                EventName::OtherPodReady,
                format!("{name} became Ready (not the pod under test)"),
            );
            c.server_time = cur.ready.as_ref().and_then(|r| r.1.clone());
            out.push(c);
        }
    } else {
        out.extend(deletion_change(prev, cur));
        out.extend(prev.and_then(|p| ready_change(p, cur)));
        let before = prev.and_then(|p| p.container.as_ref());
        if let Some(c) = &cur.container {
            container_changes(&mut out, name, before, c);
        }
    }
    out.into_iter()
        .map(|c| c.about(Some(name.as_str())))
        .collect()
}

/// `pod_observed`: phase and node at first sight.
fn first_sight(cur: &PodFacts, role: Role) -> Change {
    Change::new(
        EventName::PodObserved,
        format!(
            "{} phase={} node={}{}",
            cur.name,
            cur.phase.as_deref().unwrap_or("unknown"),
            cur.node.as_deref().unwrap_or("unscheduled"),
            if role == Role::UnderTest {
                " (pod under test)"
            } else {
                ""
            }
        ),
    )
}

/// `pod_unschedulable`, whatever the pod's role, when the scheduler first says it cannot place
/// it: a replacement that never runs is why a rollout or a drain terminated nothing.
fn unschedulable_change(prev: Option<&PodFacts>, cur: &PodFacts) -> Option<Change> {
    let msg = cur.unschedulable.as_ref()?;
    if prev.is_some_and(|p| p.unschedulable.is_some()) {
        return None;
    }
    Some(Change::new(
        EventName::PodUnschedulable,
        format!("{} cannot be scheduled: {msg}", cur.name),
    ))
}

/// `pod_deletion_timestamp_set`, the first time the pod carries a deletionTimestamp.
fn deletion_change(prev: Option<&PodFacts>, cur: &PodFacts) -> Option<Change> {
    let (ts, grace) = cur.deletion.as_ref()?;
    if prev.is_some_and(|p| p.deletion.is_some()) {
        return None;
    }
    let mut c = Change::new(
        EventName::PodDeletionTimestampSet,
        format!(
            "{} deletionTimestamp={ts} deletionGracePeriodSeconds={} deletion requested at {} (deletionTimestamp minus the grace period, server clock)",
            cur.name,
            grace.map_or_else(|| "unknown".to_string(), |g| g.to_string()),
            cur.deletion_requested.as_deref().unwrap_or("unknown")
        ),
    );
    c.server_time = cur.deletion_requested.clone();
    Some(c)
}

/// `pod_ready_true` / `pod_ready_false` when the Ready condition flipped since `prev`.
fn ready_change(prev: &PodFacts, cur: &PodFacts) -> Option<Change> {
    if prev.is_ready() == cur.is_ready() || prev.ready.is_none() {
        return None;
    }
    let event = if cur.is_ready() {
        EventName::PodReadyTrue
    } else {
        EventName::PodReadyFalse
    };
    let mut c = Change::new(event, cur.name.clone());
    c.server_time = cur.ready.as_ref().and_then(|r| r.1.clone());
    Some(c)
}

/// The followed container's changes: its termination, restarts, and a new waiting reason.
fn container_changes(
    out: &mut Vec<Change>,
    name: &str,
    before: Option<&ContainerFacts>,
    c: &ContainerFacts,
) {
    if let (Some(t), true) = (&c.terminated, before.is_none_or(|b| b.terminated.is_none())) {
        let mut ch = Change::new(
            EventName::ContainerTerminated,
            format!("{} {}", c.name.as_deref().unwrap_or("probe"), t.describe()),
        );
        ch.server_time = t.finished_at.clone();
        ch.exit_code = Some(t.exit_code);
        ch.signal = t.signal;
        out.push(ch);
    }
    if c.restart_count > before.map_or(0, |b| b.restart_count) {
        out.push(Change::new(
            EventName::ContainerRestarted,
            format!(
                "{name} restartCount={} last termination: {}",
                c.restart_count,
                c.last_terminated
                    .as_ref()
                    .map_or_else(|| "unknown".to_string(), Terminated::describe)
            ),
        ));
    }
    let waiting = c.waiting.as_ref().map(|w| &w.0);
    if waiting.is_some() && waiting != before.and_then(|b| b.waiting.as_ref()).map(|w| &w.0) {
        if let Some((reason, msg)) = &c.waiting {
            out.push(Change::new(
                EventName::ContainerWaiting,
                format!("{name} reason={reason} {}", msg.as_deref().unwrap_or(""))
                    .trim_end()
                    .to_string(),
            ));
        }
    }
}

/// The pod object left the API.
pub fn pod_deleted(facts: &PodFacts, role: Role) -> Vec<Change> {
    if role != Role::Other {
        vec![
            Change::new(
                EventName::PodObjectDeleted,
                format!("{} removed from the API", facts.name),
            )
            .about(Some(facts.name.as_str())),
        ]
    } else {
        vec![]
    }
}

/// One endpoint's conditions, with the API's nil rules applied: ready nil means ready,
/// serving nil means "as ready", terminating nil means false.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointFacts {
    /// Ready for new traffic.
    pub ready: bool,
    /// Ready, ignoring termination.
    pub serving: bool,
    /// The pod is terminating.
    pub terminating: bool,
    /// The targetRef's uid: tells a StatefulSet's replacement pod from its predecessor, which
    /// had the same name and so the same key.
    pub uid: Option<String>,
}

impl EndpointFacts {
    fn describe(&self) -> String {
        format!(
            "ready={} serving={} terminating={}",
            self.ready, self.serving, self.terminating
        )
    }
}

/// Endpoints of one slice, keyed `Pod/<name>` (from targetRef) or `addr/<first address>`.
pub type SliceFacts = BTreeMap<String, EndpointFacts>;

/// The endpoint key of a pod.
pub fn pod_key(pod: &str) -> String {
    format!("Pod/{pod}")
}

/// Facts of one slice.
pub fn slice_facts(slice: &EndpointSlice) -> SliceFacts {
    let mut out = SliceFacts::new();
    for e in &slice.endpoints {
        let key = match &e.target_ref {
            Some(r) if r.kind.as_deref() == Some("Pod") && r.name.is_some() => {
                pod_key(r.name.as_deref().unwrap_or_default())
            }
            _ => {
                let mut a = e.addresses.clone();
                a.sort();
                format!("addr/{}", a.first().map_or("", String::as_str))
            }
        };
        let c = e.conditions.as_ref();
        let ready = c.and_then(|c| c.ready).unwrap_or(true);
        out.insert(
            key,
            EndpointFacts {
                ready,
                serving: c.and_then(|c| c.serving).unwrap_or(ready),
                terminating: c.and_then(|c| c.terminating).unwrap_or(false),
                uid: e.target_ref.as_ref().and_then(|r| r.uid.clone()),
            },
        );
    }
    out
}

/// What changed in slice `name` between two observations (`prev` is `None` on first sight).
pub fn slice_changes(
    name: &str,
    prev: Option<&SliceFacts>,
    cur: &SliceFacts,
    put: Option<&str>,
) -> Vec<Change> {
    let mut out = Vec::new();
    if prev.is_none() {
        out.push(Change::new(
            EventName::EndpointsliceObserved,
            format!("{name} endpoints={}", cur.len()),
        ));
    }
    // Before a pod under test is chosen every endpoint is followed in full.
    let put_key = put.map(pod_key);
    let followed = |key: &str| put_key.as_deref().is_none_or(|k| k == key);
    let empty = SliceFacts::new();
    let before = prev.unwrap_or(&empty);
    for (key, now) in cur {
        let start = out.len();
        let mut was = before.get(key);
        if was.is_some_and(|w| !same_pod(w, now)) && followed(key) {
            // One update removed a pod's endpoint and added its same-named replacement's.
            out.push(Change::new(
                EventName::EndpointsliceEndpointRemoved,
                format!(
                    "{key} (uid {}) removed from {name}, replaced by a pod of the same name (uid {})",
                    was.and_then(|w| w.uid.as_deref()).unwrap_or("unknown"),
                    now.uid.as_deref().unwrap_or("unknown")
                ),
            ));
            was = None;
        }
        slice_endpoint_changes(&mut out, name, key, now, was, followed(key));
        for c in &mut out[start..] {
            c.pod = endpoint_pod(key).map(str::to_string);
        }
    }
    for k in before
        .keys()
        .filter(|k| followed(k) && !cur.contains_key(*k))
    {
        out.push(
            Change::new(
                EventName::EndpointsliceEndpointRemoved,
                format!("{k} removed from {name}"),
            )
            .about(endpoint_pod(k)),
        );
    }
    out
}

/// Whether two observations of one endpoint key are of the same pod: different uids mean a
/// replacement that took the name over; an unknown uid is given the benefit of the doubt.
fn same_pod(a: &EndpointFacts, b: &EndpointFacts) -> bool {
    match (&a.uid, &b.uid) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// The pod an endpoint key names (`Pod/<name>`), if it names one.
pub fn endpoint_pod(key: &str) -> Option<&str> {
    key.strip_prefix("Pod/")
}

/// The changes of one endpoint `key` of slice `name`.
fn slice_endpoint_changes(
    out: &mut Vec<Change>,
    name: &str,
    key: &str,
    now: &EndpointFacts,
    was: Option<&EndpointFacts>,
    followed: bool,
) {
    if !followed {
        if now.ready && !was.is_some_and(|w| w.ready) {
            out.push(Change::new(
                EventName::OtherEndpointReady,
                format!("{key} in {name} (not the pod under test)"),
            ));
        }
        return;
    }
    let Some(was) = was else {
        let mut c = Change::new(
            EventName::EndpointsliceEndpointAdded,
            format!("{key} in {name} {}", now.describe()),
        );
        c.ready = Some(now.ready);
        out.push(c);
        return;
    };
    let conds = now.describe();
    if was.ready && !now.ready {
        out.push(Change::new(
            EventName::EndpointsliceReadyFalse,
            format!(
                "{key} in {name}{} serving={}",
                if now.terminating {
                    " (terminating=true)"
                } else {
                    ""
                },
                now.serving
            ),
        ));
    }
    if !was.ready && now.ready {
        out.push(Change::new(
            EventName::EndpointsliceReadyTrue,
            format!("{key} in {name} {conds}"),
        ));
    }
    if was.serving != now.serving {
        let event = if now.serving {
            EventName::EndpointsliceServingTrue
        } else {
            EventName::EndpointsliceServingFalse
        };
        out.push(Change::new(event, format!("{key} in {name} {conds}")));
    }
    if !was.terminating && now.terminating {
        out.push(Change::new(
            EventName::EndpointsliceTerminatingTrue,
            format!("{key} in {name} {conds}"),
        ));
    }
}

/// Slice `name` was deleted: the pod under test's endpoint, if it was there, is removed.
pub fn slice_deleted(name: &str, prev: &SliceFacts, put: Option<&str>) -> Vec<Change> {
    let put_key = put.map(pod_key);
    prev.keys()
        .filter(|k| put_key.as_deref().is_none_or(|p| p == k.as_str()))
        .map(|k| {
            Change::new(
                EventName::EndpointsliceEndpointRemoved,
                format!("{k} removed from {name} (slice {name} deleted)"),
            )
            .about(endpoint_pod(k))
        })
        .collect()
}

#[cfg(test)]
mod tests;
