//! The local platform: the probe is a child process of this one, the trigger is SIGTERM, and
//! SIGKILL follows at the grace-period boundary as the kubelet would send it.

use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::process::Command;
use tokio::sync::watch;
use tokio::task::JoinHandle;

mod probe_io;

use super::local_checks::{check_fail, check_ok, ports_free, readyz};
use super::shard::{self, ShardPlan, trial_bound};
use super::{Flows, Platform, PlatformError, Target};
use crate::evidence::environment::Environment;
use crate::evidence::event::EventName;
use crate::evidence::journal::{Change, ProcessRole};
use crate::evidence::plan::{DrainBehavior, TrialConfig};
use crate::evidence::timeline::format_wall_ns;
use crate::evidence::trigger::Triggered;
use crate::host;
use crate::net::{self, ClientConfig};
use crate::platform::spawn;
use crate::preflight::{self, Poll, Stopped};
use crate::probe::config::vars;
use crate::recorder::Recorder;
use probe_io::{Exit, read_events, reap, relay_stderr};

struct Child {
    pid: Pid,
    /// Its entry in the restore journal.
    journalled: Change,
    exited: watch::Receiver<Option<Exit>>,
    stdout_done: watch::Receiver<bool>,
    started: watch::Receiver<bool>,
    killer: Option<JoinHandle<()>>,
    tasks: Vec<JoinHandle<()>>,
}

/// The local platform.
pub struct LocalPlatform {
    exe: PathBuf,
    ready_port: u16,
    ready_timeout: Duration,
    child: Option<Child>,
    /// The trial's `--clients` and its upper bound, set at deploy.
    sharding: (u32, Duration),
    shards: Option<super::shard::Shards>,
    /// The run's id, recorded in the environment (nothing local is labelled with it).
    run_id: String,
}

impl LocalPlatform {
    /// A platform that starts `exe probe` (normally this very binary).
    pub fn new(exe: PathBuf, ready_port: u16, ready_timeout: Duration) -> Self {
        Self {
            exe,
            ready_port,
            ready_timeout,
            child: None,
            sharding: (1, Duration::ZERO),
            shards: None,
            run_id: host::run_id(),
        }
    }
}

impl LocalPlatform {
    /// The run id `--run-id` gave, instead of the generated one.
    #[must_use]
    pub fn with_run_id(mut self, id: Option<String>) -> Self {
        if let Some(id) = id {
            self.run_id = id;
        }
        self
    }
}

impl Platform for LocalPlatform {
    async fn environment(&mut self) -> Result<Environment, PlatformError> {
        let env_err = PlatformError::Environment;
        // The boot id names the clock the probe will share; without it the run cannot say how
        // its times compare, so it refuses to start.
        host::boot_id().map_err(env_err)?;
        Ok(Environment {
            platform: "local".into(),
            kubernetes_version: None,
            cluster: None,
            node_count: None,
            nodes: vec![],
            kube_proxy_mode: None,
            cni: None,
            cluster_timing: None,
            drainwatch_version: host::VERSION.into(),
            git_commit: host::GIT_COMMIT.into(),
            os: std::env::consts::OS.into(),
            arch: std::env::consts::ARCH.into(),
            kernel: host::kernel().map_err(env_err)?,
            hostname: host::hostname().map_err(env_err)?,
            probe_image: None,
            wall_clock_start: format_wall_ns(host::wall_ns()),
            run_id: Some(self.run_id.clone()),
            warnings: vec![],
        })
    }

