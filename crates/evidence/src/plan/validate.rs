//! [`PlanInput::validate`]: the flags refused in the order a reader meets them (ports, flows,
//! pacing, trigger, Kubernetes settings), then the windows whose defaults depend on each other
//! (the drain window on the grace period and the preStop sleep, the observation window on the
//! grace period and the workload).

use super::attach::AttachTarget;
use super::clients;
use super::error::PlanError;
use super::{
    ATTACH_OBSERVE_SECONDS, ClientPlacement, DrainBehavior, KubernetesConfig, PlanInput, Platform,
    TrialConfig,
};
use crate::trigger::Trigger;

impl PlanInput {
    /// Applies defaults and refuses contradictions; the result is what the trial runs.
    pub fn validate(&self) -> Result<TrialConfig, PlanError> {
        self.check_ports()?;
        let attach = attach_target(self)?;
        if attach.is_none() && self.tcp_flows == 0 && self.udp_flows == 0 {
            return Err(PlanError::NoFlows);
        }
        clients::check(self)?;
        self.check_pacing()?;
        self.check_trigger(attach.is_some())?;
        let prestop = self.prestop_seconds()?;
        let drain_max = self.drain_window(prestop)?;
        let observe = self.observe_window(attach.is_some())?;
        Ok(self.config(attach, drain_max, observe))
    }

    fn check_ports(&self) -> Result<(), PlanError> {
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
        Ok(())
    }

    /// Grace, ping interval, flow timeout, UDP silence and repeat: the trial's clocks.
    fn check_pacing(&self) -> Result<(), PlanError> {
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
        Ok(())
    }

    /// The probe's triggers; an attach trial's are checked with its other flags.
    fn check_trigger(&self, attached: bool) -> Result<(), PlanError> {
        let accepted: &[Trigger] = match (self.platform, attached) {
            // Without drainwatch's probe (a manual `client` run) no trigger is ours to issue.
            (Platform::Local, _) if self.drain_behavior.is_none() => &Trigger::MANUAL,
            (Platform::Local, _) => &Trigger::LOCAL,
            (Platform::Kubernetes, false) => &Trigger::PROBE_KUBERNETES,
            // checked with the target's other flags
            (Platform::Kubernetes, true) => &Trigger::ATTACH,
        };
        if !accepted.contains(&self.trigger) {
            return Err(PlanError::TriggerNotAccepted {
                trigger: self.trigger,
                platform: self.platform.as_str(),
                expected: Trigger::list(accepted),
            });
        }
        Ok(())
    }

    /// The Kubernetes settings' refusals; the preStop sleep (0 off Kubernetes) is what the
    /// drain window needs of them.
    fn prestop_seconds(&self) -> Result<u32, PlanError> {
        match &self.kubernetes {
            Some(k) if k.replicas == 0 => Err(PlanError::ZeroReplicas),
            Some(k) if k.readiness_period_seconds == 0 => Err(PlanError::ZeroReadinessPeriod),
            Some(k) => {
                if let Some(bad) = k
                    .probe_env
                    .iter()
                    .find(|e| e.split_once('=').is_none_or(|(key, _)| key.is_empty()))
                {
                    return Err(PlanError::BadProbeEnv(bad.clone()));
                }
                Ok(k.prestop_sleep_seconds)
            }
            None => Ok(0),
        }
    }

    /// DRAIN_MAX_SECONDS: given, or the grace period less a margin and the preStop sleep; a
    /// draining probe must close before the kubelet's SIGKILL.
    fn drain_window(&self, prestop: u32) -> Result<u32, PlanError> {
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
        Ok(drain_max)
    }

    /// The observation window: given, or long enough to see the kubelet's SIGKILL.
    fn observe_window(&self, attached: bool) -> Result<u32, PlanError> {
        let grace = self.grace_period_seconds;
        let observe = match self.observe_timeout_seconds {
            // An attached workload's disruption is a whole rollout or drain, not one pod's
            // grace period: the window is an upper bound, ended early once it has settled.
            0 if attached => (grace + 30).max(ATTACH_OBSERVE_SECONDS),
            0 => grace + 30,
            n => n,
        };
        if observe < grace {
            return Err(PlanError::ObserveShorterThanGrace { observe, grace });
        }
        Ok(observe)
    }

    fn config(&self, attach: Option<AttachTarget>, drain_max: u32, observe: u32) -> TrialConfig {
        TrialConfig {
            platform: self.platform,
            tcp_flows: self.tcp_flows,
            udp_flows: self.udp_flows,
            grace_period_seconds: self.grace_period_seconds,
            drain_behavior: self.drain_behavior,
            drain_max_seconds: drain_max,
            exit_now_force_rst: self.exit_now_force_rst,
            trigger: self.trigger,
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
            kubernetes: self.kubernetes.clone().map(|k| KubernetesConfig {
                attach,
                shard_placement: super::clients::placement(self),
                ..k
            }),
            // What an attach trial dials is known once the platform has resolved the target:
            // the platform fills it (`Platform::trial_config`).
            attach: None,
        }
    }
}

/// `--target` and what it rules out: UDP flows, a host client, any platform but Kubernetes.
/// `None` without a target: the probe is deployed and measured.
fn attach_target(p: &PlanInput) -> Result<Option<AttachTarget>, PlanError> {
    match (&p.attach, p.platform) {
        (Some(a), Platform::Kubernetes) => {
            if p.udp_flows > 0 {
                return Err(PlanError::UdpWithTarget(p.udp_flows));
            }
            if p.kubernetes
                .as_ref()
                .is_some_and(|k| k.client == ClientPlacement::Host)
            {
                return Err(PlanError::TargetWithHostClient);
            }
            Ok(Some(a.validate(p.tcp_flows, p.trigger)?))
        }
        (Some(_), Platform::Local) => Err(PlanError::TargetOffKubernetes),
        (None, _) => Ok(None),
    }
}
