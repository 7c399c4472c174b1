//! The timeline's lanes: one per terminated pod (attach: `trial.attach.pods`, with each failure
//! marked at its time on the lane of the pod it is attributed to), one per flow up to
//! [`FLOW_LANE_CAP`], and beyond it one per (outcome, mechanism) group.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::timeline::{Marker, Scale, X1, bound_of, bound_text, marker_kind};
use super::{FLOW_LANE_CAP, esc, name_of};
use crate::evidence::attach::PodLane;
use crate::evidence::attach::section::{
    AttachReport, ConnectionRecord, FailureRecord, PodLaneReport,
};
use crate::evidence::classify::Outcome;
use crate::evidence::event::EventName;
use crate::evidence::report::{FlowReport, Report};

/// Stands for the axis's first or last time in a segment.
const AXIS_START: i64 = i64::MIN;
const AXIS_END: i64 = i64::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Pod,
    Unattributed,
    Flow,
    Conn,
    Dials,
    Group,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Pod => "pod",
            Self::Unattributed => "unattributed",
            Self::Flow => "flow",
            Self::Conn => "conn",
            Self::Dials => "dials",
            Self::Group => "group",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A failure on a pod lane.
    Cross,
    /// A probe flow's terminal event.
    Dot,
    /// A failure or an end on a flow lane.
    Tick,
    /// A re-homing.
    Diamond,
}

#[derive(Debug, Clone)]
struct Seg {
    t0: i64,
    t1: i64,
    class: String,
}

#[derive(Debug, Clone)]
struct Mark {
    t: i64,
    shape: Shape,
    /// `class` and `data-*` attributes, already escaped.
    attrs: String,
    title: String,
    /// Row offset inside the lane, px (failures of different kinds at one time stay apart).
    dy: f64,
    /// Half-width of the time's bound, ms, when approximate.
    bound: Option<f64>,
}

/// One lane of the picture.
#[derive(Debug, Clone)]
pub(super) struct Lane {
    pub kind: Kind,
    /// `data-*` attributes, already escaped.
    attrs: String,
    label: String,
    note: Option<String>,
    segs: Vec<Seg>,
    marks: Vec<Mark>,
    markers: Vec<Marker>,
}

impl Lane {
    fn new(kind: Kind, attrs: String, label: String) -> Self {
        Self {
            kind,
            attrs,
            label,
            note: None,
            segs: Vec::new(),
            marks: Vec::new(),
            markers: Vec::new(),
        }
    }

    /// Height in user units.
    pub(super) fn height(&self) -> f64 {
        match self.kind {
            Kind::Pod => 52.0,
            Kind::Unattributed => 30.0,
            Kind::Dials | Kind::Group => 22.0,
            Kind::Flow | Kind::Conn => 15.0,
        }
    }

