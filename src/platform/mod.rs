//! Where the workload under test runs. The trial loop is written once against [`Platform`];
//! the local platform (a child process) and the Kubernetes platform (a pod) implement it.

pub mod flows;
pub mod kubernetes;
pub mod local;
mod local_checks;
pub mod shard;
pub mod spawn;

use std::time::Duration;

use crate::evidence::environment::Environment;
use crate::evidence::plan::TrialConfig;
use crate::evidence::trigger::{Trigger, Triggered};
use crate::host::HostError;
use crate::k8s::{K8sError, chain};
use crate::net::{self, ClientConfig, ClientError};
use crate::preflight::Failure;
use crate::recorder::Recorder;
pub use flows::Flows;
pub use kubernetes::RestoreError;

/// Where the client dials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Host or address.
    pub host: String,
    /// TCP port.
    pub tcp_port: u16,
    /// UDP port.
    pub udp_port: u16,
}

/// Infrastructure failures of a platform (exit 2). Each keeps the error that caused it as its
/// source; a message alone is kept only for an invariant that has no underlying error.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    /// The host facts could not be read, so the run refuses to start.
    #[error("failed to record the environment")]
    Environment(#[source] HostError),
    /// The cluster facts could not be read, so the run refuses to start.
    #[error("failed to record the environment")]
    ClusterEnvironment(#[source] K8sError),
    /// The workload cannot be started as asked; why is named.
    #[error("failed to start the workload: {0}")]
    Deploy(String),
    /// An object the trial would create already exists: another run's, or anyone's. The run
    /// stops and leaves it alone (teardown deletes only what carries this run's mark).
    #[error(
        "failed to start the workload: {what} already exists{}; it is not this run's and is left alone",
        owner.as_ref().map(|o| format!(" (marked drainwatch.dev/run={o})")).unwrap_or_default()
    )]
    Exists {
        /// The object, kind and name.
        what: String,
        /// The run mark it carries, if any.
        owner: Option<String>,
    },
    /// A Kubernetes call that starts the workload failed.
    #[error("failed to start the workload")]
    Cluster(#[source] K8sError),
    /// The flows could not be started.
    #[error("failed to start the flows")]
    Flows(#[source] ClientError),
    /// A client process of a sharded run (`--clients N`) failed; which one and why is named.
    #[error("failed to run the client processes: {0}")]
    Clients(String),
    /// The host facts the client processes are checked against could not be read.
    #[error("failed to run the client processes")]
    ClientsHost(#[source] HostError),
    /// A child process (the local probe, a client shard) could not be started.
    #[error("failed to start a child process")]
    Spawn(#[from] spawn::SpawnError),
    /// The trigger cannot be issued in this state; why is named.
    #[error("failed to issue the trigger: {0}")]
    Trigger(String),
    /// The trigger's API call failed; `hint` names what usually grants it.
    #[error("failed to issue the trigger ({hint})")]
    TriggerCall {
        /// Where the permissions the trigger needs are granted.
        hint: &'static str,
        /// Why.
        #[source]
        source: K8sError,
    },
    /// The signal that terminates the local probe could not be sent.
    #[error("failed to issue the trigger: {signal} to pid {pid}")]
    Signal {
        /// The signal.
        signal: nix::sys::signal::Signal,
        /// The probe's pid.
        pid: nix::unistd::Pid,
        /// Why.
        #[source]
        source: nix::errno::Errno,
    },
    /// The platform cannot issue this trigger; the plan refuses it before any trial starts.
    #[error("the trigger {0} is not one this platform issues")]
    TriggerNotAccepted(Trigger),
    /// Cleanup did not finish; what was left is named.
    #[error("failed to clean up: {0}")]
    Teardown(String),
    /// The attached workload could not be restored to how the trial found it.
    #[error("failed to clean up")]
    Restore(#[source] RestoreError),
    /// The trial's objects could not be removed (and the workload perhaps not restored).
    #[error(
        "failed to clean up; remove it with `drainwatch cleanup --run {run}`{}",
        restored.as_ref().map(|r| format!("; {}", chain(r))).unwrap_or_default()
    )]
    Remove {
        /// The run whose objects are left.
        run: String,
        /// The restore failure of the same teardown, if any.
        restored: Option<Box<RestoreError>>,
        /// Why the objects were not removed.
        #[source]
        source: Box<K8sError>,
    },
    /// A preflight check failed.
    #[error(transparent)]
    Preflight(#[from] Failure),
}

/// One trial's view of the platform.
// The trial loop is generic over the platform (never `dyn`), so the Send bounds that
// `async fn` in a public trait cannot name are not needed.
#[allow(async_fn_in_trait)]
pub trait Platform {
    /// Records what this platform runs on; an error refuses the run.
    async fn environment(&mut self) -> Result<Environment, PlatformError>;

    /// Checks and resolves what every trial of this configuration needs from the platform,
    /// before any trial changes anything (an attached workload, its Service and port).
    async fn prepare(&mut self, _cfg: &TrialConfig) -> Result<(), PlatformError> {
        Ok(())
    }

    /// The configuration as this platform runs it for `trial_id` (a per-trial namespace, say);
    /// it is what the trial's header records.
    fn trial_config(&self, cfg: &TrialConfig, _trial_id: &str) -> TrialConfig {
        cfg.clone()
    }

    /// Starts the workload for one trial and begins forwarding its events to `rec`.
    async fn deploy(
        &mut self,
        cfg: &TrialConfig,
        trial_id: &str,
        rec: &Recorder,
    ) -> Result<Target, PlatformError>;

    /// Checks that need the workload but no flows (the probe is ready, its events arrive).
    async fn preflight(&mut self, cfg: &TrialConfig, rec: &Recorder) -> Result<(), PlatformError>;

    /// Starts the flows against `ccfg`'s target. By default this process dials them itself;
    /// a platform may run the client elsewhere and relay its events and progress.
    async fn start_flows(
        &mut self,
        ccfg: ClientConfig,
        rec: &Recorder,
    ) -> Result<Flows, PlatformError> {
        let client = net::start(ccfg, rec.sink())
            .await
            .map_err(PlatformError::Flows)?;
        Ok(Flows::in_process(client))
    }

    /// Issues the termination; `trigger_issued` is already recorded by the caller.
    async fn trigger(
        &mut self,
        cfg: &TrialConfig,
        rec: &Recorder,
    ) -> Result<Triggered, PlatformError>;

    /// Resolves when nothing more is expected from the workload (it has exited and its
    /// events are in), so the post-terminal wait can end early; bounded by `limit`.
    async fn settled(&mut self, limit: Duration);

    /// Removes the workload; always called, also after errors and interrupts.
    async fn teardown(&mut self, rec: &Recorder) -> Result<(), PlatformError>;
}
