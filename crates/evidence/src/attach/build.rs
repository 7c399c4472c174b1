//! Folds the client's attach events and the pods' lanes into the report's `trial.attach`.

use std::collections::BTreeMap;

use super::data_plane::{Signals, data_plane};
use super::fold::{Conn, Failed, Tally, direct_dials, mechanism_of};
use super::lanes::{PodLane, attribute_through, lanes, split, unattributed};
use super::ready::no_ready_windows;
use super::section::{
    AttachReport, CloseKind, ConnOutcome, ConnectionCounts, ConnectionRecord, FailureKind,
    FailureRecord, FailureWindow, LostClient, Phase, PodLaneReport,
};
use super::watch::watches;
use super::window::{latency_summary, longest_failure_window};
use crate::event::{EventLine, EventName};
use crate::ingress::hidden_retries;
use crate::ingress::join::{self, Joined, Logged, request_id};
use crate::ingress::routing::routing;
use crate::ingress::summary::summary;
use crate::ingress::view::view;
use crate::plan::attach::config::{AttachConfig, AttachProtocol};
use crate::request_id::RequestId;
use crate::shard::Losses;

/// Builds `trial.attach` from a trial's lines (relayed client times already placed) and its lost
/// clients (held connections they stopped watching are not-measured); times in
/// the section are ms relative to `t0_ns`, like the timeline.
pub fn attach_section(
    lines: &[EventLine],
    lost: &Losses<'_>,
    config: &AttachConfig,
    t0_ns: i64,
) -> AttachReport {
    let rel = |at: i64| (at - t0_ns) / 1_000_000;
    let held_arm = !config.protocol.sends_requests();
    let mut tally = Tally::fold(lines, held_arm);
    let (connections, records) = connections(&tally.conns, tally.reopened, lost, &rel);
    let all_lanes = lanes(lines);
    let through_ingress = lines
        .iter()
        .any(|l| l.event == EventName::IngressAccess)
        .then(|| join::join(lines, &join::endpoint_pods(lines)));
    let ingress_records = through_ingress
        .as_ref()
        .map(Joined::by_id)
        .unwrap_or_default();
    // A failure is tied to whichever pod answered (through an ingress: the pod at the
    // upstream it chose), the context pods included; only the trial's own lanes are judged.
    let attributed = attribute_failures(&mut tally.failed, &all_lanes, &ingress_records, &rel);
    let (pod_lanes, context_lanes) = split(all_lanes, t0_ns);
    let longest_failure_window = failure_window(&mut tally.outcomes, &rel);
    let lat = latency_summary(&mut tally.latencies);
    let held_watches = config.grpc.as_ref().is_some_and(|g| g.watch).then(|| {
        let goaway_last = |flow: &str, generation: u64| {
            tally
                .conns
                .get(&(flow.to_string(), generation))
                .and_then(|c| c.goaway.as_ref())
                .and_then(|g| g.last_stream_id)
        };
        watches(lines, &pod_lanes, goaway_last, rel)
    });
    // The pod each failed dial is attributed to, when that says the node routed it there: the
    // dial named the pod, or it failed inside the pod's own termination (its lane's span). A
    // failure placed on a pod only because it came after every lane ended says nothing of
    // where the node sent it.
    let inside = |f: &FailureRecord, pod: &str| {
        f.instance.as_deref() == Some(pod)
            || pod_lanes.iter().filter(|l| l.pod == pod).any(|l| {
                matches!((l.start(), l.end()), (Some(s), Some(e)) if rel(s) <= f.t_ms && f.t_ms <= rel(e))
            })
    };
    let failed_dials: Vec<(String, String)> = attributed
        .failures
        .iter()
        .filter(|f| f.kind == FailureKind::Dial)
        .filter_map(|f| {
            let pod = f.pod.as_deref()?;
            inside(f, pod).then(|| (f.flow_id.clone(), pod.to_string()))
        })
        .collect();
    let failed_dials_to: std::collections::BTreeMap<&str, &str> = failed_dials
        .iter()
        .map(|(d, p)| (d.as_str(), p.as_str()))
        .collect();
    // The terminated pods' signals, read by the client nodes' and the ingress's routing.
    let terminated = signals(&pod_lanes);
    let mut requests = tally.requests;
    requests.latency_p50_ms = lat.p50;
    requests.latency_p99_ms = lat.p99;
    requests.latency_max_ms = lat.max;

    AttachReport {
        protocol: config.protocol,
        window_start_t_ms: tally.window_start.map(rel),
        window_end_t_ms: tally.window_end.map(rel),
        requests: (!held_arm).then_some(requests),
        connections,
        dials: (tally.dials.total > 0).then_some(tally.dials),
        longest_failure_window,
        failures_by_phase: attributed.by_phase,
        pods: pod_lanes
            .iter()
            .map(|l| lane_report(l, rel, attributed.per_pod.get(&l.pod).copied().unwrap_or(0)))
            .collect(),
        context_pods: context_lanes
            .iter()
            .map(|l| lane_report(l, rel, attributed.per_pod.get(&l.pod).copied().unwrap_or(0)))
            .collect(),
        failures: attributed.failures,
        connection_records: records,
        notes: {
            let mut n = notes(config, &pod_lanes, tally.window_end.is_some());
            if let Some(c) = context_note(&context_lanes, &rel) {
                n.push(c);
            }
            if let Some(why) = lost.whole() {
                n.push(format!("the client was lost before the observation window closed ({why}): connections it still held then are not-measured"));
            }
            for (slice, why) in lost.shards() {
                n.push(format!("a client shard was lost before the observation window closed ({why}): the connections of its slice ({}) it still held then are not-measured; the other shards' stay measured", slice.describe_tcp(config.protocol.flow_prefix())));
            }
            n
        },
        no_ready_endpoint_windows: no_ready_windows(lines, t0_ns, tally.window_end),
        watches: held_watches,
        data_plane: data_plane(lines, &terminated, &failed_dials_to, rel),
        direct_dials: direct_dials(lines),
        ingress: through_ingress.as_ref().map(|j| {
            let pods = join::endpoint_pods(lines);
            let view = view(lines, &terminated, &pods, rel);
            summary(
                j,
                routing(j, &terminated, rel),
                hidden_retries(lines, &pods),
                view,
            )
        }),
        lost_clients: (!lost.shards().is_empty()).then(|| {
            lost.shards()
                .iter()
                .map(|(slice, why)| LostClient {
                    slice: slice.describe_tcp(config.protocol.flow_prefix()),
                    why: (*why).to_string(),
                })
                .collect()
        }),
    }
}

