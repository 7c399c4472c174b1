//! The objects a trial creates, built from typed k8s-openapi structs: a pure function of the
//! trial's settings, so `drainwatch manifests` prints exactly what `run` applies.
//!
//! Every object carries `app.kubernetes.io/managed-by: drainwatch`, the run's mark
//! `drainwatch.dev/run: <run id>` (what teardown and `cleanup --run` select, so a run deletes
//! only what it created) and the trial's instance label (so two trials never select each
//! other's pods). Pods run under the restricted Pod Security profile, which the namespace
//! enforces.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EnvVar, EnvVarSource, HTTPGetAction, Lifecycle,
    LifecycleHandler, Namespace, ObjectFieldSelector, PodSecurityContext, PodSpec, PodTemplateSpec,
    Probe, ResourceRequirements, SeccompProfile, SecurityContext, Service, ServicePort,
    ServiceSpec, SleepAction,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{
    PROBE_CONTAINER, PROBE_NAME, PROBE_READY_PORT, PROBE_TCP_PORT, PROBE_UDP_PORT, labels,
};
use crate::evidence::plan::{ClientPlacement, DrainBehavior, KubernetesConfig, TrialConfig};
use crate::probe::config::vars;
use select::labels_of;

mod ca;
mod client;
mod select;
pub use ca::{client_ca, client_ca_path};
pub use client::{ClientSpec, client_pod};
pub use select::{
    managed_selector, marked_by, owned_selector, probe_selector, run_selector, trial_selector,
};

/// The probe workload of one trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadSpec {
    /// Namespace of every object.
    pub namespace: String,
    /// Value of the instance label: the trial's key.
    pub instance: String,
    /// Value of the run label: the run id.
    pub run: String,
    /// Probe image.
    pub image: String,
    /// Deployment replicas.
    pub replicas: u32,
    /// SIGTERM behaviour.
    pub behavior: DrainBehavior,
    /// Drain window, seconds.
    pub drain_max_seconds: u32,
    /// SO_LINGER 0 under exit-now.
    pub exit_now_force_rst: bool,
    /// terminationGracePeriodSeconds.
    pub grace_period_seconds: u32,
    /// preStop sleep, seconds (0: no hook).
    pub prestop_sleep_seconds: u32,
    /// Readiness probe period, seconds.
    pub readiness_period_seconds: u32,
    /// Service port for TCP.
    pub tcp_port: u16,
    /// Service port for UDP.
    pub udp_port: u16,
    /// NodePort Service (the host client dials a node) instead of ClusterIP.
    pub node_port: bool,
    /// A PodDisruptionBudget that forbids every voluntary disruption.
    pub pdb: bool,
    /// Extra probe environment, `KEY=VALUE`, applied after drainwatch's own (so it can override).
    pub probe_env: Vec<String>,
    /// The trial's flows (TCP + UDP), which the replicas share: their CPU request follows it.
    pub flows: u64,
    /// The probe's heartbeat period, ms: the trial's ping interval.
    pub heartbeat_ms: u64,
}

impl WorkloadSpec {
    /// The workload a validated trial configuration and its Kubernetes settings ask for; the
    /// one place `run` and `drainwatch manifests` both build it, so what is printed is what runs.
    pub fn from_config(
        namespace: String,
        instance: String,
        run: String,
        behavior: DrainBehavior,
        cfg: &TrialConfig,
        k: &KubernetesConfig,
    ) -> Self {
        Self {
            namespace,
            instance,
            run,
            image: k.image.clone(),
            replicas: k.replicas,
            behavior,
            drain_max_seconds: cfg.drain_max_seconds,
            exit_now_force_rst: cfg.exit_now_force_rst,
            grace_period_seconds: cfg.grace_period_seconds,
            prestop_sleep_seconds: k.prestop_sleep_seconds,
            readiness_period_seconds: k.readiness_period_seconds,
            tcp_port: cfg.tcp_port,
            udp_port: cfg.udp_port,
            node_port: k.client == ClientPlacement::Host,
            pdb: k.pdb,
            probe_env: k.probe_env.clone(),
            flows: u64::from(cfg.tcp_flows) + u64::from(cfg.udp_flows),
            heartbeat_ms: cfg.interval_ms,
        }
    }
}

