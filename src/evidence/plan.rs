//! The validated trial plan: what a trial will do, decided before any socket opens.
//!
//! Flags become a [`TrialConfig`] through [`PlanInput::validate`], a pure function, so every
//! default and every refusal is a unit test and the report's `config` block shows what ran.

pub mod attach;

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

use attach::{AttachInput, AttachTarget};

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

/// Refusals of a plan; each names the flag or value at fault.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    /// `--drain-behavior` is not one of the three.
    #[error("unknown drain behavior {0:?}: expected drain, exit-now or ignore")]
    UnknownBehavior(String),
    /// A port flag is 0.
    #[error("{flag} must be a port between 1 and 65535, got 0")]
    ZeroPort {
        /// The flag at fault.
        flag: &'static str,
    },
    /// No flows of any kind were asked for.
    #[error("--tcp-flows and --udp-flows are both 0: a trial needs at least one flow")]
    NoFlows,
    /// More flows than the 4-digit ids allow.
    #[error(
        "{flag} is {count}: at most 9999 flows of one protocol per client process (--clients {} or more shards them over processes, local platform)",
        count.div_ceil(9999)
    )]
    TooManyFlows {
        /// The flag at fault.
        flag: &'static str,
        /// The value given.
        count: u32,
    },
    /// `--clients` is 0.
    #[error(
        "--clients must be at least 1 (the number of client processes the flows are sharded over)"
    )]
    ZeroClients,
    /// More client processes than flows of either protocol: some would hold nothing.
    #[error(
        "--clients {clients} is more than the {flows} flows of the larger protocol: every client process must hold at least one flow"
    )]
    ClientsAboveFlows {
        /// Clients asked for.
        clients: u32,
        /// max(--tcp-flows, --udp-flows).
        flows: u32,
    },
    /// Sharding is built for the local platform only.
    #[error(
        "--clients {0} is supported with --platform local only: on kubernetes the flows run in one client pod (or this process with --client host)"
    )]
    ClientsOnKubernetes(u32),
    /// The grace period is zero.
    #[error("--grace-period must be at least 1 second")]
    ZeroGrace,
    /// The drain window would not end before SIGKILL.
    #[error(
        "--drain-max-seconds {drain_max} is not below --grace-period {grace}: the drain would be cut by SIGKILL"
    )]
    DrainNotBeforeGrace {
        /// Drain window in seconds.
        drain_max: u32,
        /// Grace period in seconds.
        grace: u32,
    },
    /// The flow timeout cannot tell silence from a heartbeat interval.
    #[error("--flow-timeout ({timeout_ms} ms) must be longer than --interval ({interval_ms} ms)")]
    TimeoutNotAboveInterval {
        /// Flow timeout in ms.
        timeout_ms: u64,
        /// Interval in ms.
        interval_ms: u64,
    },
    /// The interval is zero.
    #[error("--interval must be at least 1 ms")]
    ZeroInterval,
    /// The silence rule would fire on every datagram.
    #[error("--udp-silence-datagrams must be at least 1")]
    ZeroSilence,
    /// `--repeat 0`.
    #[error("--repeat must be at least 1")]
    ZeroRepeat,
    /// The trigger is not one the platform knows.
    #[error("unknown trigger {trigger:?} for --platform {platform}: expected {expected}")]
    UnknownTrigger {
        /// The trigger given.
        trigger: String,
        /// The platform.
        platform: &'static str,
        /// What the platform accepts.
        expected: &'static str,
    },
    /// A `--probe-env` value is not `KEY=VALUE`.
    #[error("--probe-env {0:?} is not KEY=VALUE with a non-empty KEY")]
    BadProbeEnv(String),
    /// `--replicas 0`.
    #[error("--replicas must be at least 1: the trial needs a pod under test")]
    ZeroReplicas,
    /// `--readiness-period 0`.
    #[error("--readiness-period must be at least 1 second (the kubelet's minimum)")]
    ZeroReadinessPeriod,
    /// The preStop sleep plus the drain window would not end before SIGKILL.
    #[error(
        "--prestop-sleep {prestop} plus --drain-max-seconds {drain_max} is not below --grace-period {grace}: the preStop sleep counts against the grace period, so the drain would be cut by SIGKILL"
    )]
    PrestopDrainNotBeforeGrace {
        /// preStop sleep in seconds.
        prestop: u32,
        /// Drain window in seconds.
        drain_max: u32,
        /// Grace period in seconds.
        grace: u32,
    },
    /// `--target` is not `deployment/NAME` or `statefulset/NAME`.
    #[error(
        "--target {0:?} is not deployment/NAME or statefulset/NAME (NAME a lowercase DNS name)"
    )]
    BadTarget(String),
    /// `--protocol` is not one attach speaks.
    #[error("--protocol {0:?}: expected tcp or http")]
    BadProtocol(String),
    /// `--port` is neither a port number nor a port name.
    #[error("--port {0:?} is neither a port number 1-65535 nor a Service port name")]
    BadPort(String),
    /// A namespace or Service name that cannot be one.
    #[error("{flag} {value:?} is not a valid object name (lowercase DNS name)")]
    BadObjectName {
        /// The flag at fault.
        flag: &'static str,
        /// The value given.
        value: String,
    },
    /// `--path` or `--expect-status` with `--protocol tcp`.
    #[error("--path and --expect-status apply to --protocol http only")]
    HttpOnlyFlag,
    /// `--path` that is not an absolute request path.
    #[error("--path {0:?} must start with / and contain no whitespace")]
    BadPath(String),
    /// `--expect-status` outside the HTTP status range.
    #[error("--expect-status {0} is not an HTTP status (100-599)")]
    BadExpectStatus(u16),
    /// `--dial-rate` above the prober's bound.
    #[error("--dial-rate {0} is above {max} dials a second: the prober must not become a load test", max = attach::MAX_DIAL_RATE)]
    DialRateTooHigh(u32),
    /// Neither held flows nor the new-connection prober.
    #[error("--tcp-flows is 0 and --dial-rate is 0: an attach trial needs flows or dials")]
    NoAttachFlows,
    /// UDP flows against an attached workload.
    #[error(
        "--udp-flows {0}: with --target the flows are tcp or http (--protocol); set --udp-flows 0"
    )]
    UdpWithTarget(u32),
    /// Attach flags without `--target`.
    #[error("{0} needs --target")]
    NeedsTarget(&'static str),
    /// `--target` with `--client host`.
    #[error(
        "--target runs its flows from a client pod (dialling the Service's ClusterIP as in-cluster clients do): --client host is not supported with it"
    )]
    TargetWithHostClient,
    /// `--target` off Kubernetes.
    #[error("--target attaches to a Kubernetes workload: it needs --platform kubernetes")]
    TargetOffKubernetes,
    /// The observation window ends before the grace period.
    #[error(
        "--observe-timeout {observe} is shorter than --grace-period {grace}: the window would close before the kubelet's SIGKILL"
    )]
    ObserveShorterThanGrace {
        /// Observation window in seconds.
        observe: u32,
        /// Grace period in seconds.
        grace: u32,
    },
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
}

