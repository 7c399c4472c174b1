//! Folds the client's attach events and the pods' lanes into the report's `trial.attach`.

use std::collections::BTreeMap;

use super::config::{AttachConfig, AttachProtocol};
use super::lanes::{PodLane, attribute, lanes};
use super::names;
use super::section::{
    AttachReport, ConnOutcome, ConnectionCounts, ConnectionRecord, DialCounts, FailureKind,
    FailureMechanism, FailureRecord, PodLaneReport, RequestCounts,
};
use super::window::{latency_summary, longest_failure_window};
use crate::evidence::event::{EventLine, EventName, Source};

#[derive(Default)]
struct Conn {
    opened_ns: Option<i64>,
    end: Option<(i64, ConnOutcome, Option<String>)>,
}

/// A failure before attribution.
struct Failed<'a> {
    at: i64,
    kind: FailureKind,
    line: &'a EventLine,
    mechanism: FailureMechanism,
}

fn mechanism(l: &EventLine) -> FailureMechanism {
    l.result
        .as_deref()
        .and_then(FailureMechanism::parse)
        .unwrap_or(FailureMechanism::Error)
}

/// Builds `trial.attach` from a trial's lines (relayed client times already placed); times in
/// the section are ms relative to `t0_ns`, like the timeline.
pub fn attach_section(lines: &[EventLine], config: &AttachConfig, t0_ns: i64) -> AttachReport {
    let rel = |at: i64| (at - t0_ns) / 1_000_000;
    let tcp_arm = config.protocol == AttachProtocol::Tcp;
    let mut conns: BTreeMap<(String, u64), Conn> = BTreeMap::new();
    let mut reopened = 0u32;
    let mut requests = RequestCounts {
        total: 0,
        ok: 0,
        failed: 0,
        failed_by_mechanism: BTreeMap::new(),
        latency_p50_ms: None,
        latency_p99_ms: None,
        latency_max_ms: None,
    };
    let mut latencies: Vec<i64> = Vec::new();
    let mut dials = DialCounts {
        total: 0,
        served: 0,
        failed: 0,
        failed_by_result: BTreeMap::new(),
        served_by_instance: BTreeMap::new(),
    };
    let mut failed: Vec<Failed> = Vec::new();
    // (time, failed?) of every observation that can fail, for the failure window.
    let mut outcomes: Vec<(i64, bool)> = Vec::new();
    let (mut window_start, mut window_end) = (None, None);

    for l in lines.iter().filter(|l| l.source == Some(Source::Client)) {
        let Some(at) = l.at_ns else { continue };
        let flow = l.flow_id.clone().unwrap_or_default();
        let generation = l.seq.unwrap_or(1);
        match l.event {
            EventName::AttachWindowStarted => window_start = window_start.or(Some(at)),
            EventName::AttachWindowEnded => window_end = window_end.or(Some(at)),
            EventName::AttachConnOpened | EventName::AttachConnReopened => {
                if l.event == EventName::AttachConnReopened {
                    reopened += 1;
                }
                let c = conns.entry((flow, generation)).or_default();
                c.opened_ns = c.opened_ns.or(Some(at));
                if tcp_arm {
                    outcomes.push((at, false));
                }
            }
            // On HTTP arms a failed (re)open is the failed request recorded beside it, not a
            // connection; a held TCP flow that never connected is a connection not measured.
            EventName::AttachConnOpenFailed if tcp_arm => {
                let c = conns.entry((flow, generation)).or_default();
                if c.end.is_none() {
                    c.end = Some((at, ConnOutcome::NotMeasured, l.result.clone()));
                }
                failed.push(Failed {
                    at,
                    kind: FailureKind::Connection,
                    line: l,
                    mechanism: mechanism(l),
                });
                outcomes.push((at, true));
            }
            EventName::AttachConnClosedGraceful
            | EventName::AttachConnSevered
            | EventName::AttachConnObservationEnd => {
                let outcome = match l.event {
                    EventName::AttachConnClosedGraceful => ConnOutcome::GracefulClose,
                    EventName::AttachConnSevered => ConnOutcome::Severed,
                    _ => ConnOutcome::SurvivedObservationWindow,
                };
                let c = conns.entry((flow, generation)).or_default();
                if c.end.is_some() {
                    continue;
                }
                c.end = Some((at, outcome, l.result.clone()));
                if outcome == ConnOutcome::Severed && tcp_arm {
                    failed.push(Failed {
                        at,
                        kind: FailureKind::Connection,
                        line: l,
                        mechanism: mechanism(l),
                    });
                    outcomes.push((at, true));
                }
            }
            EventName::AttachRequest => {
                requests.total += 1;
                if l.result.as_deref() == Some(names::OK) {
                    requests.ok += 1;
                    latencies.extend(l.latency_ns);
                    outcomes.push((at, false));
                } else {
                    let m = mechanism(l);
                    requests.failed += 1;
                    *requests.failed_by_mechanism.entry(m).or_default() += 1;
                    failed.push(Failed {
                        at,
                        kind: FailureKind::Request,
                        line: l,
                        mechanism: m,
                    });
                    outcomes.push((at, true));
                }
            }
            EventName::AttachDial => {
                dials.total += 1;
                if l.result.as_deref() == Some(names::SERVED) {
                    dials.served += 1;
                    if let Some(i) = &l.instance {
                        *dials.served_by_instance.entry(i.clone()).or_default() += 1;
                    }
                    outcomes.push((at, false));
                } else {
                    let m = mechanism(l);
                    dials.failed += 1;
                    *dials.failed_by_result.entry(m).or_default() += 1;
                    failed.push(Failed {
                        at,
                        kind: FailureKind::Dial,
                        line: l,
                        mechanism: m,
                    });
                    outcomes.push((at, true));
                }
            }
            _ => {}
        }
    }

    let mut connections = ConnectionCounts {
        total: 0,
        graceful_close: 0,
        severed: 0,
        survived_observation_window: 0,
        not_measured: 0,
        severed_by_mechanism: BTreeMap::new(),
        reopened,
    };
    let mut records = Vec::with_capacity(conns.len());
    for ((flow_id, generation), c) in &conns {
        let (outcome, result, ended) = match (&c.end, c.opened_ns) {
            (Some((_, ConnOutcome::NotMeasured, r)), _) => {
                (ConnOutcome::NotMeasured, r.clone(), None)
            }
            (Some((at, o, r)), Some(_)) => {
                let ended = matches!(o, ConnOutcome::GracefulClose | ConnOutcome::Severed)
                    .then_some(rel(*at));
                (*o, r.clone(), ended)
            }
            // An end without an open, or an open without an end: the connection's life was
            // not observed whole.
            (Some((_, _, r)), None) => (ConnOutcome::NotMeasured, r.clone(), None),
            (None, _) => (ConnOutcome::NotMeasured, None, None),
        };
        connections.total += 1;
        match outcome {
            ConnOutcome::GracefulClose => connections.graceful_close += 1,
            ConnOutcome::Severed => {
                connections.severed += 1;
                let m = result
                    .as_deref()
                    .and_then(FailureMechanism::parse)
                    .unwrap_or(FailureMechanism::Error);
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
            opened_t_ms: c.opened_ns.map(rel),
            ended_t_ms: ended,
        });
    }

    let pod_lanes = lanes(lines);
    failed.sort_by(|a, b| {
        (a.at, a.kind, a.line.flow_id.as_deref(), a.line.seq).cmp(&(
            b.at,
            b.kind,
            b.line.flow_id.as_deref(),
            b.line.seq,
        ))
    });
    let mut per_pod: BTreeMap<String, u32> = BTreeMap::new();
    let mut failures_by_phase = BTreeMap::new();
    let failures: Vec<FailureRecord> = failed
        .iter()
        .map(|f| {
            let a = attribute(&pod_lanes, f.at, f.line.instance.as_deref());
            if let Some(p) = &a.pod {
                *per_pod.entry(p.clone()).or_default() += 1;
            }
            *failures_by_phase.entry(a.phase).or_default() += 1;
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
            }
        })
        .collect();

    outcomes.sort_by_key(|(at, _)| *at);
    // Found on ns, reported in ms.
    let longest_failure_window = longest_failure_window(&outcomes).map(|mut w| {
        w.start_t_ms = rel(w.start_t_ms);
        w.end_t_ms = rel(w.end_t_ms);
        w.duration_ms /= 1_000_000;
        w
    });
    let lat = latency_summary(&mut latencies);
    requests.latency_p50_ms = lat.p50;
    requests.latency_p99_ms = lat.p99;
    requests.latency_max_ms = lat.max;

    AttachReport {
        protocol: config.protocol,
        window_start_t_ms: window_start.map(rel),
        window_end_t_ms: window_end.map(rel),
        requests: (!tcp_arm).then_some(requests),
        connections,
        dials: (dials.total > 0).then_some(dials),
        longest_failure_window,
        failures_by_phase,
        pods: pod_lanes
            .iter()
            .map(|l| lane_report(l, rel, per_pod.get(&l.pod).copied().unwrap_or(0)))
            .collect(),
        failures,
        connection_records: records,
        notes: notes(config, &pod_lanes, window_end.is_some()),
    }
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
    }
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
    if config.protocol == AttachProtocol::Tcp {
        out.push("TCP arm: no requests are sent, so request counts are null; severed connections are the failures".into());
    }
    if config.dial_rate == 0 {
        out.push("the new-connection prober was off (dial rate 0), so dial counts are null".into());
    }
    out
}
