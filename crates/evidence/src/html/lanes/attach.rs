//! The lanes of an attach trial: one per terminated pod, coloured by the attribution's own
//! phase rule, with each failure at its time; unattributed failures; the held connections (a
//! lane per flow up to the cap, beyond it per outcome and result); the new-connection prober.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::super::chart::{Marker, bound_of, bound_text, marker_kind};
use super::super::{FLOW_LANE_CAP, esc, name_of};
use super::{AXIS_END, AXIS_START, Kind, Lane, Mark, Seg, Shape};
use crate::attach::PodLane;
use crate::attach::section::{AttachReport, ConnectionRecord, FailureRecord, PodLaneReport};
use crate::event::EventName;
use crate::report::Report;

/// Every lane of an attach trial, top to bottom.
pub(super) fn lanes(r: &Report, a: &AttachReport) -> Vec<Lane> {
    let bound = r
        .trial
        .clock
        .client
        .as_ref()
        .filter(|c| c.approximate)
        .and_then(|c| c.error_bound_ms);
    let mut out: Vec<Lane> = a
        .pods
        .iter()
        .map(|p| pod_lane(r, a, p, bound, false))
        .collect();
    // Pods already terminating before the trigger: drawn, marked as context, never judged.
    out.extend(
        a.context_pods
            .iter()
            .map(|p| pod_lane(r, a, p, bound, true)),
    );
    let lost: Vec<&FailureRecord> = a.failures.iter().filter(|f| f.pod.is_none()).collect();
    if !lost.is_empty() {
        let mut lane = Lane::new(
            Kind::Unattributed,
            " data-pod=\"\"".into(),
            format!("unattributed ({} failures)", lost.len()),
        );
        lane.marks = lost.iter().map(|f| fail_mark(f, bound)).collect();
        out.push(lane);
    }
    out.extend(conn_lanes(a));
    if let Some(d) = &a.dials {
        let mut lane = Lane::new(
            Kind::Dials,
            " data-flow=\"dial\"".into(),
            format!("new connections: {} dials, {} failed", d.total, d.failed),
        );
        for f in a.failures.iter().filter(|f| f.flow_id.starts_with("dial-")) {
            lane.marks.push(flow_fail(f));
        }
        out.push(lane);
    }
    out.extend(super::nodes::lanes(a));
    out
}

