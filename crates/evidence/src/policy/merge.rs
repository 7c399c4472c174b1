//! Merging a policy with the command line: the policy's settings win, an explicit flag that
//! disagrees is an error, and every threshold must be measurable by the arm's resolved flows.

use super::combine;
use super::threshold::{Amount, Counted, Op, Scope, Threshold};
use super::{Arm, ArmPlan, Explicit, Policy, PolicyError};
use crate::flow::Proto;
use crate::plan::attach::ingress::IngressInput;
use crate::plan::attach::{AttachInput, AttachProtocol, TlsInput};
use crate::plan::{PlanInput, TrialConfig};

impl Policy {
    /// Keeps only the arms named in `names` (the `--arms` shortcut), in policy order.
    pub fn select(mut self, names: &[String]) -> Result<Self, PolicyError> {
        if names.is_empty() {
            return Ok(self);
        }
        let known = self
            .arms
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        if let Some(n) = names
            .iter()
            .find(|n| !self.arms.iter().any(|a| &a.name == *n))
        {
            return Err(PolicyError::UnknownArm {
                name: n.clone(),
                known,
            });
        }
        self.arms.retain(|a| names.contains(&a.name));
        Ok(self)
    }

    /// This policy with each arm's `repeat` as it was planned (the policy's own, or `--repeat`
    /// where the arm left it open), so that the verdict counts a planned trial that left no
    /// directory: a run cut short after trial 2 of `--repeat 3` is two trials of three, never
    /// "all" of two.
    pub fn as_planned(mut self, repeat_of: impl Fn(&str) -> Option<u32>) -> Self {
        for arm in &mut self.arms {
            if let Some(r) = repeat_of(&arm.name) {
                arm.settings.repeat = Some(r);
            }
        }
        self
    }

    /// Merges every arm with the flags: the policy's settings win, an explicit flag that
    /// disagrees is an error, and every threshold must be measurable by the arm's flows.
    pub fn plan(
        &self,
        flags: &PlanInput,
        explicit: &Explicit,
    ) -> Result<Vec<ArmPlan>, PolicyError> {
        self.arms.iter().map(|a| a.plan(flags, explicit)).collect()
    }
}

fn merge<T: PartialEq + Clone + std::fmt::Display>(
    arm: &str,
    policy: Option<&T>,
    flag: &T,
    explicit: bool,
    names: (&'static str, &'static str),
) -> Result<T, PolicyError> {
    match policy {
        Some(p) if explicit && p != flag => Err(PolicyError::FlagConflict {
            flag: names.0,
            flag_value: flag.to_string(),
            arm: arm.to_string(),
            key: names.1,
            policy_value: p.to_string(),
        }),
        Some(p) => Ok(p.clone()),
        None => Ok(flag.clone()),
    }
}

impl Arm {
    /// This arm merged with the flags, validated.
    pub fn plan(&self, flags: &PlanInput, explicit: &Explicit) -> Result<ArmPlan, PolicyError> {
        let mut input = self.merge_settings(flags, explicit)?;
        self.merge_attach(flags, &mut input)?;
        if input.attach.is_some() {
            self.attach_flows(&mut input, explicit)?;
        }
        let config = input.validate().map_err(|reason| PolicyError::Plan {
            arm: self.name.clone(),
            reason,
        })?;
        self.check_measurable(&config)?;
        let quorum = self.settings.quorum.unwrap_or_default();
        combine::check_quorum(&self.name, quorum, input.repeat)?;
        Ok(ArmPlan {
            name: self.name.clone(),
            config,
            repeat: input.repeat,
            quorum,
            retries: self.settings.retries.unwrap_or(0),
            per_trial: self
                .thresholds
                .iter()
                .filter(|t| !t.arm_level())
                .cloned()
                .collect(),
        })
    }

