//! Command-line interface: clap derive types and their conversion into validated plans.
//! Parsing is separate from running so that every flag is testable with `try_parse_from`.

use std::path::PathBuf;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::evidence::plan::attach::AttachInput;
use crate::evidence::plan::{
    ClientPlacement, DrainBehavior, KubernetesConfig, PlanInput, Platform,
};
use crate::evidence::policy::Explicit;
use crate::k8s::DEFAULT_IMAGE;

mod attach;
mod ci;
pub use attach::*;
pub use ci::*;

/// Recorded evidence of what a pod's established connections go through when Kubernetes
/// terminates it.
#[derive(Debug, Parser)]
#[command(name = "drainwatch", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
// Parsed once per process: the size of the largest variant costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The orchestrator: start the workload, verify, hold flows, trigger, observe, report.
    // Boxed: with the attach flags `run` is by far the largest variant.
    Run(Box<RunArgs>),
    /// The workload whose termination is measured (configured by environment variables:
    /// DRAIN_BEHAVIOR, DRAIN_MAX_SECONDS, EXIT_NOW_FORCE_RST, PROBE_TCP_PORT, PROBE_UDP_PORT,
    /// PROBE_READY_PORT, POD_NAME).
    Probe,
    /// The flow generator, for manual runs against a running probe.
    Client(ClientArgs),
    /// Rebuild report.json and the table from a trial's events.jsonl (replay).
    Report(ReportArgs),
    /// Print the Kubernetes objects `run --platform kubernetes` would create, as YAML.
    Manifests(ManifestsArgs),
    /// Delete everything labelled app.kubernetes.io/managed-by=drainwatch, and say what.
    Cleanup(ClusterArgs),
    /// The CI steps (GitHub Action or any CI): judge, job summary, PR comment, step outputs.
    Ci(CiArgs),
}

/// Where the flow client runs on Kubernetes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClientArg {
    /// A pod of the probe image dials the Service's ClusterIP (any cluster, any OS).
    Pod,
    /// drainwatch dials a NodePort from where it runs (kind, the local cluster).
    Host,
}

impl From<ClientArg> for ClientPlacement {
    fn from(c: ClientArg) -> Self {
        match c {
            ClientArg::Pod => Self::Pod,
            ClientArg::Host => Self::Host,
        }
    }
}

/// How to reach a cluster.
#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// Kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (default: the current context).
    #[arg(long)]
    pub context: Option<String>,
    /// Seconds the API server may take to answer before the run gives up (exit 2).
    #[arg(long, default_value_t = 15)]
    pub api_timeout: u64,
}

/// The Kubernetes workload settings shared by `run` and `manifests`.
#[derive(Debug, Clone, Args)]
pub struct WorkloadArgs {
    /// Use this existing namespace instead of creating drainwatch-<run id>-<trial> per trial.
    #[arg(long)]
    pub namespace: Option<String>,
    /// The probe (and client pod) image.
    #[arg(long, default_value = DEFAULT_IMAGE)]
    pub image: String,
    /// Replicas of the probe Deployment; the first running pod by name is the pod under test.
    #[arg(long, default_value_t = 1)]
    pub replicas: u32,
    /// Where the flow client runs.
    #[arg(long, value_enum, env = "DRAINWATCH_CLIENT", default_value_t = ClientArg::Pod)]
    pub client: ClientArg,
    /// Guard the probe with a PodDisruptionBudget that forbids evictions (maxUnavailable 0).
    #[arg(long)]
    pub pdb: bool,
    /// A preStop sleep of this many seconds before SIGTERM (0: no hook).
    #[arg(long, default_value_t = 0)]
    pub prestop_sleep: u32,
    /// periodSeconds of the probe's readiness probe.
    #[arg(long, default_value_t = 1)]
    pub readiness_period: u32,
    /// Extra environment of the probe container, KEY=VALUE (repeatable): the probe's own knobs
    /// such as PROBE_LOG_HEARTBEATS=true or PROBE_UDP_SOCKETS=4.
    #[arg(long = "probe-env", value_name = "KEY=VALUE")]
    pub probe_env: Vec<String>,
}

