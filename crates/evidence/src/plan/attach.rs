//! The attach plan: the user's own Deployment or StatefulSet, reached through its Service, is
//! measured instead of drainwatch's probe. Which objects exist is a question for the cluster
//! (the platform's preflight); what is asked for is decided here, purely, before anything runs.

pub mod config;
pub mod ingress;
mod tls;

pub use tls::{TargetTls, TlsInput};

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

use super::error::PlanError;
use crate::trigger::Trigger;

/// The kind of workload attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// apps/v1 Deployment.
    Deployment,
    /// apps/v1 StatefulSet.
    StatefulSet,
}

impl WorkloadKind {
    /// The name used in `--target` and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deployment => "deployment",
            Self::StatefulSet => "statefulset",
        }
    }
}

/// `--target KIND/NAME`, kept as written in the report (`deployment/web`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetRef {
    /// Deployment or StatefulSet.
    pub kind: WorkloadKind,
    /// The object's name.
    pub name: String,
}

impl fmt::Display for TargetRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.kind.as_str(), self.name)
    }
}

impl FromStr for TargetRef {
    type Err = PlanError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || PlanError::BadTarget(s.to_string());
        let (kind, name) = s.split_once('/').ok_or_else(bad)?;
        let kind = match kind.to_ascii_lowercase().as_str() {
            "deployment" | "deployments" | "deploy" => WorkloadKind::Deployment,
            "statefulset" | "statefulsets" | "sts" => WorkloadKind::StatefulSet,
            _ => return Err(bad()),
        };
        if !dns_name(name) {
            return Err(bad());
        }
        Ok(Self {
            kind,
            name: name.to_string(),
        })
    }
}

impl Serialize for TargetRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TargetRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A DNS-1123 subdomain, as object names are.
fn dns_name(n: &str) -> bool {
    (1..=253).contains(&n.len())
        && n.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && n.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && n.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric())
}

pub use config::AttachProtocol;

/// A Service port, by number or by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PortRef {
    /// `port` of the Service.
    Number(u16),
    /// `name` of one of the Service's ports.
    Name(String),
}

impl FromStr for PortRef {
    type Err = PlanError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.bytes().all(|b| b.is_ascii_digit()) {
            return match s.parse::<u16>() {
                Ok(n) if n > 0 => Ok(Self::Number(n)),
                _ => Err(PlanError::BadPort(s.to_string())),
            };
        }
        if s.is_empty() || s.len() > 63 {
            return Err(PlanError::BadPort(s.to_string()));
        }
        Ok(Self::Name(s.to_string()))
    }
}

impl fmt::Display for PortRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::Name(n) => f.write_str(n),
        }
    }
}

/// The default new-connection dial rate, per second.
pub const DEFAULT_DIAL_RATE: u32 = 20;

/// The highest dial rate accepted: the prober must not become a load test.
pub const MAX_DIAL_RATE: u32 = 1000;

/// The default time allowed for one dial and one request, ms.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 2_000;

/// The longest request timeout accepted, ms: dials in flight grow with it (the client's open
/// files are bounded), and a client that waits a minute has stopped measuring a drain.
pub const MAX_REQUEST_TIMEOUT_MS: u64 = 60_000;

/// The attach flags as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AttachInput {
    /// `--target`.
    pub target: String,
    /// `--target-namespace`.
    pub target_namespace: Option<String>,
    /// `--service`.
    pub service: Option<String>,
    /// `--port`.
    pub port: Option<String>,
    /// `--protocol`.
    pub protocol: Option<AttachProtocol>,
    /// `--path`.
    pub path: Option<String>,
    /// `--expect-status`.
    pub expect_status: Option<u16>,
    /// `--dial-rate`.
    pub dial_rate: Option<u32>,
    /// `--request-timeout`, ms.
    pub request_timeout_ms: Option<u64>,
    /// `--tls`, `--ca-file`, `--server-name`, `--insecure-skip-verify`.
    pub tls: TlsInput,
    /// `--grpc-method`.
    pub grpc_method: Option<String>,
    /// `--grpc-service`.
    pub grpc_service: Option<String>,
    /// `--grpc-watch` (policy key `grpc-watch`).
    pub grpc_watch: bool,
    /// `--ingress`, `--ingress-service`, `--ingress-host`, `--ingress-managed`,
    /// `--ingress-image`, `--ingress-provider`.
    pub ingress: ingress::IngressInput,
}

