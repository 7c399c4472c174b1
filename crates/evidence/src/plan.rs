//! The validated trial plan: what a trial will do, decided before any socket opens.
//!
//! Flags become a [`TrialConfig`] through [`PlanInput::validate`], a pure function, so every
//! default and every refusal is a unit test and the report's `config` block shows what ran.

pub mod attach;
pub mod client;
mod clients;
mod error;
mod validate;

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

use attach::{AttachInput, AttachTarget};
pub use error::PlanError;

use super::trigger::Trigger;

/// What the probe does when SIGTERM arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DrainBehavior {
    /// Fail readiness, stop accepting, keep serving, announce and close at the deadline.
    Drain,
    /// Abandon established flows and exit at once.
    ExitNow,
    /// Keep serving until SIGKILL.
    Ignore,
}

impl DrainBehavior {
    /// The name used on the command line, in the environment and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Drain => "drain",
            Self::ExitNow => "exit-now",
            Self::Ignore => "ignore",
        }
    }
}

impl fmt::Display for DrainBehavior {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DrainBehavior {
    type Err = PlanError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "drain" => Ok(Self::Drain),
            "exit-now" => Ok(Self::ExitNow),
            "ignore" => Ok(Self::Ignore),
            other => Err(PlanError::UnknownBehavior(other.to_string())),
        }
    }
}

/// Where the workload under test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Platform {
    /// The probe is a child process on this machine; the trigger is a signal.
    Local,
    /// The probe is a pod; the trigger is an API call.
    Kubernetes,
}

impl Platform {
    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Kubernetes => "kubernetes",
        }
    }
}

/// Where the flow client runs on Kubernetes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientPlacement {
    /// A pod of the same image dials the Service's ClusterIP and streams its events over its log.
    Pod,
    /// drainwatch itself dials a NodePort from where it runs.
    Host,
}

impl ClientPlacement {
    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pod => "pod",
            Self::Host => "host",
        }
    }
}

/// Where the client pods of `--clients N` run (schema 4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ShardPlacement {
    /// Each client pod pinned to a node of its own (Ready and schedulable, by name; never the
    /// node drain-node drains): every node a shard runs on is a view of the data plane.
    PerNode,
    /// The scheduler places them, asked to keep them apart (a preferred anti-affinity).
    Spread,
}

impl ShardPlacement {
    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PerNode => "per-node",
            Self::Spread => "spread",
        }
    }
}

/// What only a Kubernetes trial has; absent from local reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubernetesConfig {
    /// The probe (and client) image.
    pub image: String,
    /// Replicas of the probe Deployment; one of them is the pod under test.
    pub replicas: u32,
    /// Where the flow client runs.
    pub client: ClientPlacement,
    /// preStop sleep before SIGTERM, seconds; 0 means no preStop hook.
    pub prestop_sleep_seconds: u32,
    /// periodSeconds of the probe's readiness probe.
    pub readiness_period_seconds: u32,
    /// Whether a PodDisruptionBudget with maxUnavailable 0 guards the probe (it forbids evictions).
    pub pdb: bool,
    /// Extra `KEY=VALUE` environment of the probe container (its PROBE_* knobs); omitted when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probe_env: Vec<String>,
    /// `--target` and its flags: the user's workload measured instead of the probe (schema
    /// 1.2); absent when the probe is deployed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach: Option<AttachTarget>,
    /// `--client-placement` of the client pods when `--clients` is above one (schema 4.2);
    /// absent with one client or the host placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_placement: Option<ShardPlacement>,
}

/// The default observation window of an attach trial, seconds: a rollout of a few replicas.
pub const ATTACH_OBSERVE_SECONDS: u32 = 180;

/// The most flows of one protocol a trial holds, over all its client processes: five times the
/// largest run measured (18,000 flows sharded over two clients, EXPERIMENTS.md). Every flow is a
/// row of the report, listed up front so an unobserved one is not-measured: the plan refuses
/// more, and a replayed trial header that claims more is refused (`assemble`), so that a
/// hostile or corrupted `events.jsonl` cannot make `drainwatch report` allocate without bound.
pub const MAX_FLOWS_PER_PROTOCOL: u32 = 100_000;