/// `drainwatch manifests`.
#[derive(Debug, Clone, Args)]
pub struct ManifestsArgs {
    /// Workload settings.
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// What the probe does on SIGTERM.
    #[arg(long, value_enum, default_value_t = BehaviorArg::Drain)]
    pub drain_behavior: BehaviorArg,
    /// terminationGracePeriodSeconds.
    #[arg(long, default_value_t = 30)]
    pub grace_period: u32,
    /// The probe's drain window; 0 means grace period - 5 - preStop sleep (at least 1).
    #[arg(long, default_value_t = 0)]
    pub drain_max_seconds: u32,
    /// The Service's TCP port.
    #[arg(long, default_value_t = 7001)]
    pub tcp_port: u16,
    /// The Service's UDP port.
    #[arg(long, default_value_t = 7002)]
    pub udp_port: u16,
}

impl Cli {
    /// Parses the process arguments like [`Parser::parse`], and also records which `run`
    /// settings were given explicitly, since only those can conflict with a policy.
    pub fn parse_explicit() -> Self {
        let matches = Self::command().get_matches();
        Self::from_matches(&matches).unwrap_or_else(|e| e.exit())
    }

    /// [`Cli::parse_explicit`] over the given arguments, for tests.
    pub fn try_parse_explicit<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches = Self::command().try_get_matches_from(args)?;
        Self::from_matches(&matches)
    }

    fn from_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut cli = Self::from_arg_matches(matches)?;
        if let (Command::Run(args), Some(("run", m))) = (&mut cli.command, matches.subcommand()) {
            args.explicit = explicit(m);
        }
        Ok(cli)
    }
}

/// Which arm settings came from the command line or the environment rather than defaults.
fn explicit(m: &ArgMatches) -> Explicit {
    let given = |id: &str| {
        matches!(
            m.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
    };
    Explicit {
        behavior: given("drain_behavior"),
        trigger: given("trigger"),
        grace_period: given("grace_period"),
        drain_max_seconds: given("drain_max_seconds"),
        tcp_flows: given("tcp_flows"),
        udp_flows: given("udp_flows"),
        repeat: given("repeat"),
    }
}

/// Where the workload runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlatformArg {
    /// A probe child process on this machine; the trigger is SIGTERM.
    Local,
    /// A probe pod on the cluster of the current kubeconfig.
    Kubernetes,
}

/// The SIGTERM behaviour of the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BehaviorArg {
    /// Fail readiness, keep serving, announce and close at the drain deadline.
    Drain,
    /// Abandon flows and exit at once.
    ExitNow,
    /// Keep serving until SIGKILL.
    Ignore,
}

impl From<BehaviorArg> for DrainBehavior {
    fn from(b: BehaviorArg) -> Self {
        match b {
            BehaviorArg::Drain => Self::Drain,
            BehaviorArg::ExitNow => Self::ExitNow,
            BehaviorArg::Ignore => Self::Ignore,
        }
    }
}

/// Parses `500ms`, `10s`, `1.5s`, `2m` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (examples: 500ms, 10s, 1.5s, 2m)"))?;
    if !n.is_finite() || n < 0.0 {
        return Err(format!("{s:?} is not a non-negative duration"));
    }
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (use ms, s or m)")),
    };
    Ok(Duration::from_secs_f64(secs))
}