    /// The probe settings: the arm's value wins, an explicit flag that disagrees is refused.
    fn merge_settings(
        &self,
        flags: &PlanInput,
        explicit: &Explicit,
    ) -> Result<PlanInput, PolicyError> {
        let s = &self.settings;
        let n = self.name.as_str();
        let mut input = flags.clone();
        // A run without a behaviour (not the probe) has nothing for the policy to disagree with.
        input.drain_behavior = match flags.drain_behavior {
            Some(f) => Some(merge(
                n,
                s.behavior.as_ref(),
                &f,
                explicit.behavior,
                ("--drain-behavior", "behavior"),
            )?),
            None => s.behavior,
        };
        input.trigger = merge(
            n,
            s.trigger.as_ref(),
            &flags.trigger,
            explicit.trigger,
            ("--trigger", "trigger"),
        )?;
        input.grace_period_seconds = merge(
            n,
            s.grace_period_seconds.as_ref(),
            &flags.grace_period_seconds,
            explicit.grace_period,
            ("--grace-period", "grace-period-seconds"),
        )?;
        input.drain_max_seconds = merge(
            n,
            s.drain_max_seconds.as_ref(),
            &flags.drain_max_seconds,
            explicit.drain_max_seconds,
            ("--drain-max-seconds", "drain-max-seconds"),
        )?;
        input.tcp_flows = merge(
            n,
            s.tcp_flows.as_ref(),
            &flags.tcp_flows,
            explicit.tcp_flows,
            ("--tcp-flows", "tcp-flows"),
        )?;
        input.udp_flows = merge(
            n,
            s.udp_flows.as_ref(),
            &flags.udp_flows,
            explicit.udp_flows,
            ("--udp-flows", "udp-flows"),
        )?;
        input.repeat = merge(
            n,
            s.repeat.as_ref(),
            &flags.repeat,
            explicit.repeat,
            ("--repeat", "repeat"),
        )?;
        Ok(input)
    }

    /// The attach keys: the arm's target wins (a different `--target` is refused), and the
    /// flags fill the keys the arm leaves unset.
    fn merge_attach(&self, flags: &PlanInput, input: &mut PlanInput) -> Result<(), PolicyError> {
        let n = self.name.as_str();
        let Some(a) = &self.settings.attach else {
            return Ok(());
        };
        let f = flags.attach.clone().unwrap_or_default();
        if !f.target.is_empty() && f.target != a.target {
            return Err(PolicyError::FlagConflict {
                flag: "--target",
                flag_value: f.target,
                arm: n.to_string(),
                key: "target",
                policy_value: a.target.clone(),
            });
        }
        // The arm's keys win; flags fill what the arm leaves unset.
        input.attach = Some(AttachInput {
            target: a.target.clone(),
            target_namespace: a.target_namespace.clone().or(f.target_namespace),
            service: a.service.clone().or(f.service),
            port: a.port.clone().or(f.port),
            protocol: a.protocol.or(f.protocol),
            path: a.path.clone().or(f.path),
            expect_status: a.expect_status.or(f.expect_status),
            dial_rate: a.dial_rate.or(f.dial_rate),
            request_timeout_ms: a.request_timeout_ms.or(f.request_timeout_ms),
            // Key by key as above; a flag adds to what the arm leaves unset or false (a CA file
            // path is the host's, so a policy may leave it to --ca-file). A CA file and
            // verification off together are refused by the plan, wherever each came from.
            tls: TlsInput {
                tls: a.tls.tls || f.tls.tls,
                ca_file: a.tls.ca_file.clone().or(f.tls.ca_file),
                server_name: a.tls.server_name.clone().or(f.tls.server_name),
                insecure_skip_verify: a.tls.insecure_skip_verify || f.tls.insecure_skip_verify,
            },
            // The gRPC call is chosen by flags only: a policy gates what the wire showed.
            grpc_method: f.grpc_method,
            grpc_service: f.grpc_service,
            // The Watch is evidence a policy gates (no-watch-cut): the arm's key or the flag.
            grpc_watch: a.grpc_watch || f.grpc_watch,
            // Key by key: the arm's wins, a flag fills what the arm leaves unset.
            ingress: IngressInput {
                controller: a.ingress.controller.or(f.ingress.controller),
                service: a.ingress.service.clone().or(f.ingress.service),
                host: a.ingress.host.clone().or(f.ingress.host),
                managed: a.ingress.managed || f.ingress.managed,
                image: a.ingress.image.clone().or(f.ingress.image),
                provider: a.ingress.provider.or(f.ingress.provider),
            },
        });
        Ok(())
    }

    /// What attaching changes: no probe behaviour, no UDP by default, `flows` for held
    /// connections.
    fn attach_flows(&self, input: &mut PlanInput, explicit: &Explicit) -> Result<(), PolicyError> {
        let s = &self.settings;
        let n = self.name.as_str();
        // The user's workload is not the probe, and attach flows are tcp or http.
        input.drain_behavior = None;
        if s.udp_flows.is_none() && !explicit.udp_flows {
            input.udp_flows = 0;
        }
        input.tcp_flows = merge(
            n,
            s.flows.as_ref(),
            &input.tcp_flows,
            explicit.tcp_flows && s.tcp_flows.is_none(),
            ("--tcp-flows", "flows"),
        )?;
        Ok(())
    }

