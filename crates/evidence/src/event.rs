//! The one event-line format: the probe's stdout, the client's stdout or pod log, and a trial's
//! `events.jsonl` all carry these lines.
//!
//! The field names are a superset of the Go drainwatch v0.1 probe log (`wall`, `mono_ms`,
//! `event`, `flow_id`, `seq`, `detail`, `errno`, `drain_behavior`), so a Go probe's stdout parses
//! as version 0 lines and a Go reader of ours ignores what it does not know. Lines written by
//! this build carry `v: 1`.
//!
//! Attach trials add the client events `attach_*` and the optional fields `result`, `status`
//! and `latency_ns`, still version 1 (an optional field keeps the version); the names and their
//! meaning are listed in `evidence::attach`.
//!
//! Every event name is a variant of [`EventName`] (`event/name.rs`): producers build lines from
//! it and the core matches on it; a name another version wrote is kept as read.

use serde::{Deserialize, Serialize};
use std::fmt;

mod name;

pub use name::{EventName, UnknownName};

use super::classify::Op;
use super::environment::Environment;
use super::plan::{DrainBehavior, TrialConfig};
use super::settings::TerminationSettings;

/// The version of the event-line format this build writes.
///
/// Bumped when a field changes meaning; adding an optional field keeps the version.
pub const EVENT_FORMAT_VERSION: u32 = 1;

/// Which process or observer produced an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The flow generator (its sockets).
    Client,
    /// Kubernetes watches.
    K8s,
    /// The trial loop itself.
    Orchestrator,
    /// The workload under test.
    Probe,
    /// An ingress controller's access log, read by the orchestrator (schema 5.2).
    Ingress,
}

impl Source {
    /// The name written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::K8s => "k8s",
            Self::Orchestrator => "orchestrator",
            Self::Probe => "probe",
            Self::Ingress => "ingress",
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event line.
///
/// Times: `at_ns` is the recording orchestrator's CLOCK_MONOTONIC in nanoseconds when it
/// recorded or received the line; `mono_ns` is the emitting process's own CLOCK_MONOTONIC at
/// emission; `wall` is the emitter's wall clock. The core decides which to trust per source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventLine {
    /// Format version; 0 for Go v0.1 lines, which lack the field.
    #[serde(default)]
    pub v: u32,
    /// Producer; absent on lines read straight from a probe's stdout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// Per-source line counter, so gaps and reordering in a log stream are visible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// Orchestrator CLOCK_MONOTONIC ns when recorded or received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ns: Option<i64>,
    /// Emitter's CLOCK_MONOTONIC ns at emission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mono_ns: Option<i64>,
    /// Emitter's RFC 3339 wall clock with nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall: Option<String>,
    /// Milliseconds since the emitter started (Go compatibility).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mono_ms: Option<i64>,
    /// Event name.
    pub event: EventName,
    /// Flow the event belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_id: Option<String>,
    /// Protocol sequence number (heartbeat, ack, bye), not the line counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// Free text for humans; never parsed for classification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Symbolic errno (ECONNRESET, EPIPE, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errno: Option<String>,
    /// Socket operation that failed: read or write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<Op>,
    /// The probe's behaviour (Go compatibility, on a few probe events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain_behavior: Option<DrainBehavior>,
    /// Probe instance that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// Peer wall clock carried in the reply (hb unixnano, or the clock extension of ack).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_wall_ns: Option<i64>,
    /// When the request this reply answers was sent, on the recorder's monotonic clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_ns: Option<i64>,
    /// Kernel boot id of the emitter, naming its CLOCK_MONOTONIC domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// Process exit code, on `container_terminated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Terminating signal, on `container_terminated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Closed result name of an attach observation (`ok`, `served`, `reset`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// HTTP status of an attach request or dial, when a response head arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Latency of an attach request or dial, ns on the emitter's monotonic clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<i64>,
    /// The status code of a WebSocket close frame (RFC 6455 §7.4) on an attach connection
    /// event; its reason, as sent, is the line's `detail`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_code: Option<u16>,
    /// Whether the endpoint was ready when it appeared, on `endpointslice_endpoint_added`
    /// (written since schema 3.1; the detail says it too, but the core never parses detail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// HTTP/2: the last stream id of a GOAWAY (on `attach_goaway`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_stream_id: Option<u32>,
    /// HTTP/2: the RFC 9113 name of the error code of a GOAWAY (on `attach_goaway`, and on
    /// connection ends after one) or of the RST_STREAM or GOAWAY that failed a request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2_code: Option<String>,
    /// gRPC: the name of a call's non-OK status code (`UNAVAILABLE`, …), or of the status
    /// that ended a held Watch (`OK` too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_code: Option<String>,
    /// HTTP/2: the stream a held gRPC Watch runs on (on `attach_grpc_watch_*`), to be read
    /// against a GOAWAY's last stream id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_id: Option<u32>,
    /// The node a client pod runs on, on its `client_pod_running` (attach) or
    /// `target_resolved` (probe) (schema 4.1), and on each `attach_dial` of a client shard
    /// (`--clients N`, schema 4.2): the node whose data plane its dials went through
    /// (`trial.attach.data_plane`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// On a `client_lost` line of a client shard (`--clients N`, schema 4.3): which shard
    /// (from 1) was lost. Only its slice of the flows is then not-measured; the other shards
    /// stay measured. Absent: the whole client was lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<u32>,
    /// The endpoint's address (its first), on `endpointslice_endpoint_added` (schema 5.2): an
    /// ingress names the upstream it chose by `IP:PORT`, and this maps it to the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The upstream `IP:PORT` an ingress sent the request to, on `ingress_access` (schema 5.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// The ingress controller pod whose log had the line, on `ingress_access` (schema 5.2):
    /// each replica keeps its own view of the endpoints, so its routing is judged on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    /// The ingress's service a request went through (`ingress_access`) or a counter counts
    /// (`ingress_metric`), as the controller names it (schema 5.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// A counter's value, on `ingress_metric`; on `ingress_access`, the attempts the ingress made
    /// upstream for the request when its log says (Envoy's) (schema 5.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// The trial's configuration and environment, on `trial_started` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Box<TrialHeader>>,
    /// The workload's termination settings, on `termination_settings_recorded` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_settings: Option<Box<TerminationSettings>>,
}