fn meta(name: &str, spec_ns: &str, component: &str, instance: &str, run: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: Some(spec_ns.to_string()),
        labels: Some(labels_of(component, instance, run)),
        ..ObjectMeta::default()
    }
}

/// The trial's namespace, enforcing the restricted Pod Security profile, marked with its run.
pub fn namespace(name: &str, run: &str) -> Namespace {
    let l = BTreeMap::from([
        (labels::MANAGED_BY.to_string(), labels::MANAGER.to_string()),
        (labels::PSA_ENFORCE.to_string(), "restricted".to_string()),
        (labels::INSTANCE.to_string(), name.to_string()),
        (labels::RUN.to_string(), run.to_string()),
    ]);
    Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(l),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    }
}

/// Non-root, read-only, no capabilities, RuntimeDefault seccomp: what `restricted` demands.
fn restricted() -> (PodSecurityContext, SecurityContext) {
    (
        PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(65532),
            run_as_group: Some(65532),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".into(),
                ..SeccompProfile::default()
            }),
            ..PodSecurityContext::default()
        },
        SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            run_as_non_root: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                ..Capabilities::default()
            }),
            ..SecurityContext::default()
        },
    )
}

/// CPU asked per 1,000 flows a pod holds, in millicores: a client pod measured 40-50m per
/// 1,000 flows (results/2026-12-03-shards-scale). The request is the pod's weight when the
/// node's cores are contended (cgroup cpu.shares): at the 10m floor a pod holding thousands of
/// flows loses to every host process (1,024 shares each) and its heartbeats fall behind.
const CPU_MILLIS_PER_1000_FLOWS: u64 = 50;
/// The floor and the ceiling of that request: a small trial asks for next to nothing, a large
/// one never for more than a core (it must still fit on small nodes).
const CPU_MILLIS_MIN: u64 = 10;
const CPU_MILLIS_MAX: u64 = 1000;

/// The CPU a pod holding `flows` flows requests, in millicores.
pub fn cpu_request_millis(flows: u64) -> u64 {
    (flows * CPU_MILLIS_PER_1000_FLOWS / 1000).clamp(CPU_MILLIS_MIN, CPU_MILLIS_MAX)
}

/// A pod's memory limit: a floor, and past it what the pod measured per 1,000 flows with half
/// again as headroom (results/2026-12-03-shards-scale-interval: a client pod 8.8 MiB, the
/// probe 2.4 MiB per 1,000 flows), so a large trial is not OOM-killed into "client lost".
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemoryLimit {
    /// The limit of a small trial, MiB.
    pub floor_mib: u64,
    /// MiB per 1,000 flows, headroom included.
    pub per_1000_flows_mib: u64,
}

/// The probe's: 2.4 MiB per 1,000 flows measured.
pub(crate) const PROBE_MEMORY: MemoryLimit = MemoryLimit {
    floor_mib: 128,
    per_1000_flows_mib: 4,
};
/// A client pod's: 8.8 MiB per 1,000 flows measured.
pub(crate) const CLIENT_MEMORY: MemoryLimit = MemoryLimit {
    floor_mib: 256,
    per_1000_flows_mib: 14,
};
/// What the runtime and buffers take before any flow, MiB.
const MEMORY_BASE_MIB: u64 = 32;

impl MemoryLimit {
    /// The limit for a pod holding `flows` flows, MiB.
    pub(crate) fn mib(self, flows: u64) -> u64 {
        (MEMORY_BASE_MIB + flows.div_ceil(1000) * self.per_1000_flows_mib).max(self.floor_mib)
    }
}

