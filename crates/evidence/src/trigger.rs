//! The termination trigger: the closed set a trial can ask for, which platform and workload
//! each one serves, and what became of it once issued. One enum from the command line to the
//! report, so that no edge matches a trigger's name again.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How the pod under test is made to terminate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trigger {
    /// Local: SIGTERM to the probe process, SIGKILL after the grace period.
    Sigterm,
    /// Delete the pod under test; its own grace period applies.
    Delete,
    /// Evict it through the policy/v1 Eviction API (a PodDisruptionBudget may refuse).
    Evict,
    /// Scale the workload down so that the pod under test is the one removed.
    Scale,
    /// Roll the workload as `kubectl rollout restart` does (attach only).
    RolloutRestart,
    /// Cordon the pod's node and evict the target's pods on it (attach only).
    DrainNode,
    /// No trigger of drainwatch's: a manual `client` run, terminated by someone else.
    #[serde(rename = "none (manual client run)")]
    Manual,
}

impl Trigger {
    /// Every trigger, in the order help texts list them.
    pub const ALL: [Self; 7] = [
        Self::Sigterm,
        Self::Delete,
        Self::Evict,
        Self::Scale,
        Self::RolloutRestart,
        Self::DrainNode,
        Self::Manual,
    ];

    /// The triggers the probe accepts on Kubernetes.
    pub const PROBE_KUBERNETES: [Self; 3] = [Self::Delete, Self::Evict, Self::Scale];

    /// The triggers an attach trial (`--target`) accepts.
    pub const ATTACH: [Self; 5] = [
        Self::Delete,
        Self::Evict,
        Self::Scale,
        Self::RolloutRestart,
        Self::DrainNode,
    ];

    /// The triggers the local platform accepts.
    pub const LOCAL: [Self; 1] = [Self::Sigterm];

    /// The trigger of a manual `client` run: none of drainwatch's.
    pub const MANUAL: [Self; 1] = [Self::Manual];

    /// The name on the command line, in policies, events and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sigterm => "sigterm",
            Self::Delete => "delete",
            Self::Evict => "evict",
            Self::Scale => "scale",
            Self::RolloutRestart => "rollout-restart",
            Self::DrainNode => "drain-node",
            Self::Manual => "none (manual client run)",
        }
    }

    /// `a, b or c`, for refusals that name what is accepted.
    pub fn list(set: &[Self]) -> String {
        let names: Vec<&str> = set.iter().map(|t| t.as_str()).collect();
        match names.split_last() {
            None => String::new(),
            Some((last, [])) => (*last).to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        }
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What became of the trigger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Triggered {
    /// The termination was issued; the detail says how.
    Issued(String),
    /// The platform refused it (an Eviction forbidden by a PodDisruptionBudget): nothing will
    /// terminate, so the trial ends with status blocked-by-pdb.
    Blocked(String),
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn names_are_the_serde_names() {
        assert_eq!(Trigger::ALL.len(), 7);
        for t in Trigger::ALL {
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{}\"", t.as_str()));
            let back: Trigger = serde_json::from_str(&json).unwrap();
            assert_eq!(back, t);
        }
    }

    #[test]
    fn lists_read_as_prose() {
        assert_eq!(
            Trigger::list(&Trigger::PROBE_KUBERNETES),
            "delete, evict or scale"
        );
        assert_eq!(Trigger::list(&Trigger::LOCAL), "sigterm");
        assert_eq!(
            Trigger::list(&Trigger::ATTACH),
            "delete, evict, scale, rollout-restart or drain-node"
        );
    }
}