/// Everything a report needs that is not an observation: written once, first, in events.jsonl.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialHeader {
    /// `trial-NNN` or `client-manual`.
    pub trial_id: String,
    /// drainwatch version that recorded the trial.
    pub drainwatch_version: String,
    /// Commit of that build.
    pub git_commit: String,
    /// The validated configuration.
    pub config: TrialConfig,
    /// The recorded environment.
    pub environment: Environment,
    /// Boot id of the orchestrator's host: its CLOCK_MONOTONIC domain.
    pub boot_id: String,
    /// events.jsonl was streamed, appended as the events happened, and closes with a
    /// `trial_ended` line: one without it was cut off. Absent (false) in recordings written
    /// in one piece at the end, which are complete by construction.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub streamed: bool,
}

impl EventLine {
    /// A version-1 line named `event` with every other field absent.
    pub fn named(event: EventName) -> Self {
        Self {
            v: EVENT_FORMAT_VERSION,
            source: None,
            line: None,
            at_ns: None,
            mono_ns: None,
            wall: None,
            mono_ms: None,
            event,
            flow_id: None,
            seq: None,
            detail: None,
            errno: None,
            op: None,
            drain_behavior: None,
            instance: None,
            peer_wall_ns: None,
            sent_ns: None,
            boot_id: None,
            exit_code: None,
            signal: None,
            result: None,
            status: None,
            latency_ns: None,
            close_code: None,
            ready: None,
            last_stream_id: None,
            h2_code: None,
            grpc_code: None,
            stream_id: None,
            node: None,
            shard: None,
            address: None,
            upstream: None,
            replica: None,
            service: None,
            count: None,
            header: None,
            termination_settings: None,
        }
    }

    /// A version-1 line of `source` with event name `event` at orchestrator time `at_ns`.
    pub fn new(source: Source, event: EventName, at_ns: i64) -> Self {
        Self {
            source: Some(source),
            at_ns: Some(at_ns),
            ..Self::named(event)
        }
    }

