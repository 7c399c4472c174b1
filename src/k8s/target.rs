//! Resolving `--target`: the workload, its pods, the Service that reaches them and the port,
//! read from the API before anything is changed. The choices (which Service, which port) are
//! pure functions of the objects read, tested without a cluster; each refusal names what was
//! asked for and what the cluster has.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Api;
use kube::api::ListParams;

use super::{K8sError, status_code};
use crate::evidence::plan::attach::{AttachTarget, PortRef, WorkloadKind};

mod pick;
use pick::list;
pub use pick::{pick_port, pick_service, selects};

/// The target as the API showed it before the trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// Deployment or StatefulSet.
    pub kind: WorkloadKind,
    /// Name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// Its pod selector as a label-selector string (for list and watch).
    pub selector: String,
    /// spec.replicas (what the scale trigger restores).
    pub replicas: i32,
    /// status.readyReplicas.
    pub ready_replicas: i32,
    /// Why a rollout-restart would not replace any pod: a paused Deployment, or a StatefulSet
    /// whose update strategy is OnDelete (its pods are replaced only when deleted by hand).
    pub no_rollout: Option<String>,
    /// The pods the selector selects now (not terminating), by name, with their labels.
    pub pods: BTreeMap<String, BTreeMap<String, String>>,
}

/// A node a pod can be scheduled on: Ready and not cordoned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulableNode {
    /// Node name.
    pub name: String,
    /// Its `kubernetes.io/hostname` label (what a nodeSelector pins on).
    pub hostname: String,
}

/// The label a client pod is pinned with.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// The Ready, uncordoned nodes.
pub async fn schedulable_nodes(client: &kube::Client) -> Result<Vec<SchedulableNode>, K8sError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let list = nodes
        .list(&ListParams::default())
        .await
        .map_err(K8sError::api("list nodes"))?;
    Ok(list
        .items
        .into_iter()
        .filter(|n| {
            !n.spec
                .as_ref()
                .and_then(|s| s.unschedulable)
                .unwrap_or(false)
        })
        .filter(|n| {
            n.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .filter_map(|n| {
            let name = n.metadata.name?;
            let hostname = n
                .metadata
                .labels
                .and_then(|l| l.get(HOSTNAME_LABEL).cloned())
                .unwrap_or_else(|| name.clone());
            Some(SchedulableNode { name, hostname })
        })
        .collect())
}

/// The Service and port the flows dial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Service name.
    pub service: String,
    /// Its ClusterIP.
    pub cluster_ip: String,
    /// The Service port number dialled.
    pub port: u16,
    /// That port's name, if it has one.
    pub port_name: Option<String>,
}

/// Why the target cannot be measured; each is one named preflight check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The workload does not exist, or has no usable selector.
    NotFound(String),
    /// The workload has no ready replica.
    NotReady(String),
    /// No Service (or not the given one) selects the target's pods, or several do.
    Service(String),
    /// The Service lacks the port, or has several and none was chosen.
    Port(String),
}

impl Refusal {
    /// What is wrong, whichever check it belongs to.
    pub fn into_why(self) -> String {
        match self {
            Self::NotFound(w) | Self::NotReady(w) | Self::Service(w) | Self::Port(w) => w,
        }
    }
}

/// The label-selector string of a workload's selector (matchLabels and matchExpressions).
pub fn selector_string(s: &LabelSelector) -> String {
    let mut parts: Vec<String> = s
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for e in s.match_expressions.iter().flatten() {
        let values = e.values.clone().unwrap_or_default().join(",");
        parts.push(match e.operator.as_str() {
            "In" => format!("{} in ({values})", e.key),
            "NotIn" => format!("{} notin ({values})", e.key),
            "Exists" => e.key.clone(),
            _ => format!("!{}", e.key),
        });
    }
    parts.join(",")
}

/// The pod a scale-down of StatefulSet `sts` removes: the one with the highest ordinal
/// (`STS-N`), which its controller takes whatever controller.kubernetes.io/pod-deletion-cost
/// says.
pub fn highest_ordinal<'a>(sts: &str, pods: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    pods.into_iter()
        .filter_map(|p| {
            let n: u32 = p.strip_prefix(sts)?.strip_prefix('-')?.parse().ok()?;
            Some((n, p))
        })
        .max()
        .map(|(_, p)| p)
}

fn api_err(action: String) -> impl FnOnce(kube::Error) -> K8sError {
    K8sError::api(action)
}

/// Gets the target of kind `K`; a target that does not exist is a refusal naming the objects
/// of that kind the namespace does hold.
async fn get_or_name_others<K>(
    client: &kube::Client,
    ns: &str,
    a: &AttachTarget,
) -> Result<Result<K, Refusal>, K8sError>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let (kind, name) = (a.target.kind.as_str(), a.target.name.as_str());
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    match api.get(name).await {
        Ok(k) => Ok(Ok(k)),
        Err(e) if status_code(&e) == Some(404) => {
            let names = api
                .list(&ListParams::default())
                .await
                .map(|l| list(l.items.into_iter().filter_map(|k| k.meta().name.clone())))
                .unwrap_or_else(|_| "unknown".into());
            Ok(Err(Refusal::NotFound(format!(
                "{kind} {name} not found in namespace {ns} ({kind}s there: {names})"
            ))))
        }
        Err(e) => Err(api_err(format!("get {kind} {ns}/{name}"))(e)),
    }
}

