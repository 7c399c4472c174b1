//! `drainwatch client`: the flows against a probe, or the attach client against a workload
//! (the line the platforms build is `evidence::plan::client::ClientInvocation`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{AttachArgs, FlowArgs, parse_duration};

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
