//! [`Policy::parse`]: the TOML as written (`Raw*`, `deny_unknown_fields`), then each arm
//! checked in the order its keys are read: name, attach keys, thresholds.

use serde::Deserialize;

use super::combine::{check_retries, parse_quorum};
use super::threshold::{self, Threshold};
use super::{Arm, ArmSettings, OnMissingBaseline, POLICY_VERSION, Policy, PolicyError};
use crate::plan::DrainBehavior;
use crate::plan::attach::ingress::{IngressController, IngressInput, IngressProvider};
use crate::plan::attach::{AttachInput, AttachProtocol, TlsInput};
use crate::trigger::Trigger;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawPolicy {
    version: u32,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    on_missing_baseline: OnMissingBaseline,
    #[serde(default)]
    arm: Vec<RawArm>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawArm {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    behavior: Option<DrainBehavior>,
    #[serde(default)]
    trigger: Option<Trigger>,
    #[serde(default)]
    grace_period_seconds: Option<u32>,
    #[serde(default)]
    drain_max_seconds: Option<u32>,
    #[serde(default)]
    tcp_flows: Option<u32>,
    #[serde(default)]
    udp_flows: Option<u32>,
    #[serde(default)]
    repeat: Option<u32>,
    #[serde(default)]
    quorum: Option<String>,
    #[serde(default)]
    retries: Option<u32>,
    #[serde(default)]
    thresholds: Vec<String>,
    #[serde(default)]
    on_missing_baseline: Option<OnMissingBaseline>,
    // Attach arms: the user's own workload, as `drainwatch run --target` measures it.
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    target_namespace: Option<String>,
    #[serde(default)]
    service: Option<String>,
    #[serde(default)]
    port: Option<PortKey>,
    #[serde(default)]
    protocol: Option<AttachProtocol>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    expect_status: Option<u16>,
    #[serde(default)]
    dial_rate: Option<u32>,
    #[serde(default)]
    request_timeout_ms: Option<u64>,
    #[serde(default)]
    flows: Option<u32>,
    #[serde(default)]
    tls: Option<bool>,
    #[serde(default)]
    ca_file: Option<String>,
    #[serde(default)]
    server_name: Option<String>,
    #[serde(default)]
    insecure_skip_verify: Option<bool>,
    #[serde(default)]
    grpc_watch: Option<bool>,
    #[serde(default)]
    ingress: Option<IngressController>,
    #[serde(default)]
    ingress_service: Option<String>,
    #[serde(default)]
    ingress_host: Option<String>,
    #[serde(default)]
    ingress_managed: Option<bool>,
    #[serde(default)]
    ingress_image: Option<String>,
    #[serde(default)]
    ingress_provider: Option<IngressProvider>,
}

/// `port = 80` or `port = "http"`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum PortKey {
    Number(u16),
    Name(String),
}

fn valid_name(n: &str) -> bool {
    (1..=63).contains(&n.len())
        && n.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !n.starts_with('-')
}

impl Policy {
    /// Parses and validates a policy file's text.
    pub fn parse(text: &str) -> Result<Self, PolicyError> {
        // toml's message carries the line, the column, the offending key and the keys allowed.
        let raw: RawPolicy = toml::from_str(text)
            .map_err(|e| PolicyError::Syntax(e.to_string().trim_end().to_string()))?;
        if raw.version != POLICY_VERSION {
            return Err(PolicyError::Version { found: raw.version });
        }
        if raw.arm.is_empty() {
            return Err(PolicyError::NoArms);
        }
        let mut arms: Vec<Arm> = Vec::with_capacity(raw.arm.len());
        for a in raw.arm {
            if !valid_name(&a.name) {
                return Err(PolicyError::BadName(a.name));
            }
            if arms.iter().any(|b| b.name == a.name) {
                return Err(PolicyError::DuplicateArm(a.name));
            }
            arms.push(a.into_arm()?);
        }
        Ok(Self {
            description: raw.description,
            arms,
            on_missing_baseline: raw.on_missing_baseline,
        })
    }
}