fn pod_lane(
    r: &Report,
    a: &AttachReport,
    p: &PodLaneReport,
    bound: Option<f64>,
    context: bool,
) -> Lane {
    let (attrs, label) = if context {
        (
            format!(" data-pod=\"{}\" data-context=\"true\"", esc(&p.pod)),
            format!("context: {}", p.pod),
        )
    } else {
        (format!(" data-pod=\"{}\"", esc(&p.pod)), p.pod.clone())
    };
    let mut lane = Lane::new(Kind::Pod, attrs, label);
    let ns = |t: Option<i64>| t.map(|t| t.saturating_mul(1_000_000));
    let model = PodLane {
        pod: p.pod.clone(),
        deletion_ns: ns(p.deletion_requested_t_ms),
        not_ready_ns: ns(p.endpoint_not_ready_t_ms),
        removed_ns: ns(p.endpoint_removed_t_ms),
        exited_ns: ns(p.exited_t_ms),
        exit_code: p.exit_code,
        endpoint_seen_ready: p.endpoint_seen_ready,
    };
    // The lane's colour between transitions is the attribution's own phase rule.
    let mut cuts: Vec<i64> = [
        p.deletion_requested_t_ms,
        p.endpoint_not_ready_t_ms,
        p.endpoint_removed_t_ms,
        p.exited_t_ms,
    ]
    .into_iter()
    .flatten()
    .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut edges = vec![AXIS_START];
    edges.extend(&cuts);
    edges.push(AXIS_END);
    for w in edges.windows(2) {
        let at = if w[0] == AXIS_START { w[1] - 1 } else { w[0] };
        let phase = model.phase_at(at.saturating_mul(1_000_000));
        lane.segs.push(Seg {
            t0: w[0],
            t1: w[1],
            class: format!("phase-{}\" data-phase=\"{}", phase.as_str(), phase.as_str()),
        });
    }
    let exit = match p.exit_code {
        Some(137) => "exit 137 (SIGKILL)".to_string(),
        Some(c) => format!("exit {c}"),
        None => "exit".to_string(),
    };
    for (event, label, t) in [
        (
            "deletion",
            "deletion".to_string(),
            p.deletion_requested_t_ms,
        ),
        (
            "endpoint-not-ready",
            "not ready".to_string(),
            p.endpoint_not_ready_t_ms,
        ),
        (
            "endpoint-removed",
            "removed".to_string(),
            p.endpoint_removed_t_ms,
        ),
        ("container-exit", exit, p.exited_t_ms),
    ] {
        if let Some(t_ms) = t {
            lane.markers.push(Marker {
                event,
                label,
                t_ms,
                bound: None,
                source: "k8s",
            });
        }
    }
    for e in &r.trial.timeline {
        if e.event == EventName::EndpointsliceTerminatingTrue
            && e.endpoint_pod() == Some(p.pod.as_str())
            && let Some((event, label)) = marker_kind(&e.event)
        {
            lane.markers.push(Marker {
                event,
                label: label.to_string(),
                t_ms: e.t_ms,
                bound: bound_of(r, e),
                source: e.source.as_str(),
            });
            break;
        }
    }
    lane.markers.sort_by_key(|m| m.t_ms);
    let missing: Vec<&str> = [
        ("deletion", p.deletion_requested_t_ms),
        ("not ready", p.endpoint_not_ready_t_ms),
        ("removal", p.endpoint_removed_t_ms),
        ("exit", p.exited_t_ms),
    ]
    .into_iter()
    .filter(|(_, t)| t.is_none())
    .map(|(w, _)| w)
    .collect();
    let mine: Vec<&FailureRecord> = a
        .failures
        .iter()
        .filter(|f| f.pod.as_deref() == Some(p.pod.as_str()))
        .collect();
    let n = format!(
        "{} failure{}",
        mine.len(),
        if mine.len() == 1 { "" } else { "s" }
    );
    let n = if context {
        format!("terminating before the trigger, not judged; {n}")
    } else {
        n
    };
    lane.note = Some(if missing.is_empty() {
        n
    } else {
        format!("{n}; {} not measured", missing.join(", "))
    });
    lane.marks = mine.iter().map(|f| fail_mark(f, bound)).collect();
    lane
}

fn fail_mark(f: &FailureRecord, bound: Option<f64>) -> Mark {
    let kind = name_of(&f.kind);
    let mut title = format!(
        "{} {} {} at {} ms",
        kind,
        f.flow_id,
        f.mechanism.as_str(),
        f.t_ms
    );
    if let Some(b) = bound {
        let _ = write!(title, " ±{} ms", bound_text(b));
    }
    if let Some(e) = &f.errno {
        let _ = write!(title, " ({e})");
    }
    if let Some(s) = f.status {
        let _ = write!(title, " status {s}");
    }
    let _ = write!(title, ", {}", f.phase.as_str());
    let dy = match kind.as_str() {
        "request" => -5.0,
        "dial" => 0.0,
        _ => 5.0,
    };
    Mark {
        t: f.t_ms,
        shape: Shape::Cross,
        attrs: format!(
            "class=\"fail kind-{}\" data-mechanism=\"{}\" data-kind=\"{}\" data-flow=\"{}\" data-t-ms=\"{}\" data-phase=\"{}\" data-pod=\"{}\"",
            esc(&kind),
            f.mechanism.as_str(),
            esc(&kind),
            esc(&f.flow_id),
            f.t_ms,
            f.phase.as_str(),
            esc(f.pod.as_deref().unwrap_or(""))
        ),
        title,
        dy,
        bound,
    }
}

