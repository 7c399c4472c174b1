//! What a trial ran on. Captured by the platform edge before the trial; unknown is `null`.

use serde::{Deserialize, Serialize};

/// One Kubernetes node as `status.nodeInfo` describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeInfo {
    /// Node name.
    pub name: String,
    /// e.g. `containerd://1.6.20`.
    pub container_runtime: Option<String>,
    /// Kubelet version.
    pub kubelet_version: Option<String>,
    /// OS image.
    pub os_image: Option<String>,
    /// Kernel version.
    pub kernel_version: Option<String>,
    /// CPU architecture.
    pub architecture: Option<String>,
}

/// Which cluster a Kubernetes run talked to, as the kubeconfig resolved it (schema 1.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterRef {
    /// The API server URL.
    pub server: String,
    /// The kubeconfig context; null for the in-cluster service account.
    pub context: Option<String>,
}

/// The environment record of a run; the same for every trial of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// `local` or `kubernetes`.
    pub platform: String,
    /// API server git version; null off Kubernetes.
    pub kubernetes_version: Option<String>,
    /// Number of nodes; null off Kubernetes.
    pub node_count: Option<u32>,
    /// The cluster; absent off Kubernetes and in reports before schema 1.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterRef>,
    /// Nodes sorted by name; `[]` off Kubernetes.
    pub nodes: Vec<NodeInfo>,
    /// kube-proxy mode; null when not readable.
    pub kube_proxy_mode: Option<String>,
    /// CNI; null when not detectable.
    pub cni: Option<String>,
    /// Cluster timing knobs (endpointslice batch period, kube-proxy sync period, …) when the
    /// cluster publishes them; null otherwise.
    pub cluster_timing: Option<serde_json::Map<String, serde_json::Value>>,
    /// drainwatch version.
    pub drainwatch_version: String,
    /// drainwatch commit.
    pub git_commit: String,
    /// Orchestrator host OS.
    pub os: String,
    /// Orchestrator host architecture.
    pub arch: String,
    /// Orchestrator host kernel release.
    pub kernel: String,
    /// Orchestrator host name.
    pub hostname: String,
    /// Probe image, when one was deployed.
    pub probe_image: Option<String>,
    /// Wall clock at the start of the run.
    pub wall_clock_start: String,
    /// The run's id (`YYYYMMDD-HHMMSS-` and 8 hex digits): it names the run's namespaces and
    /// is the `drainwatch.dev/run` label on everything the run created, what `drainwatch
    /// cleanup --run` selects. Absent (schema 1.3) in reports written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// What could not be recorded, and why; `[]` when complete.
    pub warnings: Vec<String>,
}
