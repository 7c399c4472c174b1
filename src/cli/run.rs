//! `drainwatch run`: its flags, and the plan they ask for before validation.

use std::path::PathBuf;

use clap::Args;

use super::{
    BehaviorArg, ClusterArgs, FlowArgs, PlatformArg, TargetArgs, TriggerArg, WorkloadArgs,
};
use crate::evidence::plan::{PlanInput, Platform};
use crate::evidence::policy::Explicit;
use crate::evidence::policy::threshold::{self, Threshold};
use crate::evidence::trigger::Trigger;

/// `drainwatch run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Where the workload runs.
    #[arg(long, value_enum, default_value_t = PlatformArg::Kubernetes)]
    pub platform: PlatformArg,
    /// How to reach the cluster (kubernetes).
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The workload on the cluster (kubernetes).
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// What the probe does on SIGTERM.
    #[arg(long, value_enum, default_value_t = BehaviorArg::Drain)]
    pub drain_behavior: BehaviorArg,
    /// The termination trigger (local: sigterm; kubernetes: delete, evict or scale, and with
    /// --target also rollout-restart or drain-node; default sigterm or delete).
    #[arg(long, value_enum)]
    pub trigger: Option<TriggerArg>,
    /// terminationGracePeriodSeconds: SIGKILL follows SIGTERM after this many seconds.
    #[arg(long, default_value_t = 30)]
    pub grace_period: u32,
    /// The probe's drain window in seconds; 0 means grace period - 5 - preStop sleep (at least 1).
    #[arg(long, default_value_t = 0)]
    pub drain_max_seconds: u32,
    /// Under exit-now, reset connections with SO_LINGER 0 (false: plain exit).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub exit_now_force_rst: bool,
    /// Flow options.
    #[command(flatten)]
    pub flows: FlowArgs,
    /// Attach to your own workload instead of deploying the probe.
    #[command(flatten)]
    pub attach: TargetArgs,
    /// The probe's TCP port (kubernetes: the Service's TCP port).
    #[arg(long, env = "DRAINWATCH_TCP_PORT", default_value_t = 7001)]
    pub tcp_port: u16,
    /// The probe's UDP port (kubernetes: the Service's UDP port).
    #[arg(long, env = "DRAINWATCH_UDP_PORT", default_value_t = 7002)]
    pub udp_port: u16,
    /// The probe's readiness port (local only; the pod's is fixed at 7003).
    #[arg(long, env = "DRAINWATCH_READY_PORT", default_value_t = 7003)]
    pub ready_port: u16,
    /// Steady state held before the trigger, in seconds.
    #[arg(long, default_value_t = 10)]
    pub settle_seconds: u32,
    /// Observation window after the trigger, in seconds; 0 means grace period + 30.
    #[arg(long, default_value_t = 0)]
    pub observe_timeout: u32,
    /// Seconds to keep watching after every flow has ended.
    #[arg(long, default_value_t = 5)]
    pub post_terminal_grace: u32,
    /// How long the probe (and a client pod) may take to run and become ready, in seconds.
    #[arg(long, default_value_t = 120)]
    pub ready_timeout: u64,
    /// Trials in this run (trial-001 … under --out).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Shard the flows over this many clients, each holding a contiguous slice of the ids: on
    /// kubernetes, client pods (placed by --client-placement; each runs its own new-connection
    /// prober at --dial-rate, so every node a shard runs on is a view of the data plane); on
    /// the local platform or with --client host, `drainwatch client` child processes on this
    /// machine, to go past one process's open-file limit. 1: one client.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub clients: u32,
    /// Output directory. It must be empty or absent: files of an earlier run would sit beside
    /// the new report (exit 2, nothing touched), unless --clean-out is given.
    #[arg(long, default_value = "out")]
    pub out: PathBuf,
    /// Empty the --out directory before the run (every file and directory in it is deleted).
    #[arg(long)]
    pub clean_out: bool,
    /// The run id (YYYYMMDD-HHMMSS-xxxxxxxx) instead of a generated one: a caller that must
    /// clean up after a killed run (`drainwatch cleanup --run ID`) knows it beforehand. It
    /// must be unique: two runs with one id collide on names and fail by name.
    #[arg(long, value_name = "RUN_ID", value_parser = crate::cli::parse_run_id)]
    pub run_id: Option<String>,
    /// Run the arms of this policy (a TOML file, or builtin:smoke) and gate on its thresholds:
    /// writes OUT/<arm>/ per arm and OUT/junit.xml, OUT/summary.md, OUT/verdict.json; exit 1
    /// when a threshold is missed. The policy's settings win; a flag that disagrees is an error.
    #[arg(long)]
    pub policy: Option<String>,
    /// With --policy: run only these arms (comma-separated names).
    #[arg(long, requires = "policy")]
    pub arms: Option<String>,
    /// With --policy: the baseline run directory the policy's baseline thresholds are judged
    /// against (`METRIC <= baseline`, `no-regression`); read before any trial starts. Empty: no
    /// baseline.
    #[arg(long, env = "DRAINWATCH_BASELINE_DIR", value_name = "DIR")]
    pub baseline: Option<String>,
    /// With --policy and no --baseline: why there is none, which each baseline threshold then
    /// says (the Action passes what its baseline step found, e.g. no successful push run on the
    /// base branch).
    #[arg(long, env = "DRAINWATCH_BASELINE_REASON", value_name = "TEXT")]
    pub baseline_reason: Option<String>,
    /// Gate this run on a threshold, written as a policy writes it (`no-request-failed`,
    /// 'severed <= 0', 'p90 failed-requests <= 2'; docs/ci.md lists every form); repeatable.
    /// Judged per trial as a policy arm's thresholds are (distributions once across the
    /// trials): the verdict on stderr, exit 1 when one is missed. Not with --policy.
    #[arg(
        long = "threshold",
        value_name = "SENTENCE",
        value_parser = parse_threshold,
        conflicts_with = "policy"
    )]
    pub thresholds: Vec<Threshold>,
    /// Which of the flags above were given explicitly (filled by [`Cli::parse_explicit`]).
    #[arg(skip)]
    pub explicit: Explicit,
}