/// The lanes' control-plane signals the data-plane view reads.
fn signals(lanes: &[PodLane]) -> Vec<Signals<'_>> {
    lanes
        .iter()
        .map(|l| Signals {
            pod: &l.pod,
            not_ready_ns: l.not_ready_ns,
            removed_ns: l.removed_ns,
        })
        .collect()
}

/// Each connection's outcome, counted and recorded. With the client `lost` under the trial,
/// a connection still open at its end survived nothing that was watched: not-measured.
fn connections(
    conns: &BTreeMap<(String, u64), Conn>,
    reopened: u32,
    lost: &Losses<'_>,
    rel: &impl Fn(i64) -> i64,
) -> (ConnectionCounts, Vec<ConnectionRecord>) {
    let mut connections = ConnectionCounts {
        total: 0,
        graceful_close: 0,
        closed_announced: Some(0),
        closed_unannounced_fin: Some(0),
        severed: 0,
        survived_observation_window: 0,
        not_measured: 0,
        severed_by_mechanism: BTreeMap::new(),
        reopened,
    };
    let mut records = Vec::with_capacity(conns.len());
    for ((flow_id, generation), c) in conns {
        let (mut outcome, result, ended) = conn_outcome(c, rel);
        if outcome == ConnOutcome::SurvivedObservationWindow && lost.why(flow_id).is_some() {
            outcome = ConnOutcome::NotMeasured;
        }
        connections.total += 1;
        let close = (outcome == ConnOutcome::GracefulClose)
            .then(|| result.as_deref().and_then(CloseKind::of_result))
            .flatten();
        match outcome {
            ConnOutcome::GracefulClose => {
                connections.graceful_close += 1;
                match close {
                    Some(CloseKind::Announced) => {
                        *connections.closed_announced.get_or_insert(0) += 1;
                    }
                    Some(CloseKind::UnannouncedFin) => {
                        *connections.closed_unannounced_fin.get_or_insert(0) += 1;
                    }
                    None => {}
                }
            }
            ConnOutcome::Severed => {
                connections.severed += 1;
                let m = mechanism_of(result.as_deref());
                *connections.severed_by_mechanism.entry(m).or_default() += 1;
            }
            ConnOutcome::SurvivedObservationWindow => connections.survived_observation_window += 1,
            ConnOutcome::NotMeasured => connections.not_measured += 1,
        }
        records.push(ConnectionRecord {
            flow_id: flow_id.clone(),
            generation: *generation,
            outcome,
            result: result.filter(|_| outcome != ConnOutcome::SurvivedObservationWindow),
            close,
            opened_t_ms: c.opened_ns.map(rel),
            ended_t_ms: ended,
            close_code: c.close.as_ref().map(|(code, _)| *code),
            close_reason: c.close.as_ref().map(|(_, r)| r.clone()),
            goaway_t_ms: c.goaway.as_ref().map(|g| rel(g.first_ns)),
            goaway_last_stream_id: c.goaway.as_ref().and_then(|g| g.last_stream_id),
            goaway_code: c.goaway.as_ref().and_then(|g| g.code.clone()),
        });
    }
    (connections, records)
}

