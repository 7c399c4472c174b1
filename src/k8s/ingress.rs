//! The user's ingress controller, located by its Service: the ClusterIP and port the client
//! pods dial, and the running pods whose access log is followed.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::Api;
use kube::api::ListParams;

use super::K8sError;
use super::target::{Endpoint, Refusal, pick_port};
use crate::evidence::plan::attach::ingress::IngressTarget;

/// The controller as found: what is dialled and whose log is read.
#[derive(Debug, Clone)]
pub struct Located {
    /// Its Service, ClusterIP and port.
    pub endpoint: Endpoint,
    /// Its running pods (the endpoints the Service's selector selects), by name.
    pub pods: Vec<String>,
}

/// Finds `it`'s Service and the running pods it selects; a refusal says what is missing.
pub async fn locate(
    client: &kube::Client,
    it: &IngressTarget,
) -> Result<Result<Located, String>, K8sError> {
    // Listed, not read by name: `list` is what drainwatch-attach grants.
    let services: Api<Service> = Api::namespaced(client.clone(), &it.namespace);
    let Some(s) = services
        .list(&ListParams::default())
        .await
        .map_err(K8sError::api(format!("list services in {}", it.namespace)))?
        .items
        .into_iter()
        .find(|s| s.metadata.name.as_deref() == Some(it.service.as_str()))
    else {
        return Ok(Err(format!(
            "no service {} in namespace {}",
            it.service, it.namespace
        )));
    };
    let port = match pick_port(&s, it.port.as_ref()) {
        Ok(p) => p,
        Err(
            Refusal::NotFound(w) | Refusal::NotReady(w) | Refusal::Service(w) | Refusal::Port(w),
        ) => {
            return Ok(Err(w));
        }
    };
    let spec = s.spec.clone().unwrap_or_default();
    let cluster_ip = spec.cluster_ip.clone().unwrap_or_default();
    if cluster_ip.is_empty() || cluster_ip == "None" {
        return Ok(Err(format!(
            "service {}/{} is headless: there is no address to dial",
            it.namespace, it.service
        )));
    }
    let selector: BTreeMap<String, String> = spec.selector.unwrap_or_default();
    if selector.is_empty() {
        return Ok(Err(format!(
            "service {}/{} has no selector: its controller pods cannot be found",
            it.namespace, it.service
        )));
    }
    let labels: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &it.namespace);
    let mut running: Vec<String> = pods
        .list(&ListParams::default().labels(&labels.join(",")))
        .await
        .map_err(K8sError::api(format!(
            "list pods {} in {}",
            labels.join(","),
            it.namespace
        )))?
        .items
        .into_iter()
        .filter(|p| {
            p.metadata.deletion_timestamp.is_none()
                && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        })
        .filter_map(|p| p.metadata.name)
        .collect();
    running.sort();
    if running.is_empty() {
        return Ok(Err(format!(
            "service {}/{} selects no running pod ({})",
            it.namespace,
            it.service,
            labels.join(",")
        )));
    }
    Ok(Ok(Located {
        endpoint: Endpoint {
            service: it.service.clone(),
            cluster_ip,
            port: u16::try_from(port.port).unwrap_or(0),
            port_name: port.name.clone(),
        },
        pods: running,
    }))
}
