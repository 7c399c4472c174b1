//! Envoy's own endpoint view, from its admin interface (`GET /clusters?format=json`): each
//! cluster and its hosts with their health. Envoy Gateway names a route's cluster
//! `httproute/NS/ROUTE/rule/N` (the route's namespace second) and feeds it the route's
//! endpoints; a host whose health is not healthy (draining, unhealthy, failed a check, pending
//! removal) is chosen for no new request while a healthy one remains, and a host that is gone is
//! absent.
//!
//! Envoy Gateway binds the admin interface to 127.0.0.1:[`ADMIN_PORT`] inside the proxy pod, so
//! it is reached through a port-forward, not the API server's pod proxy.

use serde::Deserialize;

use super::view::Server;

/// The admin port Envoy Gateway gives every proxy (loopback only).
pub const ADMIN_PORT: u16 = 19000;

/// The path of the clusters list, as JSON.
pub const CLUSTERS_PATH: &str = "/clusters?format=json";

/// Why the admin interface's answer was not read.
#[derive(Debug, thiserror::Error)]
#[error("Envoy's /clusters is not the JSON list of clusters its admin interface serves: {0}")]
pub struct AdminError(#[from] serde_json::Error);

#[derive(Deserialize)]
struct Clusters {
    #[serde(default)]
    cluster_statuses: Vec<Cluster>,
}

#[derive(Deserialize)]
struct Cluster {
    name: String,
    #[serde(default)]
    host_statuses: Vec<Host>,
}

#[derive(Deserialize)]
struct Host {
    address: Option<Address>,
    #[serde(default)]
    health_status: Health,
}

#[derive(Deserialize)]
struct Address {
    socket_address: Option<SocketAddress>,
}

#[derive(Deserialize)]
struct SocketAddress {
    address: String,
    port_value: Option<u16>,
}

/// A host's health as the admin interface gives it: proto3 JSON leaves out every flag that is
/// false, and `eds_health_status` is what the control plane said (Envoy Gateway: from the
/// EndpointSlice's conditions).
#[derive(Deserialize, Default)]
#[serde(default)]
struct Health {
    eds_health_status: Option<String>,
    failed_active_health_check: bool,
    failed_outlier_check: bool,
    failed_active_degraded_check: bool,
    pending_dynamic_removal: bool,
    excluded_via_immediate_hc_fail: bool,
    active_hc_timeout: bool,
}

impl Health {
    /// Envoy chooses the host for a new request only while it is healthy (an unknown EDS
    /// status counts as healthy, as Envoy counts it). With no healthy host left Envoy's panic
    /// routing may still choose one: the view records what the admin says, the access log what
    /// Envoy did.
    fn fenced(&self) -> bool {
        let eds_healthy = matches!(
            self.eds_health_status.as_deref(),
            None | Some("HEALTHY" | "UNKNOWN")
        );
        !eds_healthy
            || self.failed_active_health_check
            || self.failed_outlier_check
            || self.failed_active_degraded_check
            || self.pending_dynamic_removal
            || self.excluded_via_immediate_hc_fail
            || self.active_hc_timeout
    }
}

/// Every host of the clusters of routes in namespace `ns` (Envoy Gateway's naming), in cluster
/// then address order; a host with no socket address (a pipe) has none. Envoy's admin has no
/// server-side filter, so the other tenants' clusters are dropped here.
pub fn servers(json: &str, ns: &str) -> Result<Vec<Server>, AdminError> {
    let clusters: Clusters = serde_json::from_str(json)?;
    let mut out: Vec<Server> = clusters
        .cluster_statuses
        .into_iter()
        .filter(|c| route_namespace(&c.name) == Some(ns))
        .flat_map(|c| {
            let name = c.name;
            c.host_statuses.into_iter().filter_map(move |h| {
                let a = h.address?.socket_address?;
                let port = a.port_value?;
                // IPv6 in brackets, as an upstream address is written everywhere else.
                let address = if a.address.contains(':') {
                    format!("[{}]:{port}", a.address)
                } else {
                    format!("{}:{port}", a.address)
                };
                Some(Server {
                    service: name.clone(),
                    address,
                    fenced: h.health_status.fenced(),
                })
            })
        })
        .collect();
    out.sort();
    Ok(out)
}

/// The namespace of a route's cluster `KIND/NS/NAME/rule/N`; `None` for Envoy Gateway's own
/// clusters (`xds_cluster`, `prometheus_stats`) and anything else.
fn route_namespace(cluster: &str) -> Option<&str> {
    let mut parts = cluster.split('/');
    let kind = parts.next()?;
    let ns = parts.next()?;
    (kind.ends_with("route") && parts.next().is_some()).then_some(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Envoy 1.39.3's own answer (testdata/envoy-clusters.json): a route's cluster with a
    /// healthy host, a draining one and one configured with no status (the admin shows it
    /// healthy), and another namespace's cluster.
    #[test]
    fn each_host_of_the_namespaces_routes_is_read_and_a_draining_one_is_fenced() {
        let json = include_str!("testdata/envoy-clusters.json");
        let s = servers(json, "shop").unwrap();
        assert_eq!(s.len(), 3, "{s:#?}");
        let rule = "httproute/shop/web/rule/0";
        assert!(s.iter().all(|h| h.service == rule), "{s:#?}");
        let seen: Vec<(&str, bool)> = s.iter().map(|h| (h.address.as_str(), h.fenced)).collect();
        assert_eq!(
            seen,
            [
                ("10.244.0.7:8080", true),
                ("10.244.1.3:8080", false),
                ("10.244.2.9:8080", false)
            ]
        );
        let other = servers(json, "other").unwrap();
        assert_eq!(other.len(), 1);
        assert_eq!(other[0].address, "10.244.1.4:9000");
        assert!(servers(json, "web").unwrap().is_empty());
    }

    #[test]
    fn a_host_that_failed_a_check_or_awaits_removal_is_fenced() {
        let host = |health: &str| {
            format!(
                r#"{{"cluster_statuses":[{{"name":"httproute/ns/r/rule/0","host_statuses":[
                  {{"address":{{"socket_address":{{"address":"10.0.0.1","port_value":80}}}},
                    "health_status":{health}}}]}}]}}"#
            )
        };
        let fenced = |health: &str| servers(&host(health), "ns").unwrap()[0].fenced;
        assert!(!fenced(r#"{"eds_health_status":"HEALTHY"}"#));
        assert!(!fenced(r#"{"eds_health_status":"UNKNOWN"}"#));
        assert!(!fenced("{}"));
        assert!(fenced(r#"{"eds_health_status":"UNHEALTHY"}"#));
        assert!(fenced(r#"{"eds_health_status":"TIMEOUT"}"#));
        assert!(fenced(
            r#"{"eds_health_status":"HEALTHY","failed_outlier_check":true}"#
        ));
        assert!(fenced(
            r#"{"eds_health_status":"HEALTHY","pending_dynamic_removal":true}"#
        ));
        // An IPv6 host is written in brackets.
        let v6 = host("{}").replace("10.0.0.1", "fd00::7");
        assert_eq!(servers(&v6, "ns").unwrap()[0].address, "[fd00::7]:80");
    }

    #[test]
    fn gateway_clusters_and_a_page_that_is_not_json_are_told_apart() {
        assert_eq!(route_namespace("httproute/shop/web/rule/0"), Some("shop"));
        assert_eq!(route_namespace("grpcroute/shop/api/rule/1"), Some("shop"));
        assert_eq!(route_namespace("xds_cluster"), None);
        assert_eq!(route_namespace("prometheus_stats"), None);
        assert!(
            servers(r#"{"cluster_statuses":[]}"#, "ns")
                .unwrap()
                .is_empty()
        );
        assert!(servers("{}", "ns").unwrap().is_empty());
        assert!(servers("envoy admin: not found", "ns").is_err());
        assert!(servers(r#"{"cluster_statuses":{"name":"x"}}"#, "ns").is_err());
    }
}