/// A connection's outcome, its recorded result and when it ended (graceful or severed only).
fn conn_outcome(c: &Conn, rel: &impl Fn(i64) -> i64) -> (ConnOutcome, Option<String>, Option<i64>) {
    match (&c.end, c.opened_ns) {
        (Some((_, ConnOutcome::NotMeasured, r)), _) => (ConnOutcome::NotMeasured, r.clone(), None),
        (Some((at, o, r)), Some(_)) => {
            let ended =
                matches!(o, ConnOutcome::GracefulClose | ConnOutcome::Severed).then_some(rel(*at));
            (*o, r.clone(), ended)
        }
        // An end without an open, or an open without an end: the connection's life was
        // not observed whole.
        (Some((_, _, r)), None) => (ConnOutcome::NotMeasured, r.clone(), None),
        (None, _) => (ConnOutcome::NotMeasured, None, None),
    }
}

/// The failures in time order, each tied to a pod and phase, and their counts.
struct Attributed {
    failures: Vec<FailureRecord>,
    per_pod: BTreeMap<String, u32>,
    by_phase: BTreeMap<Phase, u32>,
}

fn attribute_failures(
    failed: &mut [Failed],
    pod_lanes: &[PodLane],
    ingress: &BTreeMap<&RequestId, &Logged>,
    rel: &impl Fn(i64) -> i64,
) -> Attributed {
    failed.sort_by(|a, b| {
        (a.at, a.kind, a.line.flow_id.as_deref(), a.line.seq).cmp(&(
            b.at,
            b.kind,
            b.line.flow_id.as_deref(),
            b.line.seq,
        ))
    });
    let mut per_pod: BTreeMap<String, u32> = BTreeMap::new();
    let mut by_phase = BTreeMap::new();
    let failures: Vec<FailureRecord> = failed
        .iter()
        .map(|f| {
            let via = request_id(f.line).and_then(|id| ingress.get(&id).copied());
            let named = f.line.instance.as_deref();
            // A request the ingress answered itself, choosing no upstream (no server to choose,
            // no route), reached no pod: placing it on the pod terminating at the time would
            // blame that pod's shutdown for the ingress's own answer.
            let a = if via.is_some_and(|g| g.upstream.is_none()) {
                unattributed()
            } else {
                let upstream = via.and_then(|g| {
                    g.pod
                        .as_deref()
                        .map(|p| (p, g.outcome.decided_by_upstream()))
                });
                attribute_through(pod_lanes, f.at, named, upstream)
            };
            if let Some(p) = &a.pod {
                *per_pod.entry(p.clone()).or_default() += 1;
            }
            *by_phase.entry(a.phase).or_default() += 1;
            FailureRecord {
                t_ms: rel(f.at),
                kind: f.kind,
                flow_id: f.line.flow_id.clone().unwrap_or_default(),
                seq: f.line.seq.filter(|_| f.kind != FailureKind::Dial),
                mechanism: f.mechanism,
                status: f.line.status,
                errno: f.line.errno.clone(),
                instance: f.line.instance.clone(),
                pod: a.pod,
                phase: a.phase,
                h2_code: f.line.h2_code.clone(),
                grpc_code: f.line.grpc_code.clone(),
                ingress: via.map(|g| g.outcome),
                upstream: via.and_then(|g| g.upstream.clone()),
            }
        })
        .collect();
    Attributed {
        failures,
        per_pod,
        by_phase,
    }
}

/// The longest failure window: found on ns, reported in ms.
fn failure_window(
    outcomes: &mut [(i64, bool)],
    rel: &impl Fn(i64) -> i64,
) -> Option<FailureWindow> {
    outcomes.sort_by_key(|(at, _)| *at);
    longest_failure_window(outcomes).map(|mut w| {
        w.start_t_ms = rel(w.start_t_ms);
        w.end_t_ms = rel(w.end_t_ms);
        w.duration_ms /= 1_000_000;
        w
    })
}

