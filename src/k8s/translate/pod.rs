//! A pod's observations and what changed between two of them: first sight, scheduling,
//! the deletion request, readiness, and each container's state.

use k8s_openapi::api::core::v1::{ContainerStateTerminated, Pod};

use super::{Change, Role};
use crate::evidence::event::EventName;

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
