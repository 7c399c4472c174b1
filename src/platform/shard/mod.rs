//! `--clients N` on the local platform: the flows run in N `drainwatch client` child processes,
//! each holding a contiguous slice of the global ids, so one process's open-file limit no longer
//! caps a trial. Their stdout event lines are relayed into the trial, their progress is rebuilt
//! with the same fold as a client pod's, and closing the window sends each of them SIGTERM.

mod child;

use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Flows, PlatformError};
use crate::evidence::event::EventName;
use crate::evidence::plan::TrialConfig;
use crate::evidence::plan::client::ProbeClient;
pub use crate::evidence::shard::{Slice, slices};
use crate::host;
use crate::net::ClientConfig;
use crate::net::follow::LineTracker;
use crate::recorder::Recorder;
use child::{Exit, Intake, ShardChild, spawn_child, wait_started};

/// The probe client that holds `slice` of the flows of `ccfg` for `duration_seconds`: a host
/// child process's or a client pod's command line.
pub fn probe_client(
    ccfg: &ClientConfig,
    slice: Slice,
    duration_seconds: u64,
    clock_extension: bool,
) -> ProbeClient {
    ProbeClient {
        host: ccfg.host.clone(),
        tcp_port: ccfg.tcp_port,
        udp_port: ccfg.udp_port,
        tcp_flows: slice.tcp,
        udp_flows: slice.udp,
        first_tcp_flow: slice.first_tcp,
        first_udp_flow: slice.first_udp,
        interval_ms: u64::try_from(ccfg.interval.as_millis()).unwrap_or(u64::MAX),
        flow_timeout_ms: u64::try_from(ccfg.flow_timeout.as_millis()).unwrap_or(u64::MAX),
        udp_silence_datagrams: ccfg.udp_silence_datagrams,
        duration_seconds,
        clock_extension,
    }
}

/// The running child processes of a sharded run.
pub struct Shards {
    children: Vec<ShardChild>,
    tasks: Vec<JoinHandle<()>>,
}

/// What the children are told beyond their slice.
pub struct ShardPlan<'a> {
    /// The drainwatch binary (this one).
    pub exe: &'a Path,
    /// Client processes.
    pub clients: u32,
    /// An upper bound on the trial: a child outlives a killed orchestrator by at most this.
    pub hold: Duration,
    /// How long a child may take to start streaming.
    pub ready: Duration,
}

/// Starts one child per slice and returns their merged flows once every child streams.
pub async fn start(
    plan: &ShardPlan<'_>,
    ccfg: &ClientConfig,
    rec: &Recorder,
) -> Result<(Flows, Shards), PlatformError> {
    let tracker = Arc::new(Mutex::new(LineTracker::new(ccfg.flow_ids())));
    let progress = tracker
        .lock()
        .map(|t| t.progress())
        .map_err(|_| PlatformError::Clients("the progress tracker is poisoned".into()))?;
    let parts = slices(ccfg.tcp_flows, ccfg.udp_flows, plan.clients);
    let (done_tx, done) = watch::channel(false);
    let close = CancellationToken::new();
    let intake = Intake {
        close: close.clone(),
        rec: rec.clone(),
        tracker,
        open: Arc::new(AtomicUsize::new(parts.len())),
        done_tx: Arc::new(done_tx),
    };
    let mut shards = Shards {
        children: Vec::new(),
        tasks: Vec::new(),
    };
    for (i, s) in parts.into_iter().enumerate() {
        let c = spawn_child(plan, ccfg, i, s, &intake, &mut shards.tasks);
        match c {
            Ok(c) => shards.children.push(c),
            Err(e) => {
                // Killed by us, not dead on their own: no client_process_exited lines.
                close.cancel();
                shards.kill_all();
                return Err(e);
            }
        }
    }
    let ours = host::boot_id().map_err(PlatformError::ClientsHost)?;
    for c in &shards.children {
        if let Err(why) = wait_started(c, plan.ready, &ours).await {
            // Killed by us, not dead on their own: no client_process_exited lines.
            close.cancel();
            shards.kill_all();
            return Err(PlatformError::Clients(why));
        }
    }
    for c in &shards.children {
        rec.orchestrator(
            EventName::ClientProcessStarted,
            format!(
                "{} pid {} runs `drainwatch client` for {}",
                c.name,
                c.pid,
                c.slice.describe()
            ),
        );
    }
    let closing = close.clone();
    let targets: Vec<(Pid, watch::Receiver<Option<Exit>>)> = shards
        .children
        .iter()
        .map(|c| (c.pid, c.exited.clone()))
        .collect();
    // Closing the window: SIGTERM makes each child record observation_end for its live flows,
    // print them and exit; the readers relay those last lines.
    shards.tasks.push(tokio::spawn(async move {
        closing.cancelled().await;
        for (pid, exited) in &targets {
            if exited.borrow().is_none() {
                let _ = kill(*pid, Signal::SIGTERM);
            }
        }
    }));
    Ok((Flows::relayed(progress, close, done), shards))
}

impl Shards {
    fn kill_all(&self) {
        for c in &self.children {
            if c.exited.borrow().is_none() {
                let _ = kill(c.pid, Signal::SIGKILL);
            }
        }
    }

    /// Ends every child (SIGKILL to any still running after the window closed) and names each
    /// one that did not end cleanly: its flows' evidence may be incomplete.
    pub async fn teardown(self, rec: &Recorder) -> Result<(), PlatformError> {
        let mut failed = Vec::new();
        for c in &self.children {
            if c.exited.borrow().is_none() {
                let _ = kill(c.pid, Signal::SIGKILL);
                rec.orchestrator(
                    EventName::ClientProcessKilled,
                    format!(
                        "{} pid {} still running at teardown; SIGKILL sent",
                        c.name, c.pid
                    ),
                );
            }
            let mut exited = c.exited.clone();
            let _ = tokio::time::timeout(Duration::from_secs(5), exited.wait_for(Option::is_some))
                .await;
            let exit = *c.exited.borrow();
            if exit.is_some() {
                rec.restored_change(&c.journalled, &format!("{} pid {} exited", c.name, c.pid));
            }
            match exit {
                Some(e) if e.clean() => {}
                Some(e) => failed.push(c.failure(&e.describe())),
                None => failed.push(c.failure("did not exit within 5s of SIGKILL")),
            }
        }
        // The readers end with the children's pipes; the rest are done or no longer needed.
        for t in self.tasks {
            t.abort();
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(PlatformError::Clients(failed.join("; ")))
        }
    }
}

/// Checks, per client process and before anything starts, that the flows fit: a request that
/// cannot is named with the --clients it would need instead of failing flows in the middle of
/// a trial.
pub fn fits(cfg: &TrialConfig) -> Result<(), PlatformError> {
    crate::net::limits::check_shards(
        u64::from(cfg.tcp_flows),
        u64::from(cfg.udp_flows),
        u64::from(cfg.clients),
    )
    .map_err(|e| PlatformError::Flows(e.into()))
}

/// An upper bound on one trial, so that a client child outlives a killed orchestrator by at
/// most this (every wait of the trial loop plus a margin).
pub fn trial_bound(cfg: &TrialConfig) -> Duration {
    let waits = 25
        + 60
        + 30
        + u64::from(cfg.settle_seconds)
        + u64::from(cfg.observe_timeout_seconds)
        + u64::from(cfg.post_terminal_grace_seconds)
        + u64::from(cfg.grace_period_seconds);
    Duration::from_secs(waits + 120)
}