/// A validated attach request, as asked for (`config.kubernetes.attach` in the report): which
/// workload, Service and port, and how to dial it. What it resolved to on the cluster (the
/// ClusterIP and port number dialled) is the trial's `config.attach`, filled by the platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachTarget {
    /// `deployment/NAME` or `statefulset/NAME`.
    pub target: TargetRef,
    /// The target's namespace; null means the kubeconfig context's namespace.
    pub target_namespace: Option<String>,
    /// The Service dialled; null means the one Service selecting the target's pods.
    pub service: Option<String>,
    /// The Service port; null means the Service's only port.
    pub port: Option<PortRef>,
    /// What the flows speak.
    pub protocol: AttachProtocol,
    /// HTTP request path or WebSocket handshake target (null for tcp).
    pub path: Option<String>,
    /// The HTTP status a served request answers (null for tcp and websocket: 101).
    pub expect_status: Option<u16>,
    /// New connections dialled per second through the whole window (0: no prober).
    pub dial_rate: u32,
    /// The time the clients allow one dial and one request, ms (`--request-timeout`, schema
    /// 5.2): a request the ingress retries succeeds for them only within it. Absent in earlier
    /// reports, whose clients allowed 2 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_timeout_ms: Option<u64>,
    /// TLS on every connection and dial (schema 2.0, optional); absent: plain TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TargetTls>,
    /// What a gRPC arm calls (schema 3.0); absent on the other protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<config::AttachGrpc>,
    /// The ingress the flows go through (schema 5.2); absent: the Service's ClusterIP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<ingress::IngressTarget>,
}

impl AttachInput {
    /// Validates the attach flags given `tcp_flows` (the flows of the chosen protocol) and the
    /// trigger.
    pub fn validate(&self, tcp_flows: u32, trigger: Trigger) -> Result<AttachTarget, PlanError> {
        let target = self.target_ref()?;
        self.check_object_names()?;
        let protocol = self.protocol.unwrap_or(AttachProtocol::Http);
        let port = self.port.as_deref().map(str::parse).transpose()?;
        let (path, expect_status) = self.http_request(protocol)?;
        let grpc = config::AttachGrpc::of(
            protocol,
            self.grpc_method.as_deref(),
            self.grpc_service.as_deref(),
            self.grpc_watch,
        )
        .map_err(|e| PlanError::Grpc(e.to_string()))?;
        let dial_rate = self.dial_rate.unwrap_or(DEFAULT_DIAL_RATE);
        let tls = self.tls.validate()?;
        let ingress = self.ingress.validate(protocol, tls.is_some())?;
        if dial_rate > MAX_DIAL_RATE {
            return Err(PlanError::DialRateTooHigh {
                rate: dial_rate,
                max: MAX_DIAL_RATE,
            });
        }
        if tcp_flows == 0 && dial_rate == 0 {
            return Err(PlanError::NoAttachFlows);
        }
        let request_timeout_ms = self
            .request_timeout_ms
            .unwrap_or(DEFAULT_REQUEST_TIMEOUT_MS);
        if !(1..=MAX_REQUEST_TIMEOUT_MS).contains(&request_timeout_ms) {
            return Err(PlanError::RequestTimeout {
                ms: request_timeout_ms,
                max: MAX_REQUEST_TIMEOUT_MS,
            });
        }
        if !Trigger::ATTACH.contains(&trigger) {
            return Err(PlanError::TriggerNotAccepted {
                trigger,
                platform: "kubernetes with --target",
                expected: Trigger::list(&Trigger::ATTACH),
            });
        }
        Ok(AttachTarget {
            target,
            target_namespace: self.target_namespace.clone(),
            service: self.service.clone(),
            port,
            protocol,
            path,
            expect_status,
            dial_rate,
            request_timeout_ms: Some(request_timeout_ms),
            tls,
            grpc,
            ingress,
        })
    }