/// The default observation window of an attach trial, seconds: a rollout of a few replicas.
pub const ATTACH_OBSERVE_SECONDS: u32 = 180;

/// The flags of a trial as given, before defaults and validation.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanInput {
    /// The platform the workload runs on.
    pub platform: Platform,
    /// The probe's SIGTERM behaviour; `None` when the workload is not drainwatch's probe
    /// (a manual client run, an attached workload) and its behaviour is not ours to know.
    pub drain_behavior: Option<DrainBehavior>,
    /// The termination trigger's name as the platform knows it.
    pub trigger: String,
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
    pub trigger: String,
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
    pub attach: Option<crate::evidence::attach::AttachConfig>,
}

fn one_client() -> u32 {
    1
}

// serde's skip_serializing_if passes a reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_one_client(n: &u32) -> bool {
    *n == 1
}

fn check_clients(p: &PlanInput) -> Result<(), PlanError> {
    if p.clients == 0 {
        return Err(PlanError::ZeroClients);
    }
    if p.clients > 1 && p.platform == Platform::Kubernetes {
        return Err(PlanError::ClientsOnKubernetes(p.clients));
    }
    let flows = p.tcp_flows.max(p.udp_flows);
    // One client is the default and always fits (an attach run may dial without held flows).
    if p.clients > 1 && p.clients > flows {
        return Err(PlanError::ClientsAboveFlows {
            clients: p.clients,
            flows,
        });
    }
    Ok(())
}

