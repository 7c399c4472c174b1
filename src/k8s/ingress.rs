//! The user's ingress controller, located by its Service: the ClusterIP and port the client
//! pods dial, and the running pods whose access log is followed.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::Api;
use kube::api::ListParams;

use super::K8sError;
use super::target::{Endpoint, service_endpoint};
use crate::evidence::ingress::adapter::adapter;
use crate::evidence::ingress::traefik_api;
use crate::evidence::plan::attach::ingress::{IngressController, IngressTarget};

/// The controller as asked for and as found: what is dialled and whose log is read.
#[derive(Debug, Clone)]
pub struct Located {
    /// What was asked for (`--ingress-service`, `--ingress-host`, `--ingress-managed`).
    pub target: IngressTarget,
    /// The namespace its Service and pods are in.
    pub namespace: String,
    /// Its Service, ClusterIP and port.
    pub endpoint: Endpoint,
    /// Its running pods (the endpoints the Service's selector selects), by name.
    pub pods: Vec<String>,
    /// Each running pod's container port named [`METRICS_PORT_NAME`], where its request
    /// counters are served; a pod without one is absent.
    pub metrics_ports: BTreeMap<String, u16>,
    /// Each running pod's container port named [`traefik_api::API_PORT_NAME`], where its API
    /// (its endpoint view) is served; a pod without one is absent.
    pub api_ports: BTreeMap<String, u16>,
}

/// The container a managed Traefik runs in, whose log is read: its adapter's.
pub const TRAEFIK_CONTAINER: &str = adapter(IngressController::Traefik).log_container;

/// The container port a controller's request counters are read from, by name: `metrics`, as
/// Traefik's Helm chart names it.
pub const METRICS_PORT_NAME: &str = "metrics";

/// The port named `name` of `p`'s containers, if one has it.
fn named_port(p: &Pod, name: &str) -> Option<u16> {
    p.spec
        .as_ref()?
        .containers
        .iter()
        .flat_map(|c| c.ports.iter().flatten())
        .find(|port| port.name.as_deref() == Some(name))
        .and_then(|port| u16::try_from(port.container_port).ok())
}

/// GET `path` of pod `ns/pod` on `port` through the API server's pod proxy (`pods/proxy` get):
/// the controller's pods are reached where drainwatch's own API access reaches, not by their
/// IPs, which a runner outside the cluster cannot dial.
pub async fn proxy_get(
    client: &kube::Client,
    ns: &str,
    pod: &str,
    port: u16,
    path: &str,
) -> Result<String, K8sError> {
    let uri = format!("/api/v1/namespaces/{ns}/pods/{pod}:{port}/proxy{path}");
    let what = format!("get {uri}");
    let req = match http::Request::get(uri).body(Vec::new()) {
        Ok(r) => r,
        Err(e) => return Err(K8sError::api(what)(kube::Error::HttpError(e))),
    };
    client.request_text(req).await.map_err(K8sError::api(what))
}

/// Finds `it`'s Service, in namespace `ns`, and the running pods it selects; a refusal says
/// what is missing.
pub async fn locate(
    client: &kube::Client,
    it: &IngressTarget,
    ns: &str,
) -> Result<Result<Located, String>, K8sError> {
    // Listed, not read by name: `list` is what drainwatch-attach grants.
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let Some(s) = services
        .list(&ListParams::default())
        .await
        .map_err(K8sError::api(format!("list services in {ns}")))?
        .items
        .into_iter()
        .find(|s| s.metadata.name.as_deref() == Some(it.service.as_str()))
    else {
        return Ok(Err(format!(
            "no service {} in namespace {}",
            it.service, ns
        )));
    };
    let endpoint = match service_endpoint(&s, it.port.as_ref()) {
        Ok(e) => e,
        Err(r) => return Ok(Err(r.into_why())),
    };
    let selector: BTreeMap<String, String> =
        s.spec.and_then(|spec| spec.selector).unwrap_or_default();
    if selector.is_empty() {
        return Ok(Err(format!(
            "service {}/{} has no selector: its controller pods cannot be found",
            ns, it.service
        )));
    }
    let labels: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let listed: Vec<Pod> = pods
        .list(&ListParams::default().labels(&labels.join(",")))
        .await
        .map_err(K8sError::api(format!(
            "list pods {} in {}",
            labels.join(","),
            ns
        )))?
        .items
        .into_iter()
        .filter(|p| {
            p.metadata.deletion_timestamp.is_none()
                && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        })
        .collect();
    let ports = |name: &str| -> BTreeMap<String, u16> {
        listed
            .iter()
            .filter_map(|p| Some((p.metadata.name.clone()?, named_port(p, name)?)))
            .collect()
    };
    let (metrics_ports, api_ports) = (ports(METRICS_PORT_NAME), ports(traefik_api::API_PORT_NAME));
    let mut running: Vec<String> = listed.into_iter().filter_map(|p| p.metadata.name).collect();
    running.sort();
    if running.is_empty() {
        return Ok(Err(format!(
            "service {}/{} selects no running pod ({})",
            ns,
            it.service,
            labels.join(",")
        )));
    }
    Ok(Ok(Located {
        target: it.clone(),
        namespace: ns.to_string(),
        endpoint,
        pods: running,
        metrics_ports,
        api_ports,
    }))
}
