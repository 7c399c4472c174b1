//! The Kubernetes edge: cluster access, manifests, watches, log following, triggers and
//! cleanup. It turns the cluster into event lines for the pure core and never decides an
//! outcome itself.
//!
//! The translation from API objects to event lines ([`translate`]) and the manifests
//! ([`manifests`]) are pure functions tested without a cluster; the rest does I/O.

pub mod access;
pub mod cleanup;
pub mod client;
pub mod environment;
pub mod ingress;
pub mod ingress_managed;
pub mod lanes;
pub mod logs;
pub mod manifests;
pub mod port_forward;
pub mod rbac;
pub mod settings;

pub mod target;
pub mod translate;
pub mod trigger;
pub mod watch;

/// The probe image of this version: the release image under the tag the release workflow pushes
/// (`v<version>`, the git tag), which the local cluster imports under exactly this name
/// (`deploy/local-cluster/lib.sh` `project_image`). One constant, so the default, the release
/// and the testbed cannot drift apart (`tests/image_tag.rs`).
pub const DEFAULT_IMAGE: &str =
    concat!("ghcr.io/drainwatch/drainwatch:v", env!("CARGO_PKG_VERSION"));

/// Label keys and values put on everything drainwatch creates.
pub mod labels {
    /// Who manages the object; `drainwatch cleanup --all` deletes everything carrying it.
    pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
    /// The value of [`MANAGED_BY`].
    pub const MANAGER: &str = "drainwatch";
    /// What the object is (`drainwatch-probe`, `drainwatch-client`).
    pub const NAME: &str = "app.kubernetes.io/name";
    /// The trial it belongs to (the namespace name), so two trials never select each other.
    pub const INSTANCE: &str = "app.kubernetes.io/instance";
    /// The run that created the object (its run id): teardown and `drainwatch cleanup --run`
    /// delete only objects carrying their own run's value, so parallel runs on one cluster
    /// never remove each other's objects.
    pub const RUN: &str = "drainwatch.dev/run";
    /// Pod Security admission: the level every drainwatch namespace enforces.
    pub const PSA_ENFORCE: &str = "pod-security.kubernetes.io/enforce";
}

/// Name of the probe's Deployment, Service and PodDisruptionBudget.
pub const PROBE_NAME: &str = "drainwatch-probe";
/// Name of the client pod.
pub const CLIENT_NAME: &str = "drainwatch-client";
/// Name of the ConfigMap that carries `run --target --tls --ca-file`'s CA into the client pod
/// (a ConfigMap, not a Secret: a CA certificate is public, as kube-root-ca.crt is, and
/// drainwatch then needs no right to read Secrets).
pub const CLIENT_CA_NAME: &str = "drainwatch-client-ca";
/// The key of the CA in that ConfigMap, and its file name in the mount.
pub const CLIENT_CA_KEY: &str = "ca.crt";
/// Where the client pod mounts the CA ConfigMap, read-only.
pub const CLIENT_CA_DIR: &str = "/etc/drainwatch/ca";
/// The probe's container; its log is followed by this name.
pub const PROBE_CONTAINER: &str = "probe";
/// The client pod's container.
pub const CLIENT_CONTAINER: &str = "client";
/// Container ports of the probe (fixed by the image's defaults).
pub const PROBE_TCP_PORT: u16 = 7001;
/// UDP container port.
pub const PROBE_UDP_PORT: u16 = 7002;
/// Readiness and health port.
pub const PROBE_READY_PORT: u16 = 7003;

/// Failures of the Kubernetes edge.
#[derive(Debug, thiserror::Error)]
pub enum K8sError {
    /// The kubeconfig could not be read or used.
    #[error("failed to load the kubeconfig {source_name}")]
    Kubeconfig {
        /// Which file or source.
        source_name: String,
        /// Why.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// Neither a kubeconfig nor an in-cluster configuration exists.
    #[error(
        "no cluster configuration: no --kubeconfig, no KUBECONFIG, no ~/.kube/config, and not running in a pod"
    )]
    NoConfig,
    /// The in-cluster configuration could not be read.
    #[error("failed to read the in-cluster configuration")]
    InCluster(#[source] kube::config::InClusterError),
    /// The client could not be built.
    #[error("failed to build the kubernetes client")]
    Client(#[source] kube::Error),
    /// An API call failed.
    #[error("failed to {action}")]
    Api {
        /// What was attempted, naming the object.
        action: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// What drainwatch would restore was changed by someone else since it changed it (a
    /// parallel run, an autoscaler, the user): it is left as it is.
    #[error("{0}: changed by someone else during the trial, so it is left as it is")]
    ChangedMeanwhile(String),
    /// An object drainwatch would delete does not carry this run's mark.
    #[error("{0} does not carry this run's drainwatch.dev/run mark; it is left alone")]
    NotOurs(String),
    /// The object an action was for no longer exists.
    #[error("{0} is already gone")]
    Gone(String),
    /// Host facts unavailable.
    #[error(transparent)]
    Host(#[from] crate::host::HostError),
    /// The change could not be recorded in the restore journal, so it was not made.
    #[error("not made: it could not be recorded in the restore journal first")]
    Journal(#[from] crate::recorder::journal::JournalError),
    /// A wait on an object's condition failed.
    #[error("failed to {action}")]
    Wait {
        /// What was awaited, naming the object.
        action: String,
        /// Why.
        #[source]
        source: kube::runtime::wait::Error,
    },
    /// An API call did not answer in time.
    #[error("{action}: no answer from {server} within {seconds}s")]
    Timeout {
        /// What was attempted.
        action: String,
        /// The API server.
        server: String,
        /// The limit.
        seconds: u64,
    },
}

impl K8sError {
    /// An API failure while doing `action`.
    pub fn api(action: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let action = action.into();
        move |source| Self::Api { action, source }
    }
}

/// An error and its sources on one line (one definition for every layer: evidence::format).
pub use crate::evidence::format::chain;

/// The HTTP status of an API error, if it is one.
pub fn status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}