    /// Refuses a threshold the merged flows can never meet or never measure.
    pub fn check_measurable(&self, config: &TrialConfig) -> Result<(), PolicyError> {
        for t in &self.thresholds {
            let why = impossible(t, config)
                .or_else(|| super::baseline::impossible(t, config))
                .or_else(|| combine::impossible_distribution(t, config));
            if let Some(why) = why {
                return Err(PolicyError::Impossible {
                    arm: self.name.clone(),
                    threshold: t.to_string(),
                    why,
                });
            }
        }
        Ok(())
    }
}

/// Why `t` can never hold, or never be measured, with the flows `cfg` asks for.
fn impossible(t: &Threshold, cfg: &TrialConfig) -> Option<String> {
    let attached = cfg.kubernetes.as_ref().and_then(|k| k.attach.as_ref());
    let through_ingress = match t {
        Threshold::Interval { interval, .. } => interval.through_ingress(),
        Threshold::NoIngressHiddenRetry => true,
        _ => false,
    };
    if through_ingress && attached.is_none_or(|a| a.ingress.is_none()) {
        return Some(
            "it measures the requests an ingress routed: the arm needs an attached target sent through an ingress (ingress-service and ingress-host, or ingress-managed; or the flags)".into(),
        );
    }
    if t.attach_only() {
        return match attached {
            None => Some(
                "it measures an attached workload's requests and dials: the arm needs target = \"deployment/NAME\" (or --target)".into(),
            ),
            Some(a)
                if matches!(
                    t,
                    Threshold::NoNewConnectionRefused | Threshold::NoNewConnectionFailed
                ) && a.dial_rate == 0 =>
            {
                Some(
                "the arm's dial-rate is 0, so no new connection is dialled".into(),
            )
            }
            Some(a)
                if *t == Threshold::NoRequestFailed
                    && (cfg.tcp_flows == 0 || !a.protocol.sends_requests()) =>
            {
                Some("the arm holds no http, http2 or grpc flows, so no request is made".into())
            }
            Some(a) if t.h2_only() && !a.protocol.is_h2() => Some(format!(
                "a {} arm speaks no HTTP/2: only http2 and grpc arms see streams and GOAWAY",
                a.protocol
            )),
            Some(_) if t.h2_only() && cfg.tcp_flows == 0 => {
                Some("the arm holds no flows, so no stream is opened".into())
            }
            Some(a)
                if *t == Threshold::NoWatchCut
                    && (cfg.tcp_flows == 0 || !a.grpc.as_ref().is_some_and(|g| g.watch)) =>
            {
                Some("the arm holds no gRPC Watch: it needs protocol = \"grpc\" and grpc-watch = true (or --grpc-watch), and flows above 0".into())
            }
            Some(a)
                if *t == Threshold::NoWsAbnormalClose
                    && (cfg.tcp_flows == 0 || a.protocol != AttachProtocol::Websocket) =>
            {
                Some("the arm holds no websocket flows (protocol = \"websocket\"), so no WebSocket connection is held".into())
            }
            Some(_) => None,
        };
    }
    let Threshold::Count {
        scope,
        counted,
        op,
        amount,
    } = t
    else {
        return None;
    };
    let (flows, what) = match scope {
        Scope::All => (cfg.tcp_flows + cfg.udp_flows, "flows".to_string()),
        Scope::Proto(p) => (
            match p {
                Proto::Tcp => cfg.tcp_flows,
                Proto::Udp => cfg.udp_flows,
            },
            format!("{} flows", p.as_str()),
        ),
    };
    if flows == 0 {
        return Some(format!(
            "the arm runs no {what}, so there is nothing to count"
        ));
    }
    if *counted == Counted::Rehomed && *scope == Scope::Proto(Proto::Tcp) {
        return Some(
            "only udp flows are re-homed (a tcp connection cannot change its server)".into(),
        );
    }
    match (op, amount) {
        (Op::AtLeast, Amount::Flows(n)) if *n > flows => Some(format!(
            "it asks for at least {n} of the arm's {flows} {what}"
        )),
        (Op::AtMost, Amount::Flows(n)) if *n >= flows => Some(format!(
            "the arm runs {flows} {what}, so at most {n} always holds and gates nothing"
        )),
        _ => None,
    }
}

/// Parses the `--arms` shortcut: comma-separated arm names, blanks ignored.
pub fn parse_arm_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}