/// A `--threshold` sentence, parsed by the policies' own parser (a refusal is a usage error).
fn parse_threshold(s: &str) -> Result<Threshold, String> {
    threshold::parse(s).map_err(|e| e.to_string())
}

impl RunArgs {
    /// The plan these flags ask for, before validation.
    pub fn plan_input(&self) -> PlanInput {
        let platform = match self.platform {
            PlatformArg::Local => Platform::Local,
            PlatformArg::Kubernetes => Platform::Kubernetes,
        };
        let trigger = self.trigger.map_or(
            match platform {
                Platform::Local => Trigger::Sigterm,
                Platform::Kubernetes => Trigger::Delete,
            },
            Trigger::from,
        );
        let attach = self.attach.input();
        // An attached workload is not the probe: it has no drain behaviour of ours, and it
        // speaks tcp or http, so UDP flows are off unless asked for (which validation refuses).
        let attached = attach.is_some();
        PlanInput {
            platform,
            drain_behavior: (!attached).then(|| self.drain_behavior.into()),
            trigger,
            grace_period_seconds: self.grace_period,
            drain_max_seconds: self.drain_max_seconds,
            exit_now_force_rst: self.exit_now_force_rst,
            tcp_flows: self.flows.tcp_flows,
            udp_flows: if attached && !self.explicit.udp_flows {
                0
            } else {
                self.flows.udp_flows
            },
            target_host: "127.0.0.1".into(),
            tcp_port: self.tcp_port,
            udp_port: self.udp_port,
            ready_port: self.ready_port,
            settle_seconds: self.settle_seconds,
            observe_timeout_seconds: self.observe_timeout,
            flow_timeout_ms: u64::try_from(self.flows.flow_timeout.as_millis()).unwrap_or(u64::MAX),
            interval_ms: u64::try_from(self.flows.interval.as_millis()).unwrap_or(u64::MAX),
            udp_silence_datagrams: self.flows.udp_silence_datagrams,
            post_terminal_grace_seconds: self.post_terminal_grace,
            repeat: self.repeat,
            namespace: self
                .workload
                .namespace
                .clone()
                .filter(|_| platform == Platform::Kubernetes),
            kubernetes: (platform == Platform::Kubernetes).then(|| self.workload.config()),
            clients: self.clients,
            attach,
        }
    }
}