    async fn deploy(
        &mut self,
        cfg: &TrialConfig,
        trial_id: &str,
        rec: &Recorder,
    ) -> Result<Target, PlatformError> {
        let behavior = behavior(cfg)?;
        self.sharding = (cfg.clients, trial_bound(cfg));
        let t = tokio::time::Instant::now();
        ports_free(cfg, self.ready_port)
            .map_err(|e| check_fail(preflight::LOCAL_PORTS_FREE, t, e))?;
        check_ok(&preflight::LOCAL_PORTS_FREE, t);

        let instance = format!("drainwatch-probe-local-{trial_id}");
        let mut cmd = Command::new(&self.exe);
        cmd.arg("probe")
            .env(vars::DRAIN_BEHAVIOR, behavior.as_str())
            .env(vars::DRAIN_MAX_SECONDS, cfg.drain_max_seconds.to_string())
            .env(vars::EXIT_NOW_FORCE_RST, cfg.exit_now_force_rst.to_string())
            .env(vars::PROBE_TCP_PORT, cfg.tcp_port.to_string())
            .env(vars::PROBE_UDP_PORT, cfg.udp_port.to_string())
            .env(vars::PROBE_READY_PORT, self.ready_port.to_string())
            .env(vars::PROBE_HEARTBEAT_MS, cfg.interval_ms.to_string())
            .env(vars::POD_NAME, &instance);
        let spawn::Piped {
            child,
            pid,
            stdout,
            stderr,
        } = spawn::piped(&mut cmd, &format!("the probe ({})", self.exe.display()))?;
        let journalled = spawn::journal(rec, ProcessRole::Probe, pid, "the probe")?;

        let (reader, started, stdout_done) = read_events(stdout, rec);
        let err_reader = relay_stderr(stderr);
        let (reaper, exited) = reap(child, rec);
        self.child = Some(Child {
            pid,
            journalled,
            exited,
            stdout_done,
            started,
            killer: None,
            tasks: vec![reader, err_reader, reaper],
        });
        rec.orchestrator(
            EventName::WorkloadApplied,
            format!(
                "local probe pid={pid} instance={instance} behavior={}",
                behavior
            ),
        );
        Ok(Target {
            host: "127.0.0.1".into(),
            tcp_port: cfg.tcp_port,
            udp_port: cfg.udp_port,
        })
    }

    async fn preflight(
        &mut self,
        _cfg: &TrialConfig,
        _rec: &Recorder,
    ) -> Result<(), PlatformError> {
        let Some(child) = self.child.as_mut() else {
            return Err(PlatformError::Deploy("no probe was started".into()));
        };
        let t = tokio::time::Instant::now();
        let mut started = child.started.clone();
        let mut exited = child.exited.clone();
        let got = tokio::time::timeout(self.ready_timeout, async {
            tokio::select! {
                r = started.wait_for(|s| *s) => r.is_ok(),
                _ = exited.wait_for(Option::is_some) => false,
            }
        })
        .await;
        if got != Ok(true) {
            let why = match *child.exited.borrow() {
                Some(e) => format!(
                    "the probe exited with code {} before logging probe_started",
                    e.code
                ),
                None => format!("no probe_started line within {:?}", self.ready_timeout),
            };
            return Err(check_fail(preflight::PROBE_EVENTS_DELIVERING, t, why));
        }
        check_ok(&preflight::PROBE_EVENTS_DELIVERING, t);

        let t = tokio::time::Instant::now();
        let port = self.ready_port;
        let exited = child.exited.clone();
        let ready = preflight::poll(self.ready_timeout, Duration::from_millis(50), || {
            let exited = *exited.borrow();
            async move {
                if let Some(e) = exited {
                    return Poll::Failed(
                        preflight::PROBE_READY,
                        format!("the probe exited with code {}", e.code),
                    );
                }
                match readyz(port).await {
                    Ok(200) => Poll::Ready(()),
                    Ok(code) => Poll::Waiting(format!("/readyz answered {code}")),
                    Err(e) => Poll::Waiting(e),
                }
            }
        })
        .await;
        match ready {
            Ok(()) => {}
            Err(Stopped::Failed(c, why)) => return Err(check_fail(c, t, why)),
            Err(Stopped::TimedOut(last)) => {
                return Err(check_fail(
                    preflight::PROBE_READY,
                    t,
                    format!(
                        "/readyz on 127.0.0.1:{port} did not answer 200 within {:?}; last observation: {last}",
                        self.ready_timeout
                    ),
                ));
            }
        }
        check_ok(&preflight::PROBE_READY, t);
        Ok(())
    }

