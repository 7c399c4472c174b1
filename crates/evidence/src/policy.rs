//! The policy file: which arms to run and the thresholds every trial of each arm must hold.
//!
//! TOML, read with serde and `deny_unknown_fields`, so a misspelt key is a named error rather
//! than a silently ignored one. `schema/policy.schema.json` describes the same format for
//! editors; `docs/ci.md` is the reference. Pure: text in, a validated [`Policy`] out; merging
//! with command-line flags ([`Policy::plan`]) is pure too, so every refusal is a unit test.

mod baseline;
pub mod combine;
pub mod flags;
mod merge;
mod parse;
pub mod threshold;

pub use baseline::OnMissingBaseline;
pub use combine::Quorum;
pub use merge::parse_arm_list;

#[cfg(test)]
mod combine_tests;
#[cfg(test)]
mod tests;

use super::plan::attach::AttachInput;
use super::plan::{DrainBehavior, PlanError, TrialConfig};
use super::trigger::Trigger;
use threshold::{Threshold, ThresholdError};

/// The policy format version this build reads.
pub const POLICY_VERSION: u32 = 1;

/// The cluster smoke test that ships with drainwatch: does this cluster let a well-behaved pod
/// drain? Used when no policy file is given (`builtin:smoke`).
pub const SMOKE_POLICY: &str = include_str!("../../../policies/smoke.toml");

/// The name that selects [`SMOKE_POLICY`] instead of a file.
pub const SMOKE_POLICY_NAME: &str = "builtin:smoke";

/// What an arm fixes; `None` leaves the setting to flags and their defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArmSettings {
    /// The probe's SIGTERM behaviour.
    pub behavior: Option<DrainBehavior>,
    /// The trigger.
    pub trigger: Option<Trigger>,
    /// terminationGracePeriodSeconds.
    pub grace_period_seconds: Option<u32>,
    /// The probe's drain window.
    pub drain_max_seconds: Option<u32>,
    /// TCP flows.
    pub tcp_flows: Option<u32>,
    /// UDP flows.
    pub udp_flows: Option<u32>,
    /// Trials of this arm.
    pub repeat: Option<u32>,
    /// How many trials a per-trial threshold must hold in (`quorum`; unset: all).
    pub quorum: Option<Quorum>,
    /// Re-runs of a trial whose per-trial thresholds did not all hold (`retries`; unset: 0).
    pub retries: Option<u32>,
    /// Held connections of an attach arm (`flows`; the --tcp-flows of `run --target`).
    pub flows: Option<u32>,
    /// The attach keys (`target` and the rest), when the arm measures the user's workload;
    /// validated with the flags by [`Policy::plan`].
    pub attach: Option<AttachInput>,
}

/// One validated arm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arm {
    /// Unique, and the arm's output directory name.
    pub name: String,
    /// Free text shown in the summary.
    pub description: Option<String>,
    /// What the arm fixes.
    pub settings: ArmSettings,
    /// In file order; each one is a JUnit test case.
    pub thresholds: Vec<Threshold>,
    /// What this arm's baseline thresholds do without a baseline; `None`: the policy's.
    pub on_missing_baseline: Option<OnMissingBaseline>,
}

/// A validated policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Free text shown in the summary.
    pub description: Option<String>,
    /// In file order.
    pub arms: Vec<Arm>,
    /// What baseline thresholds do without a baseline, unless an arm says otherwise.
    pub on_missing_baseline: OnMissingBaseline,
}

/// Which run settings were given explicitly on the command line (or as action inputs), as
/// opposed to left at their defaults; only explicit ones can conflict with a policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Explicit {
    /// `--drain-behavior`.
    pub behavior: bool,
    /// `--trigger`.
    pub trigger: bool,
    /// `--grace-period`.
    pub grace_period: bool,
    /// `--drain-max-seconds`.
    pub drain_max_seconds: bool,
    /// `--tcp-flows`.
    pub tcp_flows: bool,
    /// `--udp-flows`.
    pub udp_flows: bool,
    /// `--repeat`.
    pub repeat: bool,
}

/// One arm, merged with the flags and validated: what the trial loop runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmPlan {
    /// Arm name.
    pub name: String,
    /// The validated trial configuration.
    pub config: TrialConfig,
    /// Trials of this arm.
    pub repeat: u32,
    /// How the trials combine (checked against `repeat`).
    pub quorum: Quorum,
    /// Re-runs of a trial whose per-trial thresholds did not all hold, at most
    /// [`combine::MAX_RETRIES`].
    pub retries: u32,
    /// The per-trial thresholds, which decide whether a trial is retried.
    pub per_trial: Vec<Threshold>,
}