fn flow_fail(f: &FailureRecord) -> Mark {
    Mark {
        t: f.t_ms,
        shape: Shape::Tick,
        attrs: format!(
            "class=\"flow-fail\" data-mechanism=\"{}\" data-t-ms=\"{}\"",
            f.mechanism.as_str(),
            f.t_ms
        ),
        title: format!("{} {} at {} ms", f.flow_id, f.mechanism.as_str(), f.t_ms),
        dy: 0.0,
        bound: None,
    }
}

fn conn_seg(c: &ConnectionRecord) -> Option<Seg> {
    let t0 = c.opened_t_ms?;
    let open = c.ended_t_ms.is_none();
    Some(Seg {
        t0,
        t1: c.ended_t_ms.unwrap_or(AXIS_END),
        class: format!(
            "flowbar outcome-{}{}{}",
            c.outcome.as_str(),
            c.close
                .map_or_else(String::new, |k| format!(" close-{}", k.as_str())),
            if open { " open" } else { "" }
        ),
    })
}

fn conn_end(c: &ConnectionRecord) -> Option<Mark> {
    let t = c.ended_t_ms?;
    let result = c.result.as_deref().unwrap_or("");
    Some(Mark {
        t,
        shape: Shape::Tick,
        attrs: format!(
            "class=\"conn-end outcome-{}\" data-outcome=\"{}\" data-result=\"{}\" stroke=\"#59636e\"",
            c.outcome.as_str(),
            c.outcome.as_str(),
            esc(result)
        ),
        title: format!(
            "{} #{} {} ({}) at {t} ms",
            c.flow_id,
            c.generation,
            c.close.map_or_else(
                || c.outcome.as_str().to_string(),
                |k| format!("closed: {k}")
            ),
            result
        ),
        dy: 0.0,
        bound: None,
    })
}

/// Held connections: a lane per flow (its generations one after another), or beyond the cap a
/// lane per (outcome, result).
fn conn_lanes(a: &AttachReport) -> Vec<Lane> {
    let mut by_flow: BTreeMap<&str, Vec<&ConnectionRecord>> = BTreeMap::new();
    for c in &a.connection_records {
        by_flow.entry(&c.flow_id).or_default().push(c);
    }
    if by_flow.len() <= FLOW_LANE_CAP {
        return by_flow
            .into_iter()
            .map(|(id, cs)| {
                let attrs = format!(" data-flow=\"{}\"", esc(id));
                let mut lane = Lane::new(Kind::Conn, attrs, format!("{id} ({} conn.)", cs.len()));
                lane.segs = cs.iter().filter_map(|c| conn_seg(c)).collect();
                lane.marks = cs.iter().filter_map(|c| conn_end(c)).collect();
                lane.marks
                    .extend(a.failures.iter().filter(|f| f.flow_id == id).map(flow_fail));
                lane
            })
            .collect();
    }
    let mut groups: BTreeMap<(&str, &str), Vec<&ConnectionRecord>> = BTreeMap::new();
    for c in &a.connection_records {
        let result = c.result.as_deref().unwrap_or("");
        groups
            .entry((c.outcome.as_str(), result))
            .or_default()
            .push(c);
    }
    groups
        .into_iter()
        .map(|((outcome, result), cs)| {
            let attrs = format!(
                " data-outcome=\"{outcome}\" data-result=\"{}\" data-count=\"{}\"",
                esc(result),
                cs.len()
            );
            let what = if result.is_empty() { "–" } else { result };
            let mut lane = Lane::new(
                Kind::Group,
                attrs,
                format!("{} connections {outcome} / {what}", cs.len()),
            );
            lane.marks = cs.iter().filter_map(|c| conn_end(c)).collect();
            lane
        })
        .collect()
}