impl PlanInput {
    /// Applies defaults and refuses contradictions; the result is what the trial runs.
    pub fn validate(&self) -> Result<TrialConfig, PlanError> {
        if self.tcp_port == 0 {
            return Err(PlanError::ZeroPort { flag: "--tcp-port" });
        }
        if self.udp_port == 0 {
            return Err(PlanError::ZeroPort { flag: "--udp-port" });
        }
        if self.ready_port == 0 {
            return Err(PlanError::ZeroPort {
                flag: "--ready-port",
            });
        }
        let attach = match (&self.attach, self.platform) {
            (Some(a), Platform::Kubernetes) => {
                if self.udp_flows > 0 {
                    return Err(PlanError::UdpWithTarget(self.udp_flows));
                }
                if self
                    .kubernetes
                    .as_ref()
                    .is_some_and(|k| k.client == ClientPlacement::Host)
                {
                    return Err(PlanError::TargetWithHostClient);
                }
                Some(a.validate(self.tcp_flows, &self.trigger)?)
            }
            (Some(_), Platform::Local) => return Err(PlanError::TargetOffKubernetes),
            (None, _) => None,
        };
        if attach.is_none() && self.tcp_flows == 0 && self.udp_flows == 0 {
            return Err(PlanError::NoFlows);
        }
        check_clients(self)?;
        for (flag, count) in [
            ("--tcp-flows", self.tcp_flows),
            ("--udp-flows", self.udp_flows),
        ] {
            // The 4-digit id limit holds per client process; sharded ids continue past it.
            if count.div_ceil(self.clients.max(1)) > 9999 {
                return Err(PlanError::TooManyFlows { flag, count });
            }
        }
        if self.grace_period_seconds == 0 {
            return Err(PlanError::ZeroGrace);
        }
        if self.interval_ms == 0 {
            return Err(PlanError::ZeroInterval);
        }
        if self.flow_timeout_ms <= self.interval_ms {
            return Err(PlanError::TimeoutNotAboveInterval {
                timeout_ms: self.flow_timeout_ms,
                interval_ms: self.interval_ms,
            });
        }
        if self.udp_silence_datagrams == 0 {
            return Err(PlanError::ZeroSilence);
        }
        if self.repeat == 0 {
            return Err(PlanError::ZeroRepeat);
        }
        if self.platform == Platform::Kubernetes
            && attach.is_none()
            && !matches!(self.trigger.as_str(), "delete" | "evict" | "scale")
        {
            return Err(PlanError::UnknownTrigger {
                trigger: self.trigger.clone(),
                platform: "kubernetes",
                expected: "delete, evict or scale",
            });
        }
        let prestop = match &self.kubernetes {
            Some(k) if k.replicas == 0 => return Err(PlanError::ZeroReplicas),
            Some(k) if k.readiness_period_seconds == 0 => {
                return Err(PlanError::ZeroReadinessPeriod);
            }
            Some(k) => {
                if let Some(bad) = k
                    .probe_env
                    .iter()
                    .find(|e| e.split_once('=').is_none_or(|(key, _)| key.is_empty()))
                {
                    return Err(PlanError::BadProbeEnv(bad.clone()));
                }
                k.prestop_sleep_seconds
            }
            None => 0,
        };
        let grace = self.grace_period_seconds;
        // SIGTERM arrives after the preStop sleep, so the default drain window starts there.
        let drain_max = match self.drain_max_seconds {
            0 => grace.saturating_sub(5).saturating_sub(prestop).max(1),
            n => n,
        };
        if self.drain_behavior == Some(DrainBehavior::Drain) && drain_max >= grace {
            return Err(PlanError::DrainNotBeforeGrace { drain_max, grace });
        }
        if self.drain_behavior == Some(DrainBehavior::Drain)
            && prestop > 0
            && prestop + drain_max >= grace
        {
            return Err(PlanError::PrestopDrainNotBeforeGrace {
                prestop,
                drain_max,
                grace,
            });
        }
        let observe = match self.observe_timeout_seconds {
            // An attached workload's disruption is a whole rollout or drain, not one pod's
            // grace period: the window is an upper bound, ended early once it has settled.
            0 if attach.is_some() => (grace + 30).max(ATTACH_OBSERVE_SECONDS),
            0 => grace + 30,
            n => n,
        };
        if observe < grace {
            return Err(PlanError::ObserveShorterThanGrace { observe, grace });
        }
        Ok(TrialConfig {
            platform: self.platform,
            tcp_flows: self.tcp_flows,
            udp_flows: self.udp_flows,
            grace_period_seconds: grace,
            drain_behavior: self.drain_behavior,
            drain_max_seconds: drain_max,
            exit_now_force_rst: self.exit_now_force_rst,
            trigger: self.trigger.clone(),
            workload: match (self.platform, &attach) {
                (Platform::Local, _) => "local-process".to_string(),
                (Platform::Kubernetes, Some(a)) => format!("attach {}", a.target),
                (Platform::Kubernetes, None) => "deploy".to_string(),
            },
            namespace: self.namespace.clone(),
            target_host: self.target_host.clone(),
            tcp_port: self.tcp_port,
            udp_port: self.udp_port,
            settle_seconds: self.settle_seconds,
            observe_timeout_seconds: observe,
            flow_timeout_seconds: self.flow_timeout_ms as f64 / 1000.0,
            interval_ms: self.interval_ms,
            udp_silence_datagrams: self.udp_silence_datagrams,
            post_terminal_grace_seconds: self.post_terminal_grace_seconds,
            clients: self.clients,
            kubernetes: self
                .kubernetes
                .clone()
                .map(|k| KubernetesConfig { attach, ..k }),
            // What an attach trial dials is known once the platform has resolved the target:
            // the platform fills it (`Platform::trial_config`).
            attach: None,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The default flags of `drainwatch run --platform local`, as a plan input.
    pub(crate) fn input() -> PlanInput {
        PlanInput {
            platform: Platform::Local,
            drain_behavior: Some(DrainBehavior::Drain),
            trigger: "sigterm".into(),
            grace_period_seconds: 30,
            drain_max_seconds: 0,
            exit_now_force_rst: true,
            tcp_flows: 10,
            udp_flows: 10,
            target_host: "127.0.0.1".into(),
            tcp_port: 7001,
            udp_port: 7002,
            ready_port: 7003,
            settle_seconds: 10,
            observe_timeout_seconds: 0,
            flow_timeout_ms: 10_000,
            interval_ms: 500,
            udp_silence_datagrams: 6,
            post_terminal_grace_seconds: 5,
            repeat: 1,
            namespace: None,
            kubernetes: None,
            clients: 1,
            attach: None,
        }
    }

    fn k8s_input() -> PlanInput {
        PlanInput {
            platform: Platform::Kubernetes,
            trigger: "delete".into(),
            kubernetes: Some(KubernetesConfig {
                image: "img".into(),
                replicas: 1,
                client: ClientPlacement::Pod,
                prestop_sleep_seconds: 0,
                readiness_period_seconds: 1,
                pdb: false,
                probe_env: vec![],
                attach: None,
            }),
            ..input()
        }
    }

    #[test]
    fn attach_plans_need_no_probe_and_no_udp() {
        let mut i = k8s_input();
        i.drain_behavior = None;
        i.udp_flows = 0;
        i.trigger = "rollout-restart".into();
        i.attach = Some(AttachInput {
            target: "deployment/web".into(),
            ..AttachInput::default()
        });
        let c = i.validate().unwrap();
        assert_eq!(c.workload, "attach deployment/web");
        assert_eq!(c.observe_timeout_seconds, ATTACH_OBSERVE_SECONDS);
        let a = c.kubernetes.unwrap().attach.unwrap();
        assert_eq!(a.target.to_string(), "deployment/web");
        let mut udp = i.clone();
        udp.udp_flows = 3;
        assert_eq!(udp.validate().unwrap_err(), PlanError::UdpWithTarget(3));
        let mut none = i.clone();
        none.tcp_flows = 0;
        if let Some(a) = none.attach.as_mut() {
            a.dial_rate = Some(0);
        }
        assert_eq!(none.validate().unwrap_err(), PlanError::NoAttachFlows);
        let mut probe = k8s_input();
        probe.trigger = "rollout-restart".into();
        assert!(
            probe
                .validate()
                .unwrap_err()
                .to_string()
                .contains("delete, evict or scale"),
            "the probe has no rollout to restart"
        );
        let mut local = input();
        local.attach = i.attach.clone();
        assert_eq!(
            local.validate().unwrap_err(),
            PlanError::TargetOffKubernetes
        );
    }

    #[test]
    fn kubernetes_triggers_and_prestop_are_validated() {
        assert!(k8s_input().validate().is_ok());
        let mut i = k8s_input();
        i.trigger = "sigterm".into();
        assert!(matches!(
            i.validate(),
            Err(PlanError::UnknownTrigger { .. })
        ));
        let mut i = k8s_input();
        if let Some(k) = i.kubernetes.as_mut() {
            k.prestop_sleep_seconds = 5;
        }
        // The default drain window shrinks by the preStop sleep: 30 - 5 - 5.
        assert_eq!(i.validate().unwrap().drain_max_seconds, 20);
        i.drain_max_seconds = 25;
        assert!(matches!(
            i.validate(),
            Err(PlanError::PrestopDrainNotBeforeGrace { .. })
        ));
        let mut i = k8s_input();
        if let Some(k) = i.kubernetes.as_mut() {
            k.replicas = 0;
        }
        assert_eq!(i.validate().unwrap_err(), PlanError::ZeroReplicas);
    }

    #[test]
    fn defaults_follow_the_grace_period() {
        let c = input().validate().unwrap();
        assert_eq!(c.drain_max_seconds, 25);
        assert_eq!(c.observe_timeout_seconds, 60);
        assert_eq!(c.flow_timeout_seconds, 10.0);
        let mut short = input();
        short.grace_period_seconds = 3;
        assert_eq!(short.validate().unwrap().drain_max_seconds, 1);
    }

    #[test]
    fn refusals_name_the_flag() {
        let mut i = input();
        i.tcp_port = 0;
        assert!(i.validate().unwrap_err().to_string().contains("--tcp-port"));
        let mut i = input();
        i.tcp_flows = 0;
        i.udp_flows = 0;
        assert_eq!(i.validate().unwrap_err(), PlanError::NoFlows);
        let mut i = input();
        i.drain_max_seconds = 30;
        assert!(matches!(
            i.validate(),
            Err(PlanError::DrainNotBeforeGrace { .. })
        ));
        let mut i = input();
        i.flow_timeout_ms = 500;
        assert!(
            i.validate()
                .unwrap_err()
                .to_string()
                .contains("--flow-timeout")
        );
        assert!(
            "graceful"
                .parse::<DrainBehavior>()
                .unwrap_err()
                .to_string()
                .contains("\"graceful\"")
        );
    }

    #[test]
    fn drain_window_may_equal_grace_when_not_draining() {
        let mut i = input();
        i.drain_behavior = Some(DrainBehavior::Ignore);
        i.drain_max_seconds = 30;
        assert!(i.validate().is_ok());
    }

    #[test]
    fn the_four_digit_limit_holds_per_client_process() {
        let mut i = input();
        (i.tcp_flows, i.udp_flows) = (18_000, 18_000);
        assert_eq!(
            i.validate().unwrap_err(),
            PlanError::TooManyFlows {
                flag: "--tcp-flows",
                count: 18_000
            }
        );
        let e = i.validate().unwrap_err().to_string();
        assert!(e.contains("--clients 2 or more"), "{e}");
        i.clients = 2;
        assert_eq!(i.validate().unwrap().clients, 2);
        i.clients = 0;
        assert_eq!(i.validate().unwrap_err(), PlanError::ZeroClients);
    }
}
