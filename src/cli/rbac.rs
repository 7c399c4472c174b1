//! `drainwatch rbac`'s flags.

use clap::Args;

use crate::k8s::rbac::{DEFAULT_NAMESPACE, RbacRequest};

/// `drainwatch rbac`: the shipped RBAC, rendered for your namespaces.
#[derive(Debug, Clone, Args)]
pub struct RbacArgs {
    /// The namespace of drainwatch's ServiceAccount (created by the output).
    #[arg(long, default_value = DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// A namespace whose workloads drainwatch may attach to (`run --target`): the attach
    /// ClusterRole bound there. Repeat for several; none renders the probe rights only.
    #[arg(long = "target-namespace", value_name = "NAMESPACE")]
    pub targets: Vec<String>,
    /// Also the cluster-wide node rights `--trigger drain-node` needs (get, patch: cordon and
    /// uncordon).
    #[arg(long)]
    pub drain_node: bool,
    /// Also the CA ConfigMap rights `run --tls --ca-file` needs.
    #[arg(long)]
    pub tls_ca: bool,
    /// Also what `run --ingress-managed` needs: the Ingress and the controller's RoleBinding in
    /// each target namespace, its ServiceAccount and pod proxy in the trial's, and the
    /// ClusterRole drainwatch-ingress-traefik it binds.
    #[arg(long)]
    pub ingress_managed: bool,
}

impl RbacArgs {
    /// The request the renderer takes.
    pub fn request(&self) -> RbacRequest {
        RbacRequest {
            namespace: self.namespace.clone(),
            targets: self.targets.clone(),
            drain_node: self.drain_node,
            tls_ca: self.tls_ca,
            ingress_managed: self.ingress_managed,
        }
    }
}