    /// Sets the flow id.
    #[must_use]
    pub fn flow(mut self, id: impl Into<String>) -> Self {
        self.flow_id = Some(id.into());
        self
    }

    /// Sets the detail.
    #[must_use]
    pub fn detail(mut self, d: impl Into<String>) -> Self {
        self.detail = Some(d.into());
        self
    }

    /// Sets the protocol sequence number.
    #[must_use]
    pub fn seq(mut self, seq: u64) -> Self {
        self.seq = Some(seq);
        self
    }

    /// Parses one line; `None` for blank lines. Errors carry the serde message.
    pub fn parse(line: &str) -> Result<Option<Self>, serde_json::Error> {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return Ok(None);
        }
        serde_json::from_str(trimmed).map(Some)
    }

    /// One JSON line without the trailing newline.
    pub fn to_json(&self) -> String {
        // Serialising a struct of strings and integers cannot fail; an empty object is the
        // harmless fallback should serde ever disagree.
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }
}

/// The trial's orchestrator `client_lost` lines in order, each as the shard it names (absent:
/// the whole client) and why (its detail). Probe flows and attach connections a lost client
/// still held are not-measured (`shard::Losses`).
pub fn client_losses(lines: &[EventLine]) -> Vec<(Option<u32>, &str)> {
    lines
        .iter()
        .filter(|l| l.source == Some(Source::Orchestrator) && l.event == EventName::ClientLost)
        .map(|l| (l.shard, l.detail.as_deref().unwrap_or("no detail recorded")))
        .collect()
}

/// The event lines of a committed fuzz seed (`fuzz/corpus/event_lines/`), each of which must
/// parse: the inputs of fuzz findings kept as regression tests. Here, not in `test_fixtures`,
/// which imports this module (one-way imports).
#[cfg(test)]
#[allow(clippy::expect_used)] // a seed that does not parse is a broken test
pub(crate) fn seed_lines(text: &str) -> Vec<EventLine> {
    text.lines()
        .filter_map(|raw| EventLine::parse(raw).expect("seed line parses"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_probe_lines_parse_as_version_zero() {
        let go = r#"{"wall":"2026-11-30T15:22:58.480349996Z","mono_ms":0,"event":"probe_started","detail":"probe_version=0.1.0","drain_behavior":"exit-now"}"#;
        let l = EventLine::parse(go).unwrap().unwrap();
        assert_eq!(l.v, 0);
        assert_eq!(l.event, EventName::ProbeStarted);
        assert_eq!(l.mono_ms, Some(0));
        assert_eq!(l.drain_behavior, Some(DrainBehavior::ExitNow));
        assert_eq!(l.source, None);
    }

    #[test]
    fn round_trips_and_omits_absent_fields() {
        let l = EventLine::new(Source::Client, EventName::FlowEof, 42).flow("tcp-0001");
        let s = l.to_json();
        assert_eq!(
            s,
            r#"{"v":1,"source":"client","at_ns":42,"event":"flow_eof","flow_id":"tcp-0001"}"#
        );
        assert_eq!(EventLine::parse(&s).unwrap().unwrap(), l);
        assert_eq!(EventLine::parse("  ").unwrap(), None);
        assert!(EventLine::parse("{not json").is_err());
    }

    /// The fuzz finding of a CI fuzz-smoke run (event_lines): a trial header's
    /// `flow_timeout_seconds`, written as a 62-digit integer with `.0`, parsed to
    /// 1.0111111111100001e61 where the nearest float is 1.01111111111e61; serialised and
    /// parsed again it came back as the latter, so the line did not parse back to itself.
    /// serde_json's `float_roundtrip` makes the parse exact.
    #[test]
    fn floats_parse_back_to_themselves() {
        let lines = seed_lines(include_str!(
            "../../../fuzz/corpus/event_lines/float-roundtrip"
        ));
        assert_eq!(lines.len(), 1);
        let timeout = lines[0]
            .header
            .as_ref()
            .map(|h| h.config.flow_timeout_seconds);
        assert_eq!(timeout, Some(1.01111111111e61));
        for l in &lines {
            assert_eq!(EventLine::parse(&l.to_json()).unwrap().as_ref(), Some(l));
        }
    }
}