    /// Every time the x range must hold: ends and marks, not the starts of bars (a connection
    /// opened long before the trigger would squeeze the termination into a corner; it is drawn
    /// from the axis's start with an arrow instead).
    pub(super) fn times(&self) -> impl Iterator<Item = i64> + '_ {
        let segs = self
            .segs
            .iter()
            .flat_map(|s| [if self.kind == Kind::Pod { s.t0 } else { s.t1 }, s.t1]);
        let marks = self.marks.iter().map(|m| m.t);
        let markers = self.markers.iter().map(|m| m.t_ms);
        segs.chain(marks)
            .chain(markers)
            .filter(|&t| t != AXIS_START && t != AXIS_END)
    }

    /// Draws the lane at `y`; `chart` is the lanes' top and bottom (for the pod markers' guides).
    pub(super) fn draw(&self, o: &mut String, s: &Scale, y: f64, alt: bool, chart: (f64, f64)) {
        let h = self.height();
        let (a0, a1) = s.ends();
        let clamp = |t: i64| match t {
            AXIS_START => a0,
            AXIS_END => a1,
            t => t.clamp(a0, a1),
        };
        let _ = writeln!(
            o,
            "<g class=\"lane\" data-kind=\"{}\"{}>",
            self.kind.as_str(),
            self.attrs
        );
        let _ = writeln!(
            o,
            "<rect class=\"lane-bg{}\" x=\"0\" y=\"{y:.1}\" width=\"{X1:.0}\" height=\"{h:.1}\"/>",
            if alt { " alt" } else { "" }
        );
        let shown: String = if self.label.chars().count() > 38 {
            let mut t: String = self.label.chars().take(37).collect();
            t.push('…');
            t
        } else {
            self.label.clone()
        };
        let label_y = if self.kind == Kind::Pod { y + 34.0 } else { y + h / 2.0 + 4.0 };
        let _ = writeln!(
            o,
            "<text class=\"lane-label\" x=\"4\" y=\"{label_y:.1}\"><title>{}</title>{}</text>",
            esc(&self.label),
            esc(&shown)
        );
        if let Some(note) = &self.note {
            let _ = writeln!(
                o,
                "<text class=\"lane-note\" x=\"4\" y=\"{:.1}\">{}</text>",
                label_y + 11.0,
                esc(note)
            );
        }
        let bar_y = if self.kind == Kind::Pod { y + 24.0 } else { y + h / 2.0 };
        for seg in &self.segs {
            let (x0, x1) = (s.x(clamp(seg.t0)), s.x(clamp(seg.t1)));
            if self.kind == Kind::Pod {
                let _ = writeln!(
                    o,
                    "<rect class=\"seg {}\" x=\"{x0:.1}\" y=\"{bar_y:.1}\" width=\"{:.1}\" height=\"14\"/>",
                    seg.class,
                    (x1 - x0).max(0.5)
                );
            } else {
                if seg.t0 != AXIS_START && seg.t0 < a0 {
                    // Began before the axis: the picture starts at the termination.
                    let _ = writeln!(
                        o,
                        "<path class=\"clipped\" d=\"M{x0:.1} {bar_y:.1}l6 -4v8z\"><title>began at {} ms</title></path>",
                        seg.t0
                    );
                }
                let _ = writeln!(
                    o,
                    "<line class=\"{}\" x1=\"{x0:.1}\" y1=\"{bar_y:.1}\" x2=\"{:.1}\" y2=\"{bar_y:.1}\"/>",
                    seg.class,
                    x1.max(x0 + 0.5)
                );
            }
        }
        // Labels go in two rows where they fit; a marker whose label would overlap keeps its
        // colour (see the legend) and its tooltip.
        let mut ends = [f64::MIN; 2];
        for m in &self.markers {
            let x = s.x(m.t_ms);
            let w = m.label.chars().count() as f64 * 5.4 + 4.0;
            let row = (0..2).find(|&k| ends[k] < x);
            let label = match row {
                Some(k) => {
                    ends[k] = x + w;
                    format!(
                        "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                        x + 2.0,
                        y + 10.0 + k as f64 * 9.0,
                        esc(&m.label)
                    )
                }
                None => String::new(),
            };
            let _ = writeln!(
                o,
                "<g class=\"marker pod\" data-event=\"{}\" data-t-ms=\"{}\"{}><title>{} at {} ms</title>\
                 <line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\"/>\
                 <line class=\"guide\" x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\"/>{label}</g>",
                m.event,
                m.t_ms,
                self.attrs,
                esc(&m.label),
                m.t_ms,
                y + 3.0,
                y + h - 2.0,
                y + h,
                chart.1,
            );
        }
        let mark_y = if self.kind == Kind::Pod { bar_y + 7.0 } else { bar_y };
        for m in &self.marks {
            draw_mark(o, s, m, mark_y + m.dy);
        }
        o.push_str("</g>\n");
    }
}

