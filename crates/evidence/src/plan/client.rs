//! The `drainwatch client` command line, built in one place from typed settings. The local
//! platform's client processes, a probe trial's client pods and an attach trial's (one per
//! shard) all run it; [`ClientInvocation::argv`] is where its flags are spelled, and a test in
//! `cli` parses every kind of line it builds back through the clap definition and compares.

use super::attach::config::AttachConfig;

/// One run of `drainwatch client`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientInvocation {
    /// Flows against the probe (its TCP and UDP ports), events on stdout.
    Probe(ProbeClient),
    /// The attach client against the user's workload (boxed: its configuration is most of
    /// the size).
    Attach(Box<AttachClient>),
}

/// A client of the probe: one slice of the run's flows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeClient {
    /// The probe's address (a ClusterIP, or loopback).
    pub host: String,
    /// The probe's TCP port.
    pub tcp_port: u16,
    /// The probe's UDP port.
    pub udp_port: u16,
    /// TCP flows of this client.
    pub tcp_flows: u32,
    /// UDP flows of this client.
    pub udp_flows: u32,
    /// Number of the first TCP flow (a slice continues the run's ids).
    pub first_tcp_flow: u32,
    /// Number of the first UDP flow.
    pub first_udp_flow: u32,
    /// Ping interval, ms.
    pub interval_ms: u64,
    /// Flow timeout, ms.
    pub flow_timeout_ms: u64,
    /// Unanswered datagrams that end a UDP flow.
    pub udp_silence_datagrams: u32,
    /// Upper bound on the client's life, s; the trial ends it earlier.
    pub duration_seconds: u64,
    /// Write clock samples (a client on another kernel than the orchestrator's).
    pub clock_extension: bool,
}

/// The attach client: the trial's dial settings, and a shard's part of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachClient {
    /// What every client of the trial dials.
    pub config: AttachConfig,
    /// This client's share when the connections and dials are split across clients.
    pub shard: Option<AttachShard>,
}

/// One client's share of an attach trial split across `dial_stride` clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttachShard {
    /// Held connections of this client.
    pub tcp_flows: u32,
    /// Number of its first held connection.
    pub first_tcp_flow: u32,
    /// The first dial number it makes (1-based).
    pub first_dial: u64,
    /// It makes every `dial_stride`-th dial: the number of clients.
    pub dial_stride: u32,
}

/// An attach client's `--duration`: an upper bound only, the trial ends the client (SIGTERM).
pub const ATTACH_CLIENT_HOLD: &str = "86400s";

impl ClientInvocation {
    /// The flows this client holds (its pod's memory is sized from them).
    pub fn flows(&self) -> u64 {
        match self {
            Self::Probe(p) => u64::from(p.tcp_flows) + u64::from(p.udp_flows),
            Self::Attach(a) => u64::from(a.shard.map_or(a.config.tcp_flows, |s| s.tcp_flows)),
        }
    }

    /// How long the client may take to stop once told to, seconds: the requests and dials it
    /// has in flight when its window closes run out their timeout first, so an attach client
    /// gets its request timeout on top of the 10 s a probe client has.
    pub fn grace_seconds(&self) -> i64 {
        const BASE: i64 = 10;
        match self {
            Self::Probe(_) => BASE,
            Self::Attach(a) => {
                BASE + i64::try_from(a.config.request_timeout_ms.div_ceil(1000)).unwrap_or(60)
            }
        }
    }

    /// The arguments after the program name, starting with `client`.
    pub fn argv(&self) -> Vec<String> {
        let mut a = Argv(vec!["client".into()]);
        match self {
            Self::Probe(p) => p.push(&mut a),
            Self::Attach(c) => c.push(&mut a),
        }
        a.0
    }
}

impl ProbeClient {
    fn push(&self, a: &mut Argv) {
        a.flag("--events-stdout");
        a.opt("--host", &self.host);
        a.opt("--tcp-port", self.tcp_port);
        a.opt("--udp-port", self.udp_port);
        a.opt("--tcp-flows", self.tcp_flows);
        a.opt("--udp-flows", self.udp_flows);
        a.opt("--first-tcp-flow", self.first_tcp_flow);
        a.opt("--first-udp-flow", self.first_udp_flow);
        a.ms("--interval", self.interval_ms);
        a.ms("--flow-timeout", self.flow_timeout_ms);
        a.opt("--udp-silence-datagrams", self.udp_silence_datagrams);
        a.opt("--duration", format!("{}s", self.duration_seconds.max(1)));
        if self.clock_extension {
            a.flag("--clock-extension");
        }
    }
}

impl AttachClient {
    fn push(&self, a: &mut Argv) {
        let d = &self.config;
        a.flag("--attach");
        a.opt("--protocol", d.protocol.as_str());
        a.opt("--host", &d.host);
        a.opt("--port", d.port);
        a.opt(
            "--tcp-flows",
            self.shard.map_or(d.tcp_flows, |s| s.tcp_flows),
        );
        a.ms("--interval", d.interval_ms);
        a.opt("--dial-rate", d.dial_rate);
        a.ms("--request-timeout", d.request_timeout_ms);
        a.ms("--keepalive-idle", d.keepalive_idle_ms);
        a.ms("--keepalive-interval", d.keepalive_interval_ms);
        a.opt("--keepalive-count", d.keepalive_count);
        a.ms("--user-timeout", d.user_timeout_ms);
        if let Some(path) = &d.path {
            a.opt("--path", path);
        }
        if let Some(status) = d.expect_status {
            a.opt("--expect-status", status);
        }
        if let Some(t) = &d.tls {
            a.flag("--tls");
            a.opt("--server-name", &t.server_name);
            if let Some(ca) = &t.ca_file {
                a.opt("--ca-file", ca);
            }
            if t.insecure_skip_verify {
                a.flag("--insecure-skip-verify");
            }
        }
        if let Some(g) = &d.grpc {
            if let Some(m) = &g.method {
                a.opt("--grpc-method", m);
            }
            if let Some(s) = g.service.as_ref().filter(|s| !s.is_empty()) {
                a.opt("--grpc-service", s);
            }
            if g.watch {
                a.flag("--grpc-watch");
            }
        }
        if let Some(h) = &d.host_header {
            a.opt("--host-header", h);
        }
        if let Some(p) = &d.request_id_prefix {
            a.opt("--request-id-prefix", p.as_str());
        }
        if let Some(direct) = &d.direct_dial {
            a.opt("--direct-dial", direct);
        }
        if let Some(s) = self.shard {
            a.opt("--first-tcp-flow", s.first_tcp_flow);
            a.opt("--first-dial", s.first_dial);
            a.opt("--dial-stride", s.dial_stride);
        }
        a.opt("--duration", ATTACH_CLIENT_HOLD);
    }
}

/// An argument list under construction.
struct Argv(Vec<String>);

impl Argv {
    fn flag(&mut self, name: &str) {
        self.0.push(name.into());
    }

    fn opt(&mut self, name: &str, value: impl ToString) {
        self.0.extend([name.to_string(), value.to_string()]);
    }

    /// A duration in whole milliseconds, as the client's duration flags read it.
    fn ms(&mut self, name: &str, ms: u64) {
        self.opt(name, format!("{ms}ms"));
    }
}