/// Why a policy is refused; every variant names the arm, key or threshold at fault (exit 2).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// Not TOML, or a key or value the format does not have.
    #[error("{0}")]
    Syntax(String),
    /// A version this build does not read.
    #[error("policy version {found} is not supported: this build reads version {POLICY_VERSION}")]
    Version {
        /// The version in the file.
        found: u32,
    },
    /// No `[[arm]]`.
    #[error("the policy has no arms: add at least one [[arm]] with thresholds")]
    NoArms,
    /// An arm name that cannot be a directory name.
    #[error(
        "arm name {0:?} must be 1-63 characters of a-z, 0-9 and '-', starting with a letter or digit"
    )]
    BadName(String),
    /// Two arms with one name.
    #[error("arm name {0:?} is used twice")]
    DuplicateArm(String),
    /// An arm with nothing to check.
    #[error("arm {0:?} has no thresholds, so it would always pass: add at least one")]
    NoThresholds(String),
    /// A threshold that does not parse.
    #[error("arm {arm:?} threshold {text:?}: {reason}")]
    Threshold {
        /// The arm.
        arm: String,
        /// The sentence as written.
        text: String,
        /// Why (part of this message, so not a `source`).
        reason: ThresholdError,
    },
    /// The same threshold twice in one arm.
    #[error("arm {arm:?} lists threshold {threshold:?} twice")]
    DuplicateThreshold {
        /// The arm.
        arm: String,
        /// The threshold.
        threshold: String,
    },
    /// Attach keys without `target`.
    #[error(
        "arm {arm:?} sets {key} but no target: attach keys need target = \"deployment/NAME\" (or statefulset/NAME)"
    )]
    AttachKeyWithoutTarget {
        /// The arm.
        arm: String,
        /// The first attach key set.
        key: &'static str,
    },
    /// An explicit flag that disagrees with the policy.
    #[error(
        "{flag} {flag_value} conflicts with arm {arm:?} of the policy, which sets {key} = {policy_value}: the policy wins, so drop the flag or edit the policy"
    )]
    FlagConflict {
        /// The flag.
        flag: &'static str,
        /// Its value.
        flag_value: String,
        /// The arm.
        arm: String,
        /// The policy key.
        key: &'static str,
        /// The policy's value.
        policy_value: String,
    },
    /// `--arms` names an arm the policy lacks.
    #[error("--arms names {name:?}, which the policy does not have (arms: {known})")]
    UnknownArm {
        /// The name asked for.
        name: String,
        /// The arms there are.
        known: String,
    },
    /// The merged settings are not a valid trial.
    #[error("arm {arm:?}: {reason}")]
    Plan {
        /// The arm.
        arm: String,
        /// Why (part of this message, so not a `source`).
        reason: PlanError,
    },
    /// A `quorum` value that does not parse.
    #[error("arm {arm:?} quorum {text:?}: {reason}")]
    Quorum {
        /// The arm.
        arm: String,
        /// The value as written.
        text: String,
        /// Why (part of this message, so not a `source`).
        reason: combine::QuorumError,
    },
    /// A `k/n` quorum whose n is not the arm's repeat.
    #[error(
        "arm {arm:?} quorum = \"{quorum}\" does not match the arm's repeat = {repeat}: n must be the number of trials the arm runs (set repeat, or --repeat)"
    )]
    QuorumRepeat {
        /// The arm.
        arm: String,
        /// The quorum as written.
        quorum: String,
        /// The resolved repeat.
        repeat: u32,
    },
    /// Too many retries.
    #[error(
        "arm {arm:?} retries = {retries} is more than {max}: a gate that needs more retries measures its own flakiness",
        max = combine::MAX_RETRIES
    )]
    Retries {
        /// The arm.
        arm: String,
        /// The value.
        retries: u32,
    },
    /// A threshold the arm's flows can never meet or never measure.
    #[error("arm {arm:?} threshold \"{threshold}\" is impossible: {why}")]
    Impossible {
        /// The arm.
        arm: String,
        /// The threshold.
        threshold: String,
        /// Why.
        why: String,
    },
}
