//! Command-line interface: clap derive types and their conversion into validated plans.
//! Parsing is separate from running so that every flag is testable with `try_parse_from`.

use std::path::PathBuf;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::evidence::attach::AttachProtocol;
use crate::evidence::plan::attach::ingress::{IngressController, IngressInput, IngressProvider};
use crate::evidence::plan::attach::{AttachInput, TlsInput};
use crate::evidence::plan::{ClientPlacement, DrainBehavior, KubernetesConfig, ShardPlacement};
use crate::evidence::policy::Explicit;
use crate::evidence::trigger::Trigger;
use crate::k8s::DEFAULT_IMAGE;

mod attach;
mod ci;
mod cleanup;
mod client;
mod rbac;
mod replay;
mod run;
pub use attach::*;
pub use ci::*;
pub use cleanup::*;
pub use client::*;
pub use rbac::*;
pub use replay::*;
pub use run::*;

/// Recorded evidence of what a pod's established connections go through when Kubernetes
/// terminates it.
#[derive(Debug, Parser)]
#[command(name = "drainwatch", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Say only warnings, failures and results on stderr (no progress lines); report files,
    /// tables and event lines are unchanged.
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
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
    /// Print the RBAC a drainwatch identity needs (deploy/rbac.yaml and, with
    /// --target-namespace, deploy/rbac-attach.yaml) for your namespaces, as YAML for
    /// `kubectl apply -f -`.
    Rbac(RbacArgs),
    /// Delete what drainwatch runs left on the cluster (one run's, old leftovers, or all),
    /// and say what.
    Cleanup(CleanupArgs),
    /// The CI steps (GitHub Action or any CI): judge, job summary, PR comment, step outputs.
    Ci(CiArgs),
    /// Compare a run with a baseline run, arm by arm and metric by metric: exit 1 when a metric
    /// regressed.
    Compare(CompareArgs),
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

/// `--client-placement`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlacementArg {
    /// One client pod per node.
    PerNode,
    /// Where the scheduler puts them, kept apart where it can.
    Spread,
}