fn resources(flows: u64, memory: MemoryLimit) -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            (
                "cpu".to_string(),
                Quantity(format!("{}m", cpu_request_millis(flows))),
            ),
            ("memory".to_string(), Quantity("16Mi".into())),
        ])),
        limits: Some(BTreeMap::from([(
            "memory".to_string(),
            Quantity(format!("{}Mi", memory.mib(flows))),
        )])),
        ..ResourceRequirements::default()
    }
}

fn env(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: Some(value.into()),
        ..EnvVar::default()
    }
}

/// The kubelet's timeout on the probe's `/readyz`.
const READINESS_TIMEOUT_SECONDS: i32 = 3;

fn http_probe(path: &str, period: u32, failure: i32, timeout: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.into()),
            port: IntOrString::String("readyz".into()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(i32::try_from(period).unwrap_or(i32::MAX)),
        timeout_seconds: Some(timeout),
        success_threshold: Some(1),
        failure_threshold: Some(failure),
        ..Probe::default()
    }
}

fn port(name: &str, number: u16, protocol: &str) -> ContainerPort {
    ContainerPort {
        name: Some(name.into()),
        container_port: i32::from(number),
        protocol: Some(protocol.into()),
        ..ContainerPort::default()
    }
}

/// The probe Deployment.
pub fn deployment(s: &WorkloadSpec) -> Deployment {
    let (pod_sc, sc) = restricted();
    let probe_labels = labels_of(PROBE_NAME, &s.instance, &s.run);
    let container = probe_container(s, sc);
    Deployment {
        metadata: meta(PROBE_NAME, &s.namespace, PROBE_NAME, &s.instance, &s.run),
        spec: Some(DeploymentSpec {
            replicas: Some(i32::try_from(s.replicas).unwrap_or(i32::MAX)),
            selector: LabelSelector {
                match_labels: Some(probe_labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(probe_labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    termination_grace_period_seconds: Some(i64::from(s.grace_period_seconds)),
                    containers: vec![container],
                    security_context: Some(pod_sc),
                    automount_service_account_token: Some(false),
                    enable_service_links: Some(false),
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    }
}

/// The probe's container: its environment, ports, readiness and liveness, and preStop sleep.
fn probe_container(s: &WorkloadSpec, sc: SecurityContext) -> Container {
    let lifecycle = (s.prestop_sleep_seconds > 0).then(|| Lifecycle {
        pre_stop: Some(LifecycleHandler {
            // A sleep action, not exec: the image is scratch and has no `sleep` binary.
            sleep: Some(SleepAction {
                seconds: i64::from(s.prestop_sleep_seconds),
            }),
            ..LifecycleHandler::default()
        }),
        ..Lifecycle::default()
    });
    Container {
        name: PROBE_CONTAINER.into(),
        image: Some(s.image.clone()),
        image_pull_policy: Some("IfNotPresent".into()),
        args: Some(vec!["probe".into()]),
        env: Some(probe_env(s)),
        ports: Some(vec![
            port("probe-tcp", PROBE_TCP_PORT, "TCP"),
            port("probe-udp", PROBE_UDP_PORT, "UDP"),
            port("readyz", PROBE_READY_PORT, "TCP"),
        ]),
        // Deliberately twitchy (failureThreshold 1), as the Go tool's manifest: the readiness
        // flip should follow the probe's 503 within one period. The timeout is not the Go
        // manifest's 1 s: a 503 comes back at once whatever it is, but on a node whose cores
        // are saturated the kubelet's own request can take over a second, and one such timeout
        // took the endpoint away before t=0 (results/2026-12-03-shards-scale-interval).
        readiness_probe: Some(http_probe(
            "/readyz",
            s.readiness_period_seconds,
            1,
            READINESS_TIMEOUT_SECONDS,
        )),
        liveness_probe: Some(http_probe("/healthz", 10, 6, 2)),
        lifecycle,
        // Each replica holds about its share of the flows (the Service spreads them).
        resources: Some(resources(
            s.flows.div_ceil(u64::from(s.replicas.max(1))),
            PROBE_MEMORY,
        )),
        security_context: Some(sc),
        ..Container::default()
    }
}

/// The probe's environment; `probe_env` entries (`K=V`) replace or extend it.
fn probe_env(s: &WorkloadSpec) -> Vec<EnvVar> {
    let mut envs = vec![
        env(vars::DRAIN_BEHAVIOR, s.behavior.as_str()),
        env(vars::DRAIN_MAX_SECONDS, s.drain_max_seconds.to_string()),
        env(vars::EXIT_NOW_FORCE_RST, s.exit_now_force_rst.to_string()),
        env(vars::PROBE_TCP_PORT, PROBE_TCP_PORT.to_string()),
        env(vars::PROBE_UDP_PORT, PROBE_UDP_PORT.to_string()),
        env(vars::PROBE_READY_PORT, PROBE_READY_PORT.to_string()),
        env(vars::PROBE_HEARTBEAT_MS, s.heartbeat_ms.to_string()),
        EnvVar {
            name: vars::POD_NAME.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: "metadata.name".into(),
                    ..ObjectFieldSelector::default()
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        },
    ];
    for kv in &s.probe_env {
        if let Some((k, v)) = kv.split_once('=') {
            envs.retain(|e| e.name != k);
            envs.push(env(k, v));
        }
    }
    envs
}

/// The probe Service: ClusterIP for a client pod, NodePort for a client on the host.
pub fn service(s: &WorkloadSpec) -> Service {
    let sp = |name: &str, port: u16, target: u16, protocol: &str| ServicePort {
        name: Some(name.into()),
        port: i32::from(port),
        target_port: Some(IntOrString::Int(i32::from(target))),
        protocol: Some(protocol.into()),
        ..ServicePort::default()
    };
    Service {
        metadata: meta(PROBE_NAME, &s.namespace, PROBE_NAME, &s.instance, &s.run),
        spec: Some(ServiceSpec {
            type_: Some(if s.node_port { "NodePort" } else { "ClusterIP" }.into()),
            selector: Some(labels_of(PROBE_NAME, &s.instance, &s.run)),
            ports: Some(vec![
                sp("probe-tcp", s.tcp_port, PROBE_TCP_PORT, "TCP"),
                sp("probe-udp", s.udp_port, PROBE_UDP_PORT, "UDP"),
            ]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// With `--pdb`: maxUnavailable 0, so the Eviction API refuses (429) to evict any probe pod.
pub fn pdb(s: &WorkloadSpec) -> Option<PodDisruptionBudget> {
    s.pdb.then(|| PodDisruptionBudget {
        metadata: meta(PROBE_NAME, &s.namespace, PROBE_NAME, &s.instance, &s.run),
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(0)),
            selector: Some(LabelSelector {
                match_labels: Some(labels_of(PROBE_NAME, &s.instance, &s.run)),
                ..LabelSelector::default()
            }),
            ..PodDisruptionBudgetSpec::default()
        }),
        ..PodDisruptionBudget::default()
    })
}

/// The workload as multi-document YAML, in the order `run` applies it.
pub fn render_yaml(
    s: &WorkloadSpec,
    create_namespace: bool,
) -> Result<String, serde_norway::Error> {
    let mut docs = Vec::new();
    if create_namespace {
        docs.push(serde_norway::to_string(&namespace(&s.namespace, &s.run))?);
    }
    if let Some(p) = pdb(s) {
        docs.push(serde_norway::to_string(&p)?);
    }
    docs.push(serde_norway::to_string(&deployment(s))?);
    docs.push(serde_norway::to_string(&service(s))?);
    Ok(docs
        .iter()
        .map(|d| format!("---\n{d}"))
        .collect::<Vec<_>>()
        .join(""))
}

#[cfg(test)]
mod tests;