    async fn start_flows(
        &mut self,
        ccfg: ClientConfig,
        rec: &Recorder,
    ) -> Result<Flows, PlatformError> {
        let (clients, hold) = self.sharding;
        if clients <= 1 {
            let client = net::start(ccfg, rec.sink())
                .await
                .map_err(PlatformError::Flows)?;
            return Ok(Flows::in_process(client));
        }
        let plan = ShardPlan {
            exe: &self.exe,
            clients,
            hold,
            ready: self.ready_timeout,
        };
        let (flows, shards) = shard::start(&plan, &ccfg, rec).await?;
        self.shards = Some(shards);
        Ok(flows)
    }

    async fn trigger(
        &mut self,
        cfg: &TrialConfig,
        rec: &Recorder,
    ) -> Result<Triggered, PlatformError> {
        let Some(child) = self.child.as_mut() else {
            return Err(PlatformError::Trigger("no probe is running".into()));
        };
        kill(child.pid, Signal::SIGTERM).map_err(|source| PlatformError::Signal {
            signal: Signal::SIGTERM,
            pid: child.pid,
            source,
        })?;
        let grace = Duration::from_secs(u64::from(cfg.grace_period_seconds));
        let (pid, mut exited, rec) = (child.pid, child.exited.clone(), rec.clone());
        child.killer = Some(tokio::spawn(async move {
            if tokio::time::timeout(grace, exited.wait_for(Option::is_some))
                .await
                .is_err()
            {
                rec.orchestrator(
                    EventName::SigkillSent,
                    format!(
                        "grace period of {}s expired; SIGKILL to pid {pid} as the kubelet would",
                        grace.as_secs()
                    ),
                );
                let _ = kill(pid, Signal::SIGKILL);
            }
        }));
        Ok(Triggered::Issued(format!(
            "SIGTERM delivered to pid {}",
            child.pid
        )))
    }

    async fn settled(&mut self, limit: Duration) {
        let Some(child) = self.child.as_mut() else {
            return;
        };
        let (mut exited, mut done) = (child.exited.clone(), child.stdout_done.clone());
        let _ = tokio::time::timeout(limit, async {
            let _ = exited.wait_for(Option::is_some).await;
            let _ = done.wait_for(|d| *d).await;
        })
        .await;
    }

    async fn teardown(&mut self, rec: &Recorder) -> Result<(), PlatformError> {
        let clients = match self.shards.take() {
            Some(s) => s.teardown(rec).await,
            None => Ok(()),
        };
        let probe = self.teardown_probe(rec).await;
        probe.and(clients)
    }
}

impl LocalPlatform {
    async fn teardown_probe(&mut self, rec: &Recorder) -> Result<(), PlatformError> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        if let Some(k) = child.killer.take() {
            k.abort();
        }
        if child.exited.borrow().is_none() {
            let _ = kill(child.pid, Signal::SIGKILL);
            rec.orchestrator(
                EventName::WorkloadKilled,
                format!(
                    "probe pid {} still running at teardown; SIGKILL sent",
                    child.pid
                ),
            );
        }
        let waited = tokio::time::timeout(Duration::from_secs(5), async {
            let _ = child.exited.wait_for(Option::is_some).await;
            let _ = child.stdout_done.wait_for(|d| *d).await;
        })
        .await;
        for t in child.tasks {
            t.abort();
        }
        if waited.is_ok() {
            rec.restored_change(
                &child.journalled,
                &format!("probe pid {} exited", child.pid),
            );
        }
        waited.map_err(|_| {
            PlatformError::Teardown(format!(
                "probe pid {} did not exit within 5s of SIGKILL",
                child.pid
            ))
        })
    }
}

/// The probe's drain behaviour, once the request is known to fit the client processes.
fn behavior(cfg: &TrialConfig) -> Result<DrainBehavior, PlatformError> {
    let Some(behavior) = cfg.drain_behavior else {
        return Err(PlatformError::Deploy(
            "the local platform runs drainwatch's probe and needs a --drain-behavior".into(),
        ));
    };
    shard::fits(cfg)?;
    Ok(behavior)
}