/// The flags of a trial as given, before defaults and validation.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanInput {
    /// The platform the workload runs on.
    pub platform: Platform,
    /// The probe's SIGTERM behaviour; `None` when the workload is not drainwatch's probe
    /// (a manual client run, an attached workload) and its behaviour is not ours to know.
    pub drain_behavior: Option<DrainBehavior>,
    /// The termination trigger.
    pub trigger: Trigger,
    /// terminationGracePeriodSeconds, or the local SIGKILL delay.
    pub grace_period_seconds: u32,
    /// 0 means grace − 5, at least 1.
    pub drain_max_seconds: u32,
    /// Whether exit-now resets connections with SO_LINGER 0.
    pub exit_now_force_rst: bool,
    /// Number of TCP flows.
    pub tcp_flows: u32,
    /// Number of UDP flows.
    pub udp_flows: u32,
    /// Host or address the client dials.
    pub target_host: String,
    /// TCP port the client dials.
    pub tcp_port: u16,
    /// UDP port the client dials.
    pub udp_port: u16,
    /// Readiness port of the probe.
    pub ready_port: u16,
    /// Steady state held before the trigger, in seconds.
    pub settle_seconds: u32,
    /// 0 means grace + 30.
    pub observe_timeout_seconds: u32,
    /// Silence after which a flow is read-timeout, in ms.
    pub flow_timeout_ms: u64,
    /// Ping interval, in ms.
    pub interval_ms: u64,
    /// Unanswered datagrams that make a UDP flow silent.
    pub udp_silence_datagrams: u32,
    /// Seconds to keep watching after every flow is terminal.
    pub post_terminal_grace_seconds: u32,
    /// Trials in one run.
    pub repeat: u32,
    /// Kubernetes namespace, when the platform has one.
    pub namespace: Option<String>,
    /// Kubernetes-only settings; `None` on the local platform.
    pub kubernetes: Option<KubernetesConfig>,
    /// Client processes to shard the flows over (1: the flows run in this process).
    pub clients: u32,
    /// `--target` and its flags: attach to the user's workload (Kubernetes only).
    pub attach: Option<AttachInput>,
}

/// A validated trial configuration; serialised as the report's `trial.config`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrialConfig {
    /// Platform name.
    pub platform: Platform,
    /// Number of TCP flows.
    pub tcp_flows: u32,
    /// Number of UDP flows.
    pub udp_flows: u32,
    /// Grace period before SIGKILL, seconds.
    pub grace_period_seconds: u32,
    /// The probe's SIGTERM behaviour; null when the workload is not the probe.
    pub drain_behavior: Option<DrainBehavior>,
    /// The drain window the probe was given, seconds.
    pub drain_max_seconds: u32,
    /// Whether exit-now used SO_LINGER 0.
    pub exit_now_force_rst: bool,
    /// The trigger.
    pub trigger: Trigger,
    /// What was measured: the deployed probe or an attached workload.
    pub workload: String,
    /// Namespace, null off Kubernetes.
    pub namespace: Option<String>,
    /// Dialled host.
    pub target_host: String,
    /// Dialled TCP port.
    pub tcp_port: u16,
    /// Dialled UDP port.
    pub udp_port: u16,
    /// Steady state before the trigger, seconds.
    pub settle_seconds: u32,
    /// Observation window after the trigger, seconds.
    pub observe_timeout_seconds: u32,
    /// Flow timeout, seconds (fractional, as the Go tool wrote it).
    pub flow_timeout_seconds: f64,
    /// Ping interval, ms.
    pub interval_ms: u64,
    /// Unanswered datagrams that make a UDP flow silent.
    pub udp_silence_datagrams: u32,
    /// Seconds watched after every flow went terminal.
    pub post_terminal_grace_seconds: u32,
    /// Kubernetes-only settings (schema 1.1); absent on the local platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<KubernetesConfig>,
    /// Client processes the flows were sharded over (schema 1.2); absent means one, the
    /// in-process client, so reports of unsharded runs read as before.
    #[serde(default = "one_client", skip_serializing_if = "is_one_client")]
    pub clients: u32,
    /// Attach settings (schema 1.2): present when the workload is the user's own, absent
    /// when it is drainwatch's probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach: Option<attach::config::AttachConfig>,
}

fn one_client() -> u32 {
    1
}

// serde's skip_serializing_if passes a reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_one_client(n: &u32) -> bool {
    *n == 1
}

#[cfg(any(test, feature = "test-fixtures"))]
#[doc(hidden)]
pub mod fixtures;
#[cfg(test)]
pub(crate) mod tests;