/// Flow options shared by `run` and `client`.
#[derive(Debug, Clone, Args)]
pub struct FlowArgs {
    /// Long-lived TCP flows.
    #[arg(long, default_value_t = 10)]
    pub tcp_flows: u32,
    /// UDP flows.
    #[arg(long, default_value_t = 10)]
    pub udp_flows: u32,
    /// Ping interval.
    #[arg(long, default_value = "500ms", value_parser = parse_duration)]
    pub interval: Duration,
    /// Silence after which a flow is read-timeout.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub flow_timeout: Duration,
    /// Unanswered UDP datagrams that end a UDP flow as silent.
    #[arg(long, default_value_t = 6)]
    pub udp_silence_datagrams: u32,
}

/// `drainwatch run --target`: measure your own workload through its Service.
#[derive(Debug, Clone, Default, Args)]
pub struct TargetArgs {
    /// Your workload, deployment/NAME or statefulset/NAME: no probe is deployed; its pods are
    /// watched and its Service dialled (--tcp-flows flows, --dial-rate new connections).
    #[arg(long)]
    pub target: Option<String>,
    /// The target's namespace (default: the kubeconfig context's namespace). --namespace stays
    /// where drainwatch's own client pod lives.
    #[arg(long)]
    pub target_namespace: Option<String>,
    /// The Service dialled (default: the one Service whose selector selects the target's pods).
    #[arg(long)]
    pub service: Option<String>,
    /// The Service port, by number or name (default: the Service's only port).
    #[arg(long)]
    pub port: Option<String>,
    /// What the flows speak: http (keep-alive requests) or tcp (held connections). Default http.
    #[arg(long)]
    pub protocol: Option<String>,
    /// HTTP request path (default /).
    #[arg(long)]
    pub path: Option<String>,
    /// The HTTP status a served request answers (default 200).
    #[arg(long)]
    pub expect_status: Option<u16>,
    /// New connections dialled per second through the whole window (default 20; 0: none).
    #[arg(long)]
    pub dial_rate: Option<u32>,
}

impl TargetArgs {
    /// The attach input; `None` when no attach flag was given. Attach flags without
    /// `--target` still make an input, which validation refuses by naming the flag.
    pub fn input(&self) -> Option<AttachInput> {
        let any = self.target.is_some()
            || self.target_namespace.is_some()
            || self.service.is_some()
            || self.port.is_some()
            || self.protocol.is_some()
            || self.path.is_some()
            || self.expect_status.is_some()
            || self.dial_rate.is_some();
        any.then(|| AttachInput {
            target: self.target.clone().unwrap_or_default(),
            target_namespace: self.target_namespace.clone(),
            service: self.service.clone(),
            port: self.port.clone(),
            protocol: self.protocol.clone(),
            path: self.path.clone(),
            expect_status: self.expect_status,
            dial_rate: self.dial_rate,
        })
    }
}

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
    /// The termination trigger (local: sigterm; kubernetes: delete, evict or scale; default
    /// sigterm or delete).
    #[arg(long)]
    pub trigger: Option<String>,
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
    /// Shard the flows over this many `drainwatch client` child processes on this machine
    /// (local platform, or kubernetes with --client host), each holding a contiguous slice of
    /// the ids, to go past one process's open-file limit. 1: the flows run in this process.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub clients: u32,
    /// Output directory.
    #[arg(long, default_value = "out")]
    pub out: PathBuf,
    /// Run the arms of this policy (a TOML file, or builtin:smoke) and gate on its thresholds:
    /// writes OUT/<arm>/ per arm and OUT/junit.xml, OUT/summary.md, OUT/verdict.json; exit 1
    /// when a threshold is missed. The policy's settings win; a flag that disagrees is an error.
    #[arg(long)]
    pub policy: Option<String>,
    /// With --policy: run only these arms (comma-separated names).
    #[arg(long, requires = "policy")]
    pub arms: Option<String>,
    /// Which of the flags above were given explicitly (filled by [`Cli::parse_explicit`]).
    #[arg(skip)]
    pub explicit: Explicit,
}

