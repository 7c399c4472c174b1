//! The environment record of a Kubernetes run: server version, nodes, kube-proxy mode, CNI and
//! the local cluster's timing knobs. Unknown is `None` with a warning saying why, never a guess.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
pub use k8s_openapi::apimachinery::pkg::version::Info as ServerVersion;
use kube::Api;
use kube::api::ListParams;

use super::K8sError;
use super::client::ClusterAccess;
use crate::evidence::environment::{ClusterRef, Environment, NodeInfo};
use crate::evidence::timeline::format_wall_ns;
use crate::host;

/// The top-level `mode:` of a kube-proxy configuration; nested keys (`conntrack.mode`) and
/// comments are ignored. `Some("")` when the key is present but empty.
pub fn parse_proxy_mode(conf: &str) -> Option<String> {
    conf.lines()
        .filter(|l| !l.starts_with([' ', '\t', '#', '-']))
        .find_map(|l| l.strip_prefix("mode:"))
        .map(|v| v.trim().trim_matches(['"', '\'']).to_string())
}

/// CNI plugins recognised by their DaemonSet names in kube-system.
pub fn cni_from_daemonsets(names: &[String]) -> Option<String> {
    const KNOWN: &[(&str, &str)] = &[
        ("kindnet", "kindnet"),
        ("calico-node", "calico"),
        ("cilium", "cilium"),
        ("flannel", "flannel"),
        ("weave-net", "weave-net"),
        ("aws-node", "aws-vpc-cni"),
        ("azure-cni", "azure-cni"),
        ("ovnkube", "ovn-kubernetes"),
        ("antrea", "antrea"),
    ];
    let mut found: Vec<&str> = KNOWN
        .iter()
        .filter(|(pat, _)| names.iter().any(|n| n.to_lowercase().contains(pat)))
        .map(|(_, name)| *name)
        .collect();
    found.sort_unstable();
    found.dedup();
    (!found.is_empty()).then(|| {
        format!(
            "{} (identified by DaemonSet name; best effort)",
            found.join("+")
        )
    })
}

/// What the project's local cluster publishes in `cluster-info.json` beside its kubeconfig.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterInfo {
    /// kube-proxy mode.
    pub proxy_mode: Option<String>,
    /// Timing knobs.
    pub timing: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Reads a `cluster-info.json` document.
pub fn parse_cluster_info(text: &str) -> Option<ClusterInfo> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    Some(ClusterInfo {
        proxy_mode: v
            .pointer("/kubeProxy/mode")
            .and_then(|m| m.as_str())
            .map(str::to_string),
        timing: v.get("timing").and_then(|t| t.as_object()).cloned(),
    })
}

/// The API server's version, which must answer within `timeout`: whether the API is
/// reachable at all (preflight `api-reachable`), asked before anything else is recorded.
pub async fn server_version(
    access: &ClusterAccess,
    timeout: Duration,
) -> Result<ServerVersion, K8sError> {
    tokio::time::timeout(timeout, access.client.apiserver_version())
        .await
        .map_err(|_| K8sError::Timeout {
            action: "read the server version".into(),
            server: access.server.clone(),
            seconds: timeout.as_secs(),
        })?
        .map_err(K8sError::api(format!(
            "read the server version from {}",
            access.server
        )))
}

/// Records the environment of the cluster whose `version` [`server_version`] read.
pub async fn record(
    access: &ClusterAccess,
    image: &str,
    version: ServerVersion,
) -> Result<Environment, K8sError> {
    let c = &access.client;
    let infos = nodes(c).await?;
    let mut warnings = Vec::new();
    let info = access
        .kubeconfig
        .as_deref()
        .and_then(Path::parent)
        .map(|d| d.join("cluster-info.json"))
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| parse_cluster_info(&t))
        .unwrap_or_default();
    let proxy_mode = proxy_mode(c, &info, &mut warnings).await;
    let cni = cni(c, &mut warnings).await;
    Ok(Environment {
        platform: "kubernetes".into(),
        kubernetes_version: Some(version.git_version),
        cluster: Some(ClusterRef {
            server: access.server.clone(),
            context: access.context.clone(),
        }),
        node_count: u32::try_from(infos.len()).ok(),
        nodes: infos,
        kube_proxy_mode: proxy_mode,
        cni,
        cluster_timing: info.timing,
        drainwatch_version: host::VERSION.into(),
        git_commit: host::GIT_COMMIT.into(),
        os: std::env::consts::OS.into(),
        arch: std::env::consts::ARCH.into(),
        kernel: host::kernel()?,
        hostname: host::hostname()?,
        probe_image: Some(image.to_string()),
        wall_clock_start: format_wall_ns(host::wall_ns()),
        run_id: None,
        warnings,
    })
}