impl From<PlacementArg> for ShardPlacement {
    fn from(p: PlacementArg) -> Self {
        match p {
            PlacementArg::PerNode => Self::PerNode,
            PlacementArg::Spread => Self::Spread,
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
    /// Where the client pods of `--clients 2` or more run: each pinned to a Ready, schedulable
    /// node of its own (per-node, the default; one data-plane view per node), or placed by the
    /// scheduler, kept apart where it can (spread).
    #[arg(long, value_enum)]
    pub client_placement: Option<PlacementArg>,
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

/// How the pod under test is made to terminate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TriggerArg {
    /// Local: SIGTERM to the probe, SIGKILL after the grace period.
    Sigterm,
    /// Delete the pod under test (its grace period applies).
    Delete,
    /// Evict it through the Eviction API (a PodDisruptionBudget may refuse).
    Evict,
    /// Scale the workload down so that the pod under test is removed.
    Scale,
    /// Roll the workload as `kubectl rollout restart` does (with --target).
    RolloutRestart,
    /// Cordon the pod's node and evict the target's pods on it (with --target).
    DrainNode,
}

impl From<TriggerArg> for Trigger {
    fn from(t: TriggerArg) -> Self {
        match t {
            TriggerArg::Sigterm => Self::Sigterm,
            TriggerArg::Delete => Self::Delete,
            TriggerArg::Evict => Self::Evict,
            TriggerArg::Scale => Self::Scale,
            TriggerArg::RolloutRestart => Self::RolloutRestart,
            TriggerArg::DrainNode => Self::DrainNode,
        }
    }
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

/// Parses `500ms`, `10s`, `1.5s`, `2m`, `2h` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    crate::evidence::duration::parse_ms(s, Some(crate::evidence::duration::Unit::Seconds))
        .map(Duration::from_millis)
        .map_err(|e| e.to_string())
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
    /// Ping interval; drainwatch's probe heartbeats at the same interval, and a flow silent for
    /// three intervals (1.5 s at least) records a gap. Longer intervals lighten thousands of
    /// flows at the cost of timing resolution.
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
    /// What the flows speak: http (keep-alive HTTP/1.1 requests), http2 (h2c requests as
    /// streams), grpc (unary calls, grpc.health.v1.Health/Check by default), websocket (held,
    /// pinged) or tcp (held connections). Default http.
    #[arg(long, value_enum)]
    pub protocol: Option<ProtocolArg>,
    /// HTTP request path (default /).
    #[arg(long)]
    pub path: Option<String>,
    /// The HTTP status a served request answers (default 200).
    #[arg(long)]
    pub expect_status: Option<u16>,
    /// New connections dialled per second through the whole window (default 20; 0: none).
    #[arg(long)]
    pub dial_rate: Option<u32>,
    /// The time a client allows one dial and one request (default 2s; at most 60s): as long
    /// as your own clients wait, so that what an ingress's retries hide from them is judged
    /// as they would see it.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub request_timeout: Option<Duration>,
    /// Speak TLS on every held connection and dial (the client pod's own socket, wrapped).
    #[arg(long)]
    pub tls: bool,
    /// The CA certificates (PEM) on this host the server's certificate must chain to (with
    /// --tls); it reaches the client pod as a ConfigMap of the trial, removed with it.
    #[arg(long)]
    pub ca_file: Option<String>,
    /// The name the server's certificate must carry, sent as SNI (with --tls); default
    /// SERVICE.NAMESPACE.svc.
    #[arg(long)]
    pub server_name: Option<String>,
    /// Do not verify the server's certificate (with --tls); said on stderr and in the report.
    #[arg(long)]
    pub insecure_skip_verify: bool,
    /// gRPC: the unary method called every interval, /package.Service/Method, sent an empty
    /// message (e.g. one taking google.protobuf.Empty); default grpc.health.v1.Health/Check.
    #[arg(long)]
    pub grpc_method: Option<String>,
    /// gRPC: HealthCheckRequest.service of the health check (default "": the whole server).
    #[arg(long)]
    pub grpc_service: Option<String>,
    /// gRPC: also hold one grpc.health.v1.Health/Watch per connection and record its serving
    /// statuses (NOT_SERVING before a drain) and how it ended: a gRPC status, or cut by
    /// RST_STREAM, the connection's end or a timeout (gate with no-watch-cut).
    #[arg(long)]
    pub grpc_watch: bool,
    /// Go through your ingress controller: its Service, NAMESPACE/NAME[:PORT], is dialled
    /// instead of the target's, with --ingress-host as the Host; its access log is followed and
    /// each request joined to the pod it went to (HTTP/1.1, plain text).
    #[arg(long, value_name = "NAMESPACE/NAME[:PORT]")]
    pub ingress_service: Option<String>,
    /// The Host header the ingress rule to the target matches (with --ingress-service; with
    /// --ingress-managed, default drainwatch.test).
    #[arg(long, value_name = "NAME")]
    pub ingress_host: Option<String>,
    /// Which controller --ingress-service is (how its access log reads). Default traefik.
    #[arg(long, value_enum)]
    pub ingress: Option<IngressArg>,
    /// Deploy the ingress controller for each trial, in the trial's namespace, instead of
    /// going through yours: Traefik with its access log and API as drainwatch reads them, an
    /// Ingress for --ingress-host (default drainwatch.test) to the target's Service, read with
    /// a RoleBinding in the target's namespace to the ClusterRole drainwatch-ingress-traefik;
    /// all removed at teardown.
    #[arg(long)]
    pub ingress_managed: bool,
    /// The image of the managed controller (with --ingress-managed). Default
    /// docker.io/library/traefik:v3.7.13.
    #[arg(long, value_name = "IMAGE")]
    pub ingress_image: Option<String>,
    /// Which Traefik provider reads the managed Ingress (with --ingress-managed). Default
    /// kubernetes-ingress.
    #[arg(long, value_enum)]
    pub ingress_provider: Option<IngressProviderArg>,
}

/// The providers a managed Traefik reads its Ingress with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IngressProviderArg {
    /// Traefik's own Kubernetes Ingress provider.
    KubernetesIngress,
    /// Its ingress-nginx provider (ingress-nginx's annotations; a retry on every route): the
    /// migration path off ingress-nginx.
    KubernetesIngressNginx,
}

impl From<IngressProviderArg> for IngressProvider {
    fn from(a: IngressProviderArg) -> Self {
        match a {
            IngressProviderArg::KubernetesIngress => Self::KubernetesIngress,
            IngressProviderArg::KubernetesIngressNginx => Self::KubernetesIngressNginx,
        }
    }
}

/// The ingress controllers drainwatch reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IngressArg {
    /// Traefik v3 with a JSON access log that keeps the X-Drainwatch-Request header
    /// (--accesslog.format=json --accesslog.fields.headers.names.X-Drainwatch-Request=keep).
    Traefik,
    /// Envoy as Envoy Gateway deploys it, with a JSON access log (its EnvoyProxy's telemetry)
    /// adding x-drainwatch-request: "%REQ(X-DRAINWATCH-REQUEST)%" to the default fields.
    Envoy,
}

impl From<IngressArg> for IngressController {
    fn from(a: IngressArg) -> Self {
        match a {
            IngressArg::Traefik => Self::Traefik,
            IngressArg::Envoy => Self::Envoy,
        }
    }
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
            || self.dial_rate.is_some()
            || self.request_timeout.is_some()
            || self.tls_input().any()
            || self.grpc_method.is_some()
            || self.grpc_service.is_some()
            || self.grpc_watch
            || self.ingress_input().any();
        any.then(|| AttachInput {
            target: self.target.clone().unwrap_or_default(),
            target_namespace: self.target_namespace.clone(),
            service: self.service.clone(),
            port: self.port.clone(),
            protocol: self.protocol.map(AttachProtocol::from),
            path: self.path.clone(),
            expect_status: self.expect_status,
            dial_rate: self.dial_rate,
            request_timeout_ms: self
                .request_timeout
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            tls: self.tls_input(),
            grpc_method: self.grpc_method.clone(),
            grpc_service: self.grpc_service.clone(),
            grpc_watch: self.grpc_watch,
            ingress: self.ingress_input(),
        })
    }

    fn ingress_input(&self) -> IngressInput {
        IngressInput {
            controller: self.ingress.map(Into::into),
            service: self.ingress_service.clone(),
            host: self.ingress_host.clone(),
            managed: self.ingress_managed,
            image: self.ingress_image.clone(),
            provider: self.ingress_provider.map(Into::into),
        }
    }

    fn tls_input(&self) -> TlsInput {
        TlsInput {
            tls: self.tls,
            ca_file: self.ca_file.clone(),
            server_name: self.server_name.clone(),
            insecure_skip_verify: self.insecure_skip_verify,
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
            shard_placement: self.client_placement.map(Into::into),
        }
    }
}

#[cfg(test)]
mod invocation_tests;
#[cfg(test)]
mod tests;
