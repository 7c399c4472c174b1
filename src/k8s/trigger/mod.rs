//! Every termination trigger drainwatch issues on Kubernetes, one file each, serving the probe
//! trial and the attach trial alike: delete the pod, evict it, scale its workload down, roll
//! the workload, drain its node. Each returns what became of it ([`Triggered`]); the platform
//! decides which pods are victims; what a trigger changes is written into [`Changes`] first
//! and undone by [`restore`].

pub mod delete;
pub mod drain;
pub mod evict;
pub mod restore;
pub mod rollout;
pub mod scale;

use tokio::sync::watch;

use crate::evidence::plan::attach::WorkloadKind;
use crate::evidence::trigger::Triggered;

/// A trigger whose action goes on after its API call returned: a rollout followed to
/// completion, a drain's evictions. `done` turns true when the action is complete.
pub struct Ongoing {
    /// What the API call did.
    pub triggered: Triggered,
    /// The task carrying the action on; cancelled with the trial.
    pub task: tokio::task::JoinHandle<()>,
    /// True once the action is complete.
    pub done: watch::Receiver<bool>,
}

/// What an attach trial's trigger changed on the user's workload, recorded before each
/// change is made and undone at teardown ([`restore::undo`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// The workload's replicas before a scale-down: kind, name, replicas.
    pub replicas: Option<(WorkloadKind, String, i32)>,
    /// A node this trial cordoned (it was schedulable before).
    pub cordoned: Option<String>,
    /// A pod given a deletion cost, and the annotation's value before (None: absent).
    pub deletion_cost: Option<(String, Option<String>)>,
    /// The restartedAt value a rollout-restart left (documented, not undone).
    pub restarted_at: Option<String>,
}

impl Changes {
    /// Whether nothing needs undoing.
    pub fn is_empty(&self) -> bool {
        self.replicas.is_none() && self.cordoned.is_none() && self.deletion_cost.is_none()
    }
}