/// The cluster's nodes, by name.
async fn nodes(c: &kube::Client) -> Result<Vec<NodeInfo>, K8sError> {
    let nodes = Api::<Node>::all(c.clone())
        .list(&ListParams::default())
        .await
        .map_err(K8sError::api("list nodes"))?;
    let mut infos: Vec<NodeInfo> = nodes
        .items
        .iter()
        .map(|n| {
            let i = n.status.as_ref().and_then(|s| s.node_info.as_ref());
            NodeInfo {
                name: n.metadata.name.clone().unwrap_or_default(),
                container_runtime: i.map(|i| i.container_runtime_version.clone()),
                kubelet_version: i.map(|i| i.kubelet_version.clone()),
                os_image: i.map(|i| i.os_image.clone()),
                kernel_version: i.map(|i| i.kernel_version.clone()),
                architecture: i.map(|i| i.architecture.clone()),
            }
        })
        .collect();
    infos.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(infos)
}

/// The kube-proxy mode from kube-system/kube-proxy, else from `cluster-info.json`; what
/// cannot be known is a warning, never a guess.
async fn proxy_mode(
    c: &kube::Client,
    info: &ClusterInfo,
    warnings: &mut Vec<String>,
) -> Option<String> {
    let cm = Api::<ConfigMap>::namespaced(c.clone(), "kube-system")
        .get_opt("kube-proxy")
        .await;
    match cm {
        Ok(Some(cm)) => match cm
            .data
            .as_ref()
            .and_then(|d| d.get("config.conf"))
            .and_then(|c| parse_proxy_mode(c))
        {
            Some(m) if m.is_empty() => {
                warnings.push("kube-proxy mode is empty in kube-system/kube-proxy: kube-proxy runs at its platform default, which drainwatch does not guess".to_string());
                None
            }
            Some(m) => Some(m),
            None => {
                warnings.push("kube-system/kube-proxy has no top-level mode: the kube-proxy mode is not recorded".to_string());
                None
            }
        },
        _ if info.proxy_mode.is_some() => info.proxy_mode.clone(),
        Ok(None) => {
            warnings.push("kube-proxy mode not recorded: no kube-system/kube-proxy ConfigMap and no cluster-info.json beside the kubeconfig; drainwatch does not guess".to_string());
            None
        }
        Err(e) => {
            warnings.push(format!("kube-proxy mode not recorded: reading kube-system/kube-proxy failed ({e}); drainwatch does not guess"));
            None
        }
    }
}

/// The CNI plugin, identified by the names of kube-system's DaemonSets.
async fn cni(c: &kube::Client, warnings: &mut Vec<String>) -> Option<String> {
    let ds = Api::<DaemonSet>::namespaced(c.clone(), "kube-system")
        .list(&ListParams::default())
        .await;
    match ds {
        Ok(list) => {
            let names: Vec<String> = list
                .items
                .iter()
                .filter_map(|d| d.metadata.name.clone())
                .collect();
            let found = cni_from_daemonsets(&names);
            if found.is_none() {
                warnings.push("CNI not recorded: no kube-system DaemonSet name matched a known CNI plugin (identification is name-based)".to_string());
            }
            found
        }
        Err(e) => {
            warnings.push(format!(
                "CNI not recorded: listing kube-system DaemonSets failed ({e})"
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_mode_reads_only_the_top_level_key() {
        let conf = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nconntrack:\n  mode: x\n# mode: ipvs\nmode: \"nftables\"\n";
        assert_eq!(parse_proxy_mode(conf).as_deref(), Some("nftables"));
        assert_eq!(parse_proxy_mode("mode: ''\n").as_deref(), Some(""));
        assert_eq!(parse_proxy_mode("kind: X\n"), None);
    }

    #[test]
    fn cni_names_are_recognised_and_order_free() {
        let n = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            cni_from_daemonsets(&n(&["kube-proxy", "kindnet"])).as_deref(),
            Some("kindnet (identified by DaemonSet name; best effort)")
        );
        assert_eq!(
            cni_from_daemonsets(&n(&["cilium", "calico-node"])),
            cni_from_daemonsets(&n(&["calico-node", "cilium"]))
        );
        assert_eq!(cni_from_daemonsets(&n(&["kube-proxy"])), None);
    }

    #[test]
    fn cluster_info_gives_proxy_mode_and_timing() {
        let i = parse_cluster_info(
            r#"{"kubeProxy":{"mode":"iptables"},"timing":{"kubeProxyMinSyncPeriod":"1s"}}"#,
        )
        .unwrap();
        assert_eq!(i.proxy_mode.as_deref(), Some("iptables"));
        assert_eq!(i.timing.unwrap()["kubeProxyMinSyncPeriod"], "1s");
        assert_eq!(parse_cluster_info("not json"), None);
    }
}