impl RunArgs {
    /// The plan these flags ask for, before validation.
    pub fn plan_input(&self) -> PlanInput {
        let platform = match self.platform {
            PlatformArg::Local => Platform::Local,
            PlatformArg::Kubernetes => Platform::Kubernetes,
        };
        let trigger = self.trigger.clone().unwrap_or_else(|| match platform {
            Platform::Local => "sigterm".into(),
            Platform::Kubernetes => "delete".into(),
        });
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

impl WorkloadArgs {
    /// The Kubernetes settings these flags ask for.
    pub fn config(&self) -> KubernetesConfig {
        KubernetesConfig {
            image: self.image.clone(),
            replicas: self.replicas,
            client: self.client.into(),
            prestop_sleep_seconds: self.prestop_sleep,
            readiness_period_seconds: self.readiness_period,
            pdb: self.pdb,
            probe_env: self.probe_env.clone(),
            attach: None,
        }
    }
}

/// `drainwatch client`.
#[derive(Debug, Clone, Args)]
pub struct ClientArgs {
    /// Host running the probe.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The probe's TCP port.
    #[arg(long, default_value_t = 7001)]
    pub tcp_port: u16,
    /// The probe's UDP port.
    #[arg(long, default_value_t = 7002)]
    pub udp_port: u16,
    /// Flow options.
    #[command(flatten)]
    pub flows: FlowArgs,
    /// How long to hold the flows (stops early when every flow has ended).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Write report.json and events.jsonl here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Ask for the probe's clock in UDP acks (an extension the Go client never sends).
    #[arg(long)]
    pub clock_extension: bool,
    /// Stream every event line to stdout as it happens (for a client running in a pod).
    #[arg(long)]
    pub events_stdout: bool,
    /// Benchmark counters (heartbeat lateness against a PROBE_BENCH probe, UDP round trips),
    /// written to stderr as one `bench_stats {json}` line at the end.
    #[arg(long, hide = true)]
    pub bench_stats: bool,
    /// Number of the first TCP flow (its id is tcp-<K>): a slice of a sharded run continues the
    /// global sequence, so several clients together hold the ids one client would.
    #[arg(long, default_value_t = 1, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
    pub first_tcp_flow: u32,
    /// Number of the first UDP flow (its id is udp-<K>).
    #[arg(long, default_value_t = 1, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
    pub first_udp_flow: u32,
    /// Attach mode: measure an unmodified workload.
    #[command(flatten)]
    pub attach: AttachArgs,
}

/// `drainwatch report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// A trial's events.jsonl.
    #[arg(long)]
    pub events: PathBuf,
    /// Write the regenerated report.json into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5h").is_err());
    }

