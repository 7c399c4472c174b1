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

use crate::evidence::event::{EventLine, EventName, Source};

mod pod;
mod slice;

pub use pod::{ContainerFacts, PodFacts, Terminated, pod_changes, pod_deleted};
pub use slice::{
    EndpointFacts, SliceFacts, endpoint_pod, pod_key, slice_changes, slice_deleted, slice_facts,
};

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
    /// The added endpoint's address, on `endpointslice_endpoint_added`.
    pub address: Option<String>,
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
            address: None,
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
        l.address = self.address;
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

#[cfg(test)]
mod tests;