fn draw_mark(o: &mut String, s: &Scale, m: &Mark, y: f64) {
    let x = s.x(m.t);
    let title = format!("<title>{}</title>", esc(&m.title));
    if let Some(b) = m.bound {
        let w = s.w(b);
        let _ = write!(
            o,
            "<line class=\"fail-bound\" stroke=\"#cf222e\" stroke-opacity=\".4\" x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>",
            x - w,
            x + w
        );
    }
    let _ = match m.shape {
        Shape::Cross => writeln!(
            o,
            "<path {} d=\"M{:.1} {:.1}l6 6m0 -6l-6 6\">{title}</path>",
            m.attrs,
            x - 3.0,
            y - 3.0
        ),
        Shape::Dot => writeln!(
            o,
            "<circle {} cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\">{title}</circle>",
            m.attrs
        ),
        Shape::Tick => writeln!(
            o,
            "<line {} x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\">{title}</line>",
            m.attrs,
            y - 5.0,
            y + 5.0
        ),
        Shape::Diamond => writeln!(
            o,
            "<path {} d=\"M{x:.1} {:.1}l4 4l-4 4l-4 -4z\">{title}</path>",
            m.attrs,
            y - 4.0
        ),
    };
}

/// Every lane of a trial, top to bottom: pods, unattributed failures, flows.
pub(super) fn lanes(r: &Report) -> Vec<Lane> {
    match &r.trial.attach {
        Some(a) => attach_lanes(r, a),
        None => probe_lanes(r),
    }
}

fn attach_lanes(r: &Report, a: &AttachReport) -> Vec<Lane> {
    let bound = r
        .trial
        .clock
        .client
        .as_ref()
        .filter(|c| c.approximate)
        .and_then(|c| c.error_bound_ms);
    let mut out: Vec<Lane> = a.pods.iter().map(|p| pod_lane(r, a, p, bound)).collect();
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
    out
}

