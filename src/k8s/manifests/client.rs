//! The client pod of a trial (one per shard): the project image running `drainwatch client`
//! against the probe's Service, or the attach client against the user's, streaming its events.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Container, Pod, PodAffinityTerm, PodAntiAffinity, PodSpec, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::select::labels_of;
use super::{CLIENT_MEMORY, ca, meta, resources, restricted};
use crate::k8s::{CLIENT_CONTAINER, CLIENT_NAME, PROBE_NAME, target};

/// The client pod of one trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSpec {
    /// Pod name: [`CLIENT_NAME`], or a shard's `drainwatch-client-<i>`.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// Instance label value.
    pub instance: String,
    /// Run label value.
    pub run: String,
    /// Image (the probe's).
    pub image: String,
    /// The Service's ClusterIP.
    pub host: String,
    /// TCP port.
    pub tcp_port: u16,
    /// UDP port.
    pub udp_port: u16,
    /// TCP flows.
    pub tcp_flows: u32,
    /// UDP flows.
    pub udp_flows: u32,
    /// Number of the first TCP flow (a shard's slice continues the run's ids).
    pub first_tcp_flow: u32,
    /// Number of the first UDP flow.
    pub first_udp_flow: u32,
    /// Ping interval, ms.
    pub interval_ms: u64,
    /// Flow timeout, ms.
    pub flow_timeout_ms: u64,
    /// Unanswered datagrams that end a UDP flow.
    pub udp_silence_datagrams: u32,
    /// Upper bound on the client's life; the trial ends it earlier by deleting the pod.
    pub duration_seconds: u64,
    /// The `drainwatch client --attach …` arguments, when the workload is the user's own (the
    /// flow settings above are then unused).
    pub attach_args: Option<Vec<String>>,
    /// The CA ConfigMap ([`client_ca`]) to mount read-only at [`super::CLIENT_CA_DIR`]
    /// (`run --target --tls --ca-file`).
    pub ca_config_map: Option<String>,
    /// Pin the pod to this `kubernetes.io/hostname` (a node that the trial does not drain, or
    /// a shard's own node).
    pub node: Option<String>,
    /// Ask the scheduler to keep this pod off the nodes of the run's other client pods
    /// (`--client-placement spread`).
    pub spread: bool,
}

/// The client pod: the same image running `drainwatch client`, streaming its events.
pub fn client_pod(c: &ClientSpec) -> Pod {
    let (pod_sc, sc) = restricted();
    let probe_args = || {
        vec![
            "client".to_string(),
            "--host".into(),
            c.host.clone(),
            "--tcp-port".into(),
            c.tcp_port.to_string(),
            "--udp-port".into(),
            c.udp_port.to_string(),
            "--tcp-flows".into(),
            c.tcp_flows.to_string(),
            "--udp-flows".into(),
            c.udp_flows.to_string(),
            "--interval".into(),
            format!("{}ms", c.interval_ms),
            "--flow-timeout".into(),
            format!("{}ms", c.flow_timeout_ms),
            "--udp-silence-datagrams".into(),
            c.udp_silence_datagrams.to_string(),
            "--duration".into(),
            format!("{}s", c.duration_seconds),
            "--clock-extension".into(),
            "--events-stdout".into(),
            "--first-tcp-flow".into(),
            c.first_tcp_flow.to_string(),
            "--first-udp-flow".into(),
            c.first_udp_flow.to_string(),
        ]
    };
    let args = c.attach_args.clone().unwrap_or_else(probe_args);
    // Pinned (drain-node: off the drained node; a shard: its own node), or else preferring
    // another node than the probe's, so the flows cross a real node boundary, and for spread
    // shards another node than the other shards'.
    let node_selector = c
        .node
        .as_ref()
        .map(|n| BTreeMap::from([(target::HOSTNAME_LABEL.to_string(), n.clone())]));
    let away_from = |component: &str| WeightedPodAffinityTerm {
        weight: 100,
        pod_affinity_term: PodAffinityTerm {
            label_selector: Some(LabelSelector {
                match_labels: Some(labels_of(component, &c.instance, &c.run)),
                ..LabelSelector::default()
            }),
            topology_key: "kubernetes.io/hostname".into(),
            ..PodAffinityTerm::default()
        },
    };
    let mut apart = vec![away_from(PROBE_NAME)];
    if c.spread {
        apart.push(away_from(CLIENT_NAME));
    }
    Pod {
        metadata: meta(&c.name, &c.namespace, CLIENT_NAME, &c.instance, &c.run),
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            termination_grace_period_seconds: Some(10),
            automount_service_account_token: Some(false),
            enable_service_links: Some(false),
            security_context: Some(pod_sc),
            affinity: node_selector.is_none().then(|| Affinity {
                pod_anti_affinity: Some(PodAntiAffinity {
                    preferred_during_scheduling_ignored_during_execution: Some(apart),
                    ..PodAntiAffinity::default()
                }),
                ..Affinity::default()
            }),
            node_selector,
            containers: vec![Container {
                name: CLIENT_CONTAINER.into(),
                image: Some(c.image.clone()),
                image_pull_policy: Some("IfNotPresent".into()),
                args: Some(args),
                resources: Some(resources(
                    u64::from(c.tcp_flows) + u64::from(c.udp_flows),
                    CLIENT_MEMORY,
                )),
                security_context: Some(sc),
                volume_mounts: c.ca_config_map.as_ref().map(|_| vec![ca::mount()]),
                ..Container::default()
            }],
            volumes: c.ca_config_map.as_deref().map(|n| vec![ca::volume(n)]),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}
