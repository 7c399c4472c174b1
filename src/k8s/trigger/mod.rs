//! Every termination trigger drainwatch issues on Kubernetes, one file each, serving the probe
//! trial and the attach trial alike: delete the pod, evict it, scale its workload down, roll
//! the workload, drain its node. Each returns what became of it ([`Triggered`]); the platform
//! decides which pods are victims and what a trial must restore.

pub mod delete;
pub mod drain;
pub mod evict;
pub mod rollout;
pub mod scale;

use tokio::sync::watch;

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