fn pod_lane(r: &Report, a: &AttachReport, p: &PodLaneReport, bound: Option<f64>) -> Lane {
    let attrs = format!(" data-pod=\"{}\"", esc(&p.pod));
    let mut lane = Lane::new(Kind::Pod, attrs, p.pod.clone());
    let ns = |t: Option<i64>| t.map(|t| t.saturating_mul(1_000_000));
    let model = PodLane {
        pod: p.pod.clone(),
        deletion_ns: ns(p.deletion_requested_t_ms),
        not_ready_ns: ns(p.endpoint_not_ready_t_ms),
        removed_ns: ns(p.endpoint_removed_t_ms),
        exited_ns: ns(p.exited_t_ms),
        exit_code: p.exit_code,
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
        ("deletion", "deletion".to_string(), p.deletion_requested_t_ms),
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
    // EndpointSlice rows name the pod in their detail (`Pod/NAME in SLICE …`).
    let tag = format!("Pod/{} ", p.pod);
    for e in &r.trial.timeline {
        if e.event == EventName::EndpointsliceTerminatingTrue
            && e.detail.as_deref().is_some_and(|d| d.starts_with(&tag))
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
            "flowbar outcome-{}{}",
            c.outcome.as_str(),
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
            c.outcome.as_str(),
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
                lane.marks.extend(
                    a.failures
                        .iter()
                        .filter(|f| f.flow_id == id)
                        .map(flow_fail),
                );
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

fn is_failure(o: Outcome) -> bool {
    matches!(o, Outcome::Severed | Outcome::ReadTimeout)
}

fn terminal(f: &FlowReport) -> Option<Mark> {
    let t = f.t_terminal_ms?;
    let fail = if is_failure(f.outcome) { " fail" } else { "" };
    Some(Mark {
        t,
        shape: Shape::Dot,
        attrs: format!(
            "class=\"terminal{fail} outcome-{}\" data-outcome=\"{}\" data-mechanism=\"{}\" data-flow=\"{}\" data-t-ms=\"{t}\"",
            f.outcome.as_str(),
            f.outcome.as_str(),
            f.mechanism.as_str(),
            esc(&f.id)
        ),
        title: format!(
            "{} {} ({}) at {t} ms",
            f.id,
            f.outcome.as_str(),
            f.mechanism.as_str()
        ),
        dy: 0.0,
        bound: None,
    })
}

fn probe_lanes(r: &Report) -> Vec<Lane> {
    let mut out = Vec::new();
    if let Some(w) = workload_lane(r) {
        out.push(w);
    }
    let flows = &r.trial.flows;
    if flows.len() <= FLOW_LANE_CAP {
        for f in flows {
            let attrs = format!(
                " data-flow=\"{}\" data-proto=\"{}\" data-outcome=\"{}\" data-mechanism=\"{}\"",
                esc(&f.id),
                f.proto.as_str(),
                f.outcome.as_str(),
                f.mechanism.as_str()
            );
            let mut lane = Lane::new(Kind::Flow, attrs, format!("{} {}", f.id, f.outcome.as_str()));
            if let Some(t0) = f.connected_t_ms {
                lane.segs.push(Seg {
                    t0,
                    t1: f.t_terminal_ms.unwrap_or(AXIS_END),
                    class: format!("flowbar outcome-{}", f.outcome.as_str()),
                });
            } else {
                lane.label = format!("{} connection not measured", f.id);
            }
            lane.marks.extend(terminal(f));
            if let Some(rh) = &f.rehomed {
                lane.marks.push(Mark {
                    t: rh.first_new_reply_t_ms,
                    shape: Shape::Diamond,
                    attrs: "class=\"rehome\"".into(),
                    title: format!(
                        "{} re-homed {} → {} at {} ms",
                        f.id, rh.from_instance, rh.to_instance, rh.first_new_reply_t_ms
                    ),
                    dy: 0.0,
                    bound: None,
                });
            }
            out.push(lane);
        }
        return out;
    }
    let mut groups: BTreeMap<(&str, &str, &str), Vec<&FlowReport>> = BTreeMap::new();
    for f in flows {
        groups
            .entry((f.proto.as_str(), f.outcome.as_str(), f.mechanism.as_str()))
            .or_default()
            .push(f);
    }
    for ((proto, outcome, mechanism), fs) in groups {
        let attrs = format!(
            " data-proto=\"{proto}\" data-outcome=\"{outcome}\" data-mechanism=\"{mechanism}\" data-count=\"{}\"",
            fs.len()
        );
        let mut lane = Lane::new(
            Kind::Group,
            attrs,
            format!("{} {proto} flows {outcome} / {mechanism}", fs.len()),
        );
        let untimed = fs.iter().filter(|f| f.t_terminal_ms.is_none()).count();
        if untimed > 0 {
            lane.note = Some(format!("{untimed} without an end time"));
        }
        lane.marks = fs.iter().filter_map(|f| terminal(f)).collect();
        out.push(lane);
    }
    out
}

/// The probe's own lane: from the first sign of termination (deletion or SIGTERM) to its exit.
fn workload_lane(r: &Report) -> Option<Lane> {
    let s = &r.trial.summary;
    let first = |ev: &EventName| r.trial.timeline.iter().find(|e| &e.event == ev).map(|e| e.t_ms);
    let start = [
        first(&EventName::PodDeletionTimestampSet),
        s.trigger_to_sigterm_ms,
    ]
    .into_iter()
    .flatten()
    .min();
    let exit = s.trigger_to_container_terminated_ms;
    if start.is_none() && exit.is_none() {
        return None;
    }
    let mut lane = Lane::new(
        Kind::Pod,
        " data-pod=\"workload\"".into(),
        "workload".to_string(),
    );
    let t0 = start.unwrap_or(AXIS_START);
    lane.segs.push(Seg {
        t0: AXIS_START,
        t1: start.or(exit).unwrap_or(AXIS_END),
        class: "phase-before-termination".into(),
    });
    if let Some(t1) = exit {
        lane.segs.push(Seg {
            t0,
            t1,
            class: "phase-terminating-ready".into(),
        });
        lane.segs.push(Seg {
            t0: t1,
            t1: AXIS_END,
            class: "phase-after-exit".into(),
        });
    } else if start.is_some() {
        lane.segs.push(Seg {
            t0,
            t1: AXIS_END,
            class: "phase-terminating-ready".into(),
        });
    }
    let code = s
        .container_exit_code
        .map_or_else(|| "not measured".to_string(), |c| c.to_string());
    lane.note = Some(match (start, exit) {
        (_, None) => "exit not measured".to_string(),
        (None, Some(_)) => format!("exit code {code}; start of termination not measured"),
        (Some(_), Some(_)) => format!("exit code {code}"),
    });
    Some(lane)
}