impl RawArm {
    fn into_arm(self) -> Result<Arm, PolicyError> {
        let attach = self.attach()?;
        let thresholds = self.thresholds()?;
        let quorum = self
            .quorum
            .as_deref()
            .map(|text| {
                parse_quorum(text).map_err(|reason| PolicyError::Quorum {
                    arm: self.name.clone(),
                    text: text.to_string(),
                    reason,
                })
            })
            .transpose()?;
        let retries = self
            .retries
            .map(|r| check_retries(&self.name, r))
            .transpose()?;
        Ok(Arm {
            name: self.name,
            description: self.description,
            settings: ArmSettings {
                behavior: self.behavior,
                trigger: self.trigger,
                grace_period_seconds: self.grace_period_seconds,
                drain_max_seconds: self.drain_max_seconds,
                tcp_flows: self.tcp_flows,
                udp_flows: self.udp_flows,
                repeat: self.repeat,
                quorum,
                retries,
                flows: self.flows,
                attach,
            },
            thresholds,
            on_missing_baseline: self.on_missing_baseline,
        })
    }

    /// The attach keys as flags would give them; attach keys without `target` are refused.
    fn attach(&self) -> Result<Option<AttachInput>, PolicyError> {
        let keys = [
            ("target-namespace", self.target_namespace.is_some()),
            ("service", self.service.is_some()),
            ("port", self.port.is_some()),
            ("protocol", self.protocol.is_some()),
            ("path", self.path.is_some()),
            ("expect-status", self.expect_status.is_some()),
            ("dial-rate", self.dial_rate.is_some()),
            ("request-timeout-ms", self.request_timeout_ms.is_some()),
            ("flows", self.flows.is_some()),
            ("tls", self.tls.is_some()),
            ("ca-file", self.ca_file.is_some()),
            ("server-name", self.server_name.is_some()),
            ("insecure-skip-verify", self.insecure_skip_verify.is_some()),
            ("grpc-watch", self.grpc_watch.is_some()),
            ("ingress", self.ingress.is_some()),
            ("ingress-service", self.ingress_service.is_some()),
            ("ingress-host", self.ingress_host.is_some()),
            ("ingress-managed", self.ingress_managed.is_some()),
            ("ingress-image", self.ingress_image.is_some()),
            ("ingress-provider", self.ingress_provider.is_some()),
        ];
        if let (None, Some((key, _))) = (&self.target, keys.iter().find(|(_, set)| *set)) {
            return Err(PolicyError::AttachKeyWithoutTarget {
                arm: self.name.clone(),
                key,
            });
        }
        Ok(self.target.clone().map(|target| AttachInput {
            target,
            target_namespace: self.target_namespace.clone(),
            service: self.service.clone(),
            port: self.port.as_ref().map(|p| match p {
                PortKey::Number(n) => n.to_string(),
                PortKey::Name(n) => n.clone(),
            }),
            protocol: self.protocol,
            path: self.path.clone(),
            expect_status: self.expect_status,
            dial_rate: self.dial_rate,
            request_timeout_ms: self.request_timeout_ms,
            tls: self.tls_keys(),
            grpc_method: None,
            grpc_service: None,
            // Whether the Watch is held is the arm's to say: it is what `no-watch-cut` gates.
            grpc_watch: self.grpc_watch.unwrap_or(false),
            ingress: IngressInput {
                controller: self.ingress,
                service: self.ingress_service.clone(),
                host: self.ingress_host.clone(),
                managed: self.ingress_managed.unwrap_or(false),
                image: self.ingress_image.clone(),
                provider: self.ingress_provider,
            },
        }))
    }

    /// The TLS keys; `tls = false` and `insecure-skip-verify = false` are the defaults spelt
    /// out. Which go together is the plan's rule, as for the flags.
    fn tls_keys(&self) -> TlsInput {
        TlsInput {
            tls: self.tls.unwrap_or(false),
            ca_file: self.ca_file.clone(),
            server_name: self.server_name.clone(),
            insecure_skip_verify: self.insecure_skip_verify.unwrap_or(false),
        }
    }

    /// The thresholds parsed, in file order; none, or one twice, is refused.
    fn thresholds(&self) -> Result<Vec<Threshold>, PolicyError> {
        if self.thresholds.is_empty() {
            return Err(PolicyError::NoThresholds(self.name.clone()));
        }
        let mut thresholds: Vec<Threshold> = Vec::with_capacity(self.thresholds.len());
        for text in &self.thresholds {
            let t = threshold::parse(text).map_err(|reason| PolicyError::Threshold {
                arm: self.name.clone(),
                text: text.clone(),
                reason,
            })?;
            if thresholds.contains(&t) {
                return Err(PolicyError::DuplicateThreshold {
                    arm: self.name.clone(),
                    threshold: t.to_string(),
                });
            }
            thresholds.push(t);
        }
        Ok(thresholds)
    }
}
