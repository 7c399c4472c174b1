//! The client pod of a trial (one per shard): the project image running `drainwatch client`
//! against the probe's Service, or the attach client against the user's, streaming its events.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Container, HostAlias, Pod, PodAffinityTerm, PodAntiAffinity, PodSpec,
    WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::select::labels_of;
use super::{CLIENT_MEMORY, ca, meta, resources, restricted};
use crate::evidence::plan::client::ClientInvocation;
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
    /// What the pod runs: `drainwatch client` against the probe's Service (a slice of the
    /// flows) or the attach client against the user's.
    pub invocation: ClientInvocation,
    /// The CA ConfigMap ([`client_ca`]) to mount read-only at [`super::CLIENT_CA_DIR`]
    /// (`run --target --tls --ca-file`).
    pub ca_config_map: Option<String>,
    /// Pin the pod to this `kubernetes.io/hostname` (a node that the trial does not drain, or
    /// a shard's own node).
    pub node: Option<String>,
    /// Ask the scheduler to keep this pod off the nodes of the run's other client pods
    /// (`--client-placement spread`).
    pub spread: bool,
    /// A name the pod's /etc/hosts maps to an address, `(address, name)`: the managed
    /// ingress's Service by the name its configuration records, on clusters without DNS too.
    pub host_alias: Option<(String, String)>,
}

/// The client pod: the same image running `drainwatch client`, streaming its events.
pub fn client_pod(c: &ClientSpec) -> Pod {
    let (pod_sc, sc) = restricted();
    let args = c.invocation.argv();
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
            termination_grace_period_seconds: Some(c.invocation.grace_seconds()),
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
                resources: Some(resources(c.invocation.flows(), CLIENT_MEMORY)),
                security_context: Some(sc),
                volume_mounts: c.ca_config_map.as_ref().map(|_| vec![ca::mount()]),
                ..Container::default()
            }],
            volumes: c.ca_config_map.as_deref().map(|n| vec![ca::volume(n)]),
            host_aliases: c.host_alias.as_ref().map(|(ip, name)| {
                vec![HostAlias {
                    ip: ip.clone(),
                    hostnames: Some(vec![name.clone()]),
                }]
            }),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}
