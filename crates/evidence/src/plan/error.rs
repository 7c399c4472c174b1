//! Why a plan is refused: one variant per contradiction, each naming the flag at fault.

use crate::trigger::Trigger;

/// Refusals of a plan; each names the flag or value at fault.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    /// `--drain-behavior` is not one of the three.
    #[error("unknown drain behavior {0:?}: expected drain, exit-now or ignore")]
    UnknownBehavior(String),
    /// A port flag is 0.
    #[error("{flag} must be a port between 1 and 65535, got 0")]
    ZeroPort {
        /// The flag at fault.
        flag: &'static str,
    },
    /// No flows of any kind were asked for.
    #[error("--tcp-flows and --udp-flows are both 0: a trial needs at least one flow")]
    NoFlows,
    /// More flows than the 4-digit ids allow.
    #[error(
        "{flag} is {count}: at most 9999 flows of one protocol per client process (--clients {} or more shards them over processes: local platform, or kubernetes with --client host)",
        count.div_ceil(9999)
    )]
    TooManyFlows {
        /// The flag at fault.
        flag: &'static str,
        /// The value given.
        count: u32,
    },
    /// More flows of one protocol than a trial holds, however they are sharded.
    #[error(
        "{flag} is {count}: at most {max} flows of one protocol per trial (each is a row of the report)",
        max = super::MAX_FLOWS_PER_PROTOCOL
    )]
    FlowsAboveTrialCap {
        /// The flag at fault.
        flag: &'static str,
        /// The value given.
        count: u32,
    },
    /// `--clients` is 0.
    #[error(
        "--clients must be at least 1 (the number of client processes the flows are sharded over)"
    )]
    ZeroClients,
    /// More client processes than flows of either protocol: some would hold nothing.
    #[error(
        "--clients {clients} is more than the {flows} flows of the larger protocol: every client process must hold at least one flow"
    )]
    ClientsAboveFlows {
        /// Clients asked for.
        clients: u32,
        /// max(--tcp-flows, --udp-flows).
        flows: u32,
    },
    /// `--client-placement` without client pods to place.
    #[error(
        "--client-placement places the client pods of --clients 2 or more with --client pod; this run has {0}"
    )]
    PlacementWithoutShards(&'static str),
    /// Spread shards could land on the node drain-node drains.
    #[error(
        "--trigger drain-node with --client-placement spread: the scheduler could put a client pod on the node drain-node drains; use --client-placement per-node (the default), which never does"
    )]
    SpreadShardsWithDrain,
    /// The grace period is zero.
    #[error("--grace-period must be at least 1 second")]
    ZeroGrace,
    /// The drain window would not end before SIGKILL.
    #[error(
        "--drain-max-seconds {drain_max} is not below --grace-period {grace}: the drain would be cut by SIGKILL"
    )]
    DrainNotBeforeGrace {
        /// Drain window in seconds.
        drain_max: u32,
        /// Grace period in seconds.
        grace: u32,
    },
    /// The flow timeout cannot tell silence from a heartbeat interval.
    #[error("--flow-timeout ({timeout_ms} ms) must be longer than --interval ({interval_ms} ms)")]
    TimeoutNotAboveInterval {
        /// Flow timeout in ms.
        timeout_ms: u64,
        /// Interval in ms.
        interval_ms: u64,
    },
    /// The interval is zero.
    #[error("--interval must be at least 1 ms")]
    ZeroInterval,
    /// The silence rule would fire on every datagram.
    #[error("--udp-silence-datagrams must be at least 1")]
    ZeroSilence,
    /// `--repeat 0`.
    #[error("--repeat must be at least 1")]
    ZeroRepeat,
    /// The trigger is not one this platform (or an attach trial) accepts.
    #[error("trigger {trigger} is not accepted on --platform {platform}: expected {expected}")]
    TriggerNotAccepted {
        /// The trigger given.
        trigger: Trigger,
        /// The platform.
        platform: &'static str,
        /// What the platform accepts.
        expected: String,
    },
    /// A `--probe-env` value is not `KEY=VALUE`.
    #[error("--probe-env {0:?} is not KEY=VALUE with a non-empty KEY")]
    BadProbeEnv(String),
    /// `--replicas 0`.
    #[error("--replicas must be at least 1: the trial needs a pod under test")]
    ZeroReplicas,
    /// `--readiness-period 0`.
    #[error("--readiness-period must be at least 1 second (the kubelet's minimum)")]
    ZeroReadinessPeriod,
    /// The preStop sleep plus the drain window would not end before SIGKILL.
    #[error(
        "--prestop-sleep {prestop} plus --drain-max-seconds {drain_max} is not below --grace-period {grace}: the preStop sleep counts against the grace period, so the drain would be cut by SIGKILL"
    )]
    PrestopDrainNotBeforeGrace {
        /// preStop sleep in seconds.
        prestop: u32,
        /// Drain window in seconds.
        drain_max: u32,
        /// Grace period in seconds.
        grace: u32,
    },
    /// `--target` is not `deployment/NAME` or `statefulset/NAME`.
    #[error(
        "--target {0:?} is not deployment/NAME or statefulset/NAME (NAME a lowercase DNS name)"
    )]
    BadTarget(String),
    /// `--port` is neither a port number nor a port name.
    #[error("--port {0:?} is neither a port number 1-65535 nor a Service port name")]
    BadPort(String),
    /// A namespace or Service name that cannot be one.
    #[error("{flag} {value:?} is not a valid object name (lowercase DNS name)")]
    BadObjectName {
        /// The flag at fault.
        flag: &'static str,
        /// The value given.
        value: String,
    },
    /// `--path` or `--expect-status` with `--protocol tcp`, or `--expect-status` with
    /// `--protocol websocket`.
    #[error(
        "--path applies to --protocol http, http2 and websocket, --expect-status to --protocol http and http2 only"
    )]
    HttpOnlyFlag,
    /// The gRPC flags do not make a call (the reason, as `GrpcFlagError` says it).
    #[error("{0}")]
    Grpc(String),
    /// `--path` that is not an absolute request path.
    #[error("--path {0:?} must start with / and contain no whitespace")]
    BadPath(String),
    /// `--expect-status` outside the HTTP status range.
    #[error("--expect-status {0} is not an HTTP status (100-599)")]
    BadExpectStatus(u16),
    /// `--dial-rate` above the prober's bound.
    #[error(
        "--dial-rate {rate} is above {max} dials a second: the prober must not become a load test"
    )]
    DialRateTooHigh {
        /// The rate given.
        rate: u32,
        /// The highest rate accepted.
        max: u32,
    },
    /// `--request-timeout` of 0 or above the bound.
    #[error(
        "--request-timeout {ms}ms is not between 1ms and {max}ms: a client that waits longer has stopped measuring a drain"
    )]
    RequestTimeout {
        /// The timeout given, ms.
        ms: u64,
        /// The longest accepted, ms.
        max: u64,
    },
    /// Neither held flows nor the new-connection prober.
    #[error("--tcp-flows is 0 and --dial-rate is 0: an attach trial needs flows or dials")]
    NoAttachFlows,
    /// UDP flows against an attached workload.
    #[error(
        "--udp-flows {0}: with --target the flows are tcp or http (--protocol); set --udp-flows 0"
    )]
    UdpWithTarget(u32),
    /// A TLS flag without `--tls`.
    #[error("{0} needs --tls")]
    TlsFlagWithoutTls(&'static str),
    /// `--tls` without a way to trust the server.
    #[error(
        "--tls needs --ca-file (the CA to verify the server against) or --insecure-skip-verify"
    )]
    TlsTrust,
    /// `--tls` with both a CA file and verification off.
    #[error("--ca-file and --insecure-skip-verify contradict each other: give one")]
    TlsTrustBoth,
    /// A server name that cannot be one.
    #[error("--server-name {0:?} is not a DNS name or an IP address")]
    BadServerName(String),
    /// Attach flags without `--target`.
    #[error("{0} needs --target")]
    NeedsTarget(&'static str),
    /// The ingress flags do not make an ingress to go through (the reason).
    #[error("{0}")]
    Ingress(String),
    /// `--target` with `--client host`.
    #[error(
        "--target runs its flows from a client pod (dialling the Service's ClusterIP as in-cluster clients do): --client host is not supported with it"
    )]
    TargetWithHostClient,
    /// `--target` off Kubernetes.
    #[error("--target attaches to a Kubernetes workload: it needs --platform kubernetes")]
    TargetOffKubernetes,
    /// The observation window ends before the grace period.
    #[error(
        "--observe-timeout {observe} is shorter than --grace-period {grace}: the window would close before the kubelet's SIGKILL"
    )]
    ObserveShorterThanGrace {
        /// Observation window in seconds.
        observe: u32,
        /// Grace period in seconds.
        grace: u32,
    },
}