/// What the workload's object says.
struct Read {
    selector: LabelSelector,
    replicas: i32,
    ready: i32,
    /// Why a rollout-restart would not roll the workload, if it would not.
    no_rollout: Option<String>,
}

/// Reads the Deployment or StatefulSet; `Ok(Err(_))` is a refusal (not found, others named).
async fn read(
    client: &kube::Client,
    ns: &str,
    a: &AttachTarget,
) -> Result<Result<Read, Refusal>, K8sError> {
    Ok(Ok(match a.target.kind {
        WorkloadKind::Deployment => {
            let d = match get_or_name_others::<Deployment>(client, ns, a).await? {
                Ok(d) => d,
                Err(refusal) => return Ok(Err(refusal)),
            };
            let spec = d.spec.unwrap_or_default();
            let st = d.status.unwrap_or_default();
            Read {
                selector: spec.selector,
                replicas: spec.replicas.unwrap_or(1),
                ready: st.ready_replicas.unwrap_or(0),
                no_rollout: spec.paused.unwrap_or(false).then(|| {
                    "is paused: a rollout-restart would not roll out until it is resumed"
                        .to_string()
                }),
            }
        }
        WorkloadKind::StatefulSet => {
            let s = match get_or_name_others::<StatefulSet>(client, ns, a).await? {
                Ok(s) => s,
                Err(refusal) => return Ok(Err(refusal)),
            };
            let spec = s.spec.unwrap_or_default();
            let st = s.status.unwrap_or_default();
            Read {
                selector: spec.selector,
                replicas: spec.replicas.unwrap_or(1),
                ready: st.ready_replicas.unwrap_or(0),
                no_rollout: spec.update_strategy
                    .and_then(|u| u.type_)
                    .filter(|t| t == "OnDelete")
                    .map(|_| {
                        "has updateStrategy OnDelete: a rollout-restart would replace no pod until each is deleted by hand"
                            .to_string()
                    }),
            }
        }
    }))
}

/// Reads the workload and its pods; `Ok(Err(_))` is a refusal, `Err(_)` an API failure.
pub async fn workload(
    client: &kube::Client,
    ns: &str,
    a: &AttachTarget,
) -> Result<Result<Workload, Refusal>, K8sError> {
    let name = a.target.name.as_str();
    let Read {
        selector,
        replicas,
        ready,
        no_rollout,
    } = match read(client, ns, a).await? {
        Ok(r) => r,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let selector = selector_string(&selector);
    if selector.is_empty() {
        return Ok(Err(Refusal::NotFound(format!(
            "{} has an empty selector: it would select every pod in {ns}",
            a.target
        ))));
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let listed = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(api_err(format!("list the pods of {} in {ns}", a.target)))?;
    let pods = listed
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| Some((p.metadata.name?, p.metadata.labels.unwrap_or_default())))
        .collect();
    let w = Workload {
        kind: a.target.kind,
        name: name.to_string(),
        namespace: ns.to_string(),
        selector,
        replicas,
        ready_replicas: ready,
        no_rollout,
        pods,
    };
    if w.ready_replicas < 1 {
        return Ok(Err(Refusal::NotReady(format!(
            "{} has {} of {} replicas ready: nothing to measure",
            a.target, w.ready_replicas, w.replicas
        ))));
    }
    Ok(Ok(w))
}

/// Finds the Service and port of `w`; `Ok(Err(_))` is a refusal.
pub async fn endpoint(
    client: &kube::Client,
    w: &Workload,
    a: &AttachTarget,
) -> Result<Result<Endpoint, Refusal>, K8sError> {
    let services: Api<Service> = Api::namespaced(client.clone(), &w.namespace);
    let all = services
        .list(&ListParams::default())
        .await
        .map_err(api_err(format!("list services in {}", w.namespace)))?
        .items;
    Ok(pick_service(&all, a.service.as_deref(), w)
        .and_then(|s| service_endpoint(s, a.port.as_ref())))
}

/// What a client dials of Service `s`: its ClusterIP and the port `wanted` (else its only
/// one); a headless Service or a missing port is a refusal.
pub fn service_endpoint(s: &Service, wanted: Option<&PortRef>) -> Result<Endpoint, Refusal> {
    let p = pick_port(s, wanted)?;
    let cluster_ip = s
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ip.clone())
        .unwrap_or_default();
    let name = s.metadata.name.clone().unwrap_or_default();
    if cluster_ip.is_empty() || cluster_ip == "None" {
        return Err(Refusal::Service(format!(
            "service {name} is headless (clusterIP None): there is no virtual IP whose routing to measure"
        )));
    }
    Ok(Endpoint {
        service: name,
        cluster_ip,
        port: u16::try_from(p.port).unwrap_or(0),
        port_name: p.name.clone(),
    })
}

#[cfg(test)]
mod tests;