fn lane_report(l: &PodLane, rel: impl Fn(i64) -> i64, failures: u32) -> PodLaneReport {
    PodLaneReport {
        pod: l.pod.clone(),
        deletion_requested_t_ms: l.deletion_ns.map(&rel),
        endpoint_not_ready_t_ms: l.not_ready_ns.map(&rel),
        endpoint_removed_t_ms: l.removed_ns.map(&rel),
        exited_t_ms: l.exited_ns.map(&rel),
        exit_code: l.exit_code,
        failures,
        endpoint_seen_ready: l.endpoint_seen_ready,
        left_ready_before_exit: [l.not_ready_ns, l.removed_ns]
            .into_iter()
            .flatten()
            .min()
            .zip(l.exited_ns)
            .map(|(left, exited)| left < exited),
    }
}

/// The note that names the context pods, when there are any.
fn context_note(context: &[PodLane], rel: &impl Fn(i64) -> i64) -> Option<String> {
    if context.is_empty() {
        return None;
    }
    let pods: Vec<String> = context
        .iter()
        .map(|l| {
            let since = l
                .deletion_ns
                .map_or_else(|| "not-measured".to_string(), |d| format!("{} ms", rel(d)));
            format!("{} (deletion requested at {since})", l.pod)
        })
        .collect();
    Some(format!(
        "{} pods were already terminating before the trigger: {}. They are context (trial.attach.context_pods), not the trial's own terminations: failures they answered are counted and attributed to them, but no lane of theirs is judged and no finding reads them",
        context.len(),
        pods.join(", ")
    ))
}

fn notes(config: &AttachConfig, lanes: &[PodLane], window_closed: bool) -> Vec<String> {
    let mut out = vec![
        "SIGTERM is not observable on an unmodified workload: phases come from the control plane (deletion requested, endpoint transitions, container exit), and the time of SIGTERM is not-measured".to_string(),
        "a failure window is the longest run of failures, in time order, not interrupted by a success (an ok request, a served dial or, on TCP arms, an opened connection); its duration is last failure - first failure".to_string(),
    ];
    if lanes.is_empty() {
        out.push("no pod termination was observed in the timeline, so no failure could be attributed to a pod".into());
    }
    if !window_closed {
        out.push("the client did not record the end of its window: connections still open are not-measured".into());
    }
    match config.protocol {
        AttachProtocol::Tcp => out.push("TCP arm: no requests are sent, so request counts are null; severed connections are the failures".into()),
        AttachProtocol::Websocket => out.push("WebSocket arm: each held connection pings every interval and awaits the pong; request counts are null, and the failures are connections that did not open (handshake refused, reset or answered without 101) or ended other than by a close frame with 1000 or 1001 (a close frame with another code, a FIN without a close frame, a reset, a missing pong). Close frames are the server's: the client sends none within the window".into()),
        AttachProtocol::Http => {}
        AttachProtocol::Http2 => out.push("HTTP/2 arm: each connection sends a request every interval as a new stream; a connection is closed gracefully when the server's GOAWAY said NO_ERROR and every stream at or below its last stream id was answered, and a GOAWAY makes the flow open its next connection, as Connection: close does on HTTP/1.1. goaway-then-reset, rst-stream, no-goaway and goaway-error name what the HTTP/2 framing showed".into()),
        AttachProtocol::Grpc => out.push("gRPC arm: each connection makes a unary call every interval (grpc.health.v1.Health/Check unless another method was named), as a new HTTP/2 stream; a non-OK status fails the call with its gRPC mechanism and the code on the record, and a health status other than SERVING fails it as grpc-not-serving; GOAWAY and RST_STREAM are recorded as on the HTTP/2 arm".into()),
    }
    if config.grpc.as_ref().is_some_and(|g| g.watch) {
        out.push("gRPC Watch (--grpc-watch): each connection also holds one grpc.health.v1.Health/Watch, reopened on the flow's next connection; it is drained when it received NOT_SERVING and then ended with a gRPC status, ended-with-status when a status ended it unannounced, and cut when it ended without a status (RST_STREAM, the connection's FIN or RST, a GOAWAY with an error, a timeout; the mechanism is on the record). A cut Watch is counted in watches, not in the requests, and gated by no-watch-cut".into());
    }
    if let Some(t) = &config.tls {
        out.push(if t.insecure_skip_verify {
            format!("TLS with certificate verification OFF (--insecure-skip-verify): the server's identity ({}) was NOT checked", t.server_name)
        } else {
            format!("TLS: the server's certificate was verified for {} against the CA file given", t.server_name)
        });
    }
    if config.dial_rate == 0 {
        out.push("the new-connection prober was off (dial rate 0), so dial counts are null".into());
    }
    out
}