    /// `--target`; without it, the first attach flag given is the one at fault.
    fn target_ref(&self) -> Result<TargetRef, PlanError> {
        if self.target.is_empty() {
            let given = [
                ("--target-namespace", self.target_namespace.is_some()),
                ("--service", self.service.is_some()),
                ("--port", self.port.is_some()),
                ("--protocol", self.protocol.is_some()),
                ("--path", self.path.is_some()),
                ("--expect-status", self.expect_status.is_some()),
                ("--dial-rate", self.dial_rate.is_some()),
                ("--request-timeout", self.request_timeout_ms.is_some()),
                ("--tls", self.tls.tls),
                ("--ca-file", self.tls.ca_file.is_some()),
                ("--server-name", self.tls.server_name.is_some()),
                ("--insecure-skip-verify", self.tls.insecure_skip_verify),
                ("--grpc-method", self.grpc_method.is_some()),
                ("--grpc-service", self.grpc_service.is_some()),
                ("--grpc-watch", self.grpc_watch),
                ("--ingress", self.ingress.controller.is_some()),
                ("--ingress-service", self.ingress.service.is_some()),
                ("--ingress-host", self.ingress.host.is_some()),
                ("--ingress-managed", self.ingress.managed),
                ("--ingress-image", self.ingress.image.is_some()),
                ("--ingress-provider", self.ingress.provider.is_some()),
            ];
            let flag = given
                .iter()
                .find(|(_, g)| *g)
                .map_or("--target", |(f, _)| f);
            return Err(PlanError::NeedsTarget(flag));
        }
        self.target.parse()
    }

    fn check_object_names(&self) -> Result<(), PlanError> {
        for (flag, v) in [
            ("--target-namespace", &self.target_namespace),
            ("--service", &self.service),
        ] {
            if let Some(v) = v.as_deref().filter(|v| !dns_name(v)) {
                return Err(PlanError::BadObjectName {
                    flag,
                    value: v.to_string(),
                });
            }
        }
        Ok(())
    }

    /// `--path` and `--expect-status`: defaulted for HTTP and HTTP/2, the path alone for
    /// WebSocket, refused for TCP and gRPC (whose method names the path).
    fn http_request(
        &self,
        protocol: AttachProtocol,
    ) -> Result<(Option<String>, Option<u16>), PlanError> {
        match protocol {
            AttachProtocol::Tcp | AttachProtocol::Grpc => {
                if self.path.is_some() || self.expect_status.is_some() {
                    return Err(PlanError::HttpOnlyFlag);
                }
                Ok((None, None))
            }
            AttachProtocol::Http | AttachProtocol::Http2 | AttachProtocol::Websocket => {
                let path = self.path.clone().unwrap_or_else(|| "/".into());
                if !path.starts_with('/') || path.bytes().any(|b| b.is_ascii_whitespace()) {
                    return Err(PlanError::BadPath(path));
                }
                if protocol == AttachProtocol::Websocket {
                    // The handshake's good answer is 101 by RFC 6455, not a choice.
                    if self.expect_status.is_some() {
                        return Err(PlanError::HttpOnlyFlag);
                    }
                    return Ok((Some(path), None));
                }
                let status = self.expect_status.unwrap_or(200);
                if !(100..=599).contains(&status) {
                    return Err(PlanError::BadExpectStatus(status));
                }
                Ok((Some(path), Some(status)))
            }
        }
    }
}

#[cfg(test)]
mod tests;