    #[test]
    fn unknown_behaviour_is_a_usage_error() {
        let e =
            Cli::try_parse_from(["drainwatch", "run", "--drain-behavior", "graceful"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("graceful"));
    }

    #[test]
    fn explicit_flags_are_told_apart_from_defaults() {
        let cli = Cli::try_parse_explicit([
            "drainwatch",
            "run",
            "--policy",
            "p.toml",
            "--grace-period",
            "30",
            "--udp-flows",
            "2",
        ])
        .unwrap();
        let Command::Run(r) = cli.command else {
            panic!("not run")
        };
        assert_eq!(
            r.explicit,
            Explicit {
                grace_period: true,
                udp_flows: true,
                ..Explicit::default()
            },
            "30 is the default value, but it was typed, so it can conflict"
        );
        assert_eq!(r.policy.as_deref(), Some("p.toml"));
        let e = Cli::try_parse_explicit(["drainwatch", "run", "--arms", "a"]).unwrap_err();
        assert!(e.to_string().contains("--policy"), "{e}");
    }

    #[test]
    fn run_defaults_become_a_valid_plan() {
        let cli = Cli::try_parse_from(["drainwatch", "run"]).unwrap();
        let Command::Run(r) = cli.command else {
            panic!("not run")
        };
        let c = r.plan_input().validate().unwrap();
        assert_eq!(c.platform, Platform::Kubernetes);
        assert_eq!(c.trigger, "delete");
        assert_eq!(c.drain_max_seconds, 25);
        assert_eq!(c.tcp_flows, 10);
        let k = c.kubernetes.unwrap();
        assert_eq!(k.image, DEFAULT_IMAGE);
        assert_eq!((k.replicas, k.client), (1, ClientPlacement::Pod));
        let cli = Cli::try_parse_from(["drainwatch", "run", "--platform", "local"]).unwrap();
        let Command::Run(r) = cli.command else {
            panic!("not run")
        };
        let c = r.plan_input().validate().unwrap();
        assert_eq!(c.trigger, "sigterm");
        assert!(c.kubernetes.is_none() && c.namespace.is_none());
    }

    #[test]
    fn kubernetes_flags_reach_the_plan() {
        let cli = Cli::try_parse_from([
            "drainwatch",
            "run",
            "--trigger",
            "evict",
            "--pdb",
            "--client",
            "host",
            "--replicas",
            "2",
            "--prestop-sleep",
            "3",
            "--readiness-period",
            "2",
            "--namespace",
            "team-a",
            "--image",
            "reg/x:1",
        ])
        .unwrap();
        let Command::Run(r) = cli.command else {
            panic!("not run")
        };
        let c = r.plan_input().validate().unwrap();
        let k = c.kubernetes.unwrap();
        assert_eq!(c.namespace.as_deref(), Some("team-a"));
        assert!(k.pdb && k.client == ClientPlacement::Host);
        assert_eq!(
            (
                k.replicas,
                k.prestop_sleep_seconds,
                k.readiness_period_seconds
            ),
            (2, 3, 2)
        );
        assert_eq!(c.drain_max_seconds, 22);
        let bad = Cli::try_parse_from(["drainwatch", "run", "--trigger", "drain"]).unwrap();
        let Command::Run(r) = bad.command else {
            panic!("not run")
        };
        assert!(
            r.plan_input()
                .validate()
                .unwrap_err()
                .to_string()
                .contains("delete, evict or scale")
        );
        assert_eq!(
            Cli::try_parse_from(["drainwatch", "run", "--client", "sidecar"])
                .unwrap_err()
                .exit_code(),
            2
        );
    }

    #[test]
    fn target_flags_make_an_attach_plan() {
        let cli = Cli::try_parse_explicit([
            "drainwatch",
            "run",
            "--target",
            "deployment/web",
            "--target-namespace",
            "shop",
            "--port",
            "http",
            "--trigger",
            "drain-node",
            "--dial-rate",
            "5",
        ])
        .unwrap();
        let Command::Run(r) = cli.command else {
            panic!("not run")
        };
        let c = r.plan_input().validate().unwrap();
        assert_eq!(c.drain_behavior, None, "not the probe");
        assert_eq!((c.tcp_flows, c.udp_flows), (10, 0));
        let a = c.kubernetes.unwrap().attach.unwrap();
        assert_eq!(a.target.to_string(), "deployment/web");
        assert_eq!(a.target_namespace.as_deref(), Some("shop"));
        assert_eq!(a.dial_rate, 5);
        let cli = Cli::try_parse_explicit([
            "drainwatch",
            "run",
            "--target",
            "deployment/web",
            "--udp-flows",
            "2",
        ])
        .unwrap();
        let Command::Run(r) = cli.command else {
            panic!("not run")
        };
        assert!(
            r.plan_input()
                .validate()
                .unwrap_err()
                .to_string()
                .contains("--udp-flows 2")
        );
        let cli = Cli::try_parse_explicit(["drainwatch", "run", "--service", "web"]).unwrap();
        let Command::Run(r) = cli.command else {
            panic!("not run")
        };
        assert_eq!(
            r.plan_input().validate().unwrap_err().to_string(),
            "--service needs --target"
        );
    }
}
