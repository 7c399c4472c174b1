//! The timeline picture: an inline SVG with an axis in ms from the trigger, the control-plane
//! events as vertical markers, and lanes (per pod, per flow up to a cap; see `lanes.rs`).
//!
//! The x range is the span of everything drawn (markers, lane transitions, failures, flow
//! ends), the trigger always inside it, so nothing is clipped and nothing is invented.

use std::fmt::Write;

use super::lanes::{self, Lane};
use super::{esc, name_of};
use crate::evidence::clock::SourceClock;
use crate::evidence::event::{EventName, Source};
use crate::evidence::report::{Report, TimelineEntry};

/// Width of the picture in user units.
pub(super) const WIDTH: f64 = 1100.0;
/// Where the plot starts (lane labels to the left).
pub(super) const X0: f64 = 235.0;
/// Where the plot ends.
pub(super) const X1: f64 = 1085.0;
/// Rows of marker labels above the axis.
const LABEL_ROWS: usize = 4;
const LABEL_ROW_H: f64 = 12.0;
const TOP: f64 = 8.0;

/// Each marker kind's colour and legend text.
pub(super) const MARKER_COLOURS: [(&str, &str, &str); 9] = [
    ("trigger", "#1f2328", "trigger (t = 0)"),
    ("deletion", "#9a6700", "deletion requested"),
    ("sigterm", "#0969da", "SIGTERM received"),
    ("endpoint-not-ready", "#cf222e", "endpoint not ready"),
    ("endpoint-not-serving", "#d1242f", "endpoint not serving"),
    ("endpoint-terminating", "#bf3989", "endpoint terminating"),
    ("endpoint-removed", "#8250df", "endpoint removed"),
    ("container-exit", "#57606a", "container exit"),
    ("sigkill", "#a40e26", "SIGKILL"),
];

/// Maps ms from the trigger to x.
#[derive(Debug, Clone, Copy)]
pub(super) struct Scale {
    t0: i64,
    t1: i64,
}

impl Scale {
    fn over(times: impl IntoIterator<Item = i64>) -> Self {
        let (mut lo, mut hi) = (0_i64, 0_i64);
        for t in times {
            lo = lo.min(t);
            hi = hi.max(t);
        }
        // A little room at both ends, so a marker at an edge stays visible.
        let pad = ((hi - lo) / 40).max(10);
        Self {
            t0: lo - pad,
            t1: hi + pad,
        }
    }

    /// The x of `t` ms.
    pub(super) fn x(&self, t: i64) -> f64 {
        X0 + (t - self.t0) as f64 / (self.t1 - self.t0) as f64 * (X1 - X0)
    }

    /// The width of `ms` milliseconds.
    pub(super) fn w(&self, ms: f64) -> f64 {
        ms / (self.t1 - self.t0) as f64 * (X1 - X0)
    }

    /// The first and last time on the axis.
    pub(super) fn ends(&self) -> (i64, i64) {
        (self.t0, self.t1)
    }
}

/// One control-plane or workload event drawn as a vertical marker.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Marker {
    /// `data-event`: trigger, deletion, sigterm, endpoint-not-ready, endpoint-not-serving,
    /// endpoint-terminating, endpoint-removed, container-exit, sigkill.
    pub event: &'static str,
    /// The label drawn.
    pub label: String,
    pub t_ms: i64,
    /// Half-width of the time's bound when the time is approximate; `Some(None)` when it is
    /// approximate with no bound known; `None` when exact.
    pub bound: Option<Option<f64>>,
    /// The source's name.
    pub source: &'static str,
}

/// The marker kind of a timeline event, if it is one.
pub(super) fn marker_kind(e: &EventName) -> Option<(&'static str, &'static str)> {
    Some(match e {
        EventName::TriggerIssued => ("trigger", "trigger"),
        EventName::PodDeletionTimestampSet => ("deletion", "deletion"),
        EventName::SigtermReceived => ("sigterm", "SIGTERM"),
        EventName::EndpointsliceReadyFalse => ("endpoint-not-ready", "not ready"),
        EventName::EndpointsliceServingFalse => ("endpoint-not-serving", "not serving"),
        EventName::EndpointsliceTerminatingTrue => ("endpoint-terminating", "terminating"),
        EventName::EndpointsliceEndpointRemoved => ("endpoint-removed", "endpoint removed"),
        EventName::ContainerTerminated => ("container-exit", "exit"),
        EventName::SigkillSent => ("sigkill", "SIGKILL"),
        _ => return None,
    })
}

/// Events that belong to one pod: on an attach trial they are drawn in that pod's lane.
fn per_pod(event: &str) -> bool {
    !matches!(event, "trigger" | "sigterm" | "sigkill")
}

fn source_clock(r: &Report, s: Source) -> Option<&SourceClock> {
    match s {
        Source::Probe => Some(&r.trial.clock.probe),
        Source::Client => r.trial.clock.client.as_ref(),
        Source::K8s | Source::Orchestrator => None,
    }
}

/// The bound of an entry's time: `None` exact, `Some(b)` approximate with half-width `b`.
pub(super) fn bound_of(r: &Report, e: &TimelineEntry) -> Option<Option<f64>> {
    e.approximate
        .then(|| source_clock(r, e.source).and_then(|c| c.error_bound_ms))
}

/// The full-height markers: every marker event on a probe trial; on an attach trial the ones
/// not tied to one pod (the pods' own events are in their lanes). Same event at the same time
/// is drawn once.
pub(super) fn global_markers(r: &Report) -> Vec<Marker> {
    let attach = r.trial.attach.is_some();
    let mut out: Vec<Marker> = Vec::new();
    for e in &r.trial.timeline {
        let Some((event, label)) = marker_kind(&e.event) else {
            continue;
        };
        if attach && per_pod(event) {
            continue;
        }
        if out.iter().any(|m| m.event == event && m.t_ms == e.t_ms) {
            continue;
        }
        let label = match (event, r.trial.summary.container_exit_code) {
            ("container-exit", Some(code)) => format!("exit {code}"),
            _ => label.to_string(),
        };
        out.push(Marker {
            event,
            label,
            t_ms: e.t_ms,
            bound: bound_of(r, e),
            source: e.source.as_str(),
        });
    }
    out
}

/// Every time the picture draws, for the x range.
fn drawn_times(markers: &[Marker], lanes: &[Lane]) -> Vec<i64> {
    let mut ts: Vec<i64> = Vec::new();
    for m in markers {
        ts.push(m.t_ms);
        if let Some(Some(b)) = m.bound {
            // Whole milliseconds around the bound; a fraction of one changes nothing drawn.
            let b = b.ceil() as i64;
            ts.extend([m.t_ms - b, m.t_ms + b]);
        }
    }
    for l in lanes {
        ts.extend(l.times());
    }
    ts
}

/// A tick step of 1, 2 or 5 × 10^k ms giving at most about 10 ticks.
fn tick_step(span: i64) -> i64 {
    let mut step = 1_i64;
    loop {
        for m in [1, 2, 5] {
            if step * m * 10 >= span {
                return step * m;
            }
        }
        step *= 10;
    }
}

/// Places marker labels in rows so they do not overlap; returns each marker's row.
fn label_rows(scale: &Scale, markers: &[Marker]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..markers.len()).collect();
    order.sort_by_key(|&i| markers[i].t_ms);
    let mut ends = [f64::MIN; LABEL_ROWS];
    let mut rows = vec![0; markers.len()];
    for i in order {
        let x = scale.x(markers[i].t_ms);
        let w = markers[i].label.chars().count() as f64 * 5.6 + 6.0;
        let row = (0..LABEL_ROWS).find(|&k| ends[k] < x).unwrap_or_else(|| {
            (0..LABEL_ROWS)
                .min_by(|&a, &b| ends[a].total_cmp(&ends[b]))
                .unwrap_or(0)
        });
        ends[row] = x + w;
        rows[i] = row;
    }
    rows
}

fn draw_axis(o: &mut String, scale: &Scale, y: f64, bottom: f64) {
    let (t0, t1) = scale.ends();
    let step = tick_step(t1 - t0);
    let _ = writeln!(
        o,
        "<g class=\"axis\" data-unit=\"ms\"><line x1=\"{X0:.1}\" y1=\"{y:.1}\" x2=\"{X1:.1}\" y2=\"{y:.1}\"/>"
    );
    let mut t = t0.div_euclid(step) * step;
    if t < t0 {
        t += step;
    }
    while t <= t1 {
        let x = scale.x(t);
        let _ = writeln!(
            o,
            "<line class=\"grid\" x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{x:.1}\" y2=\"{bottom:.1}\"/>\
             <line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{y:.1}\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" data-t-ms=\"{t}\">{t} ms</text>",
            y - 4.0,
            y + 12.0
        );
        t += step;
    }
    o.push_str("</g>\n");
}

fn draw_marker(o: &mut String, scale: &Scale, m: &Marker, label_y: f64, bottom: f64, top: f64) {
    let x = scale.x(m.t_ms);
    let approx = match m.bound {
        None => String::new(),
        Some(Some(b)) => format!(" data-approximate=\"true\" data-bound-ms=\"{b}\""),
        Some(None) => " data-approximate=\"true\"".to_string(),
    };
    let when = match m.bound {
        None => format!("{} ms", m.t_ms),
        Some(Some(b)) => format!("{} ms ±{} ms", m.t_ms, bound_text(b)),
        Some(None) => format!("{} ms (approximate, bound unknown)", m.t_ms),
    };
    let _ = write!(
        o,
        "<g class=\"marker\" data-event=\"{}\" data-t-ms=\"{}\" data-source=\"{}\"{approx}>\
         <title>{} at {} ({})</title>",
        m.event,
        m.t_ms,
        m.source,
        esc(&m.label),
        esc(&when),
        m.source
    );
    if let Some(Some(b)) = m.bound {
        let w = scale.w(2.0 * b).max(1.0);
        let _ = write!(
            o,
            "<rect class=\"bound\" x=\"{:.1}\" y=\"{top:.1}\" width=\"{w:.1}\" height=\"{:.1}\"/>\
             <text class=\"bound-label\" x=\"{:.1}\" y=\"{:.1}\">±{} ms</text>",
            x - w / 2.0,
            bottom - top,
            x + w / 2.0 + 2.0,
            top + 10.0,
            bound_text(b)
        );
    }
    let suffix = if m.bound == Some(None) { " ≈" } else { "" };
    let _ = writeln!(
        o,
        "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{bottom:.1}\"/>\
         <text x=\"{:.1}\" y=\"{label_y:.1}\">{}{suffix}</text></g>",
        label_y + 2.0,
        x + 2.0,
        esc(&m.label)
    );
}

/// A bound in ms: one decimal below 10 ms, whole ms above.
pub(super) fn bound_text(b: f64) -> String {
    if b < 10.0 {
        format!("{b:.1}")
    } else {
        format!("{b:.0}")
    }
}

/// The timeline SVG of one trial.
pub(super) fn svg(r: &Report) -> String {
    let markers = global_markers(r);
    let lanes = lanes::lanes(r);
    let scale = Scale::over(drawn_times(&markers, &lanes));
    let rows = label_rows(&scale, &markers);
    let used = rows.iter().max().map_or(1, |r| r + 1);
    let axis_y = TOP + used as f64 * LABEL_ROW_H + 14.0;
    let lanes_top = axis_y + 16.0;
    let lanes_h: f64 = lanes.iter().map(Lane::height).sum();
    let bottom = lanes_top + lanes_h.max(20.0);
    let height = bottom + 24.0;
    let mut o = format!(
        "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {height:.0}\" \
         role=\"img\" data-trial=\"{}\" data-lanes=\"{}\" aria-label=\"termination timeline of {}\">\n",
        esc(&r.trial.id),
        lanes.len(),
        esc(&r.trial.id)
    );
    let _ = writeln!(
        o,
        "<text class=\"lane-note\" x=\"4\" y=\"{:.1}\">ms from the trigger</text>",
        axis_y + 4.0
    );
    draw_axis(&mut o, &scale, axis_y, bottom);
    let mut y = lanes_top;
    for (i, lane) in lanes.iter().enumerate() {
        lane.draw(&mut o, &scale, y, i % 2 == 1, (lanes_top, bottom));
        y += lane.height();
    }
    if lanes.is_empty() {
        let _ = writeln!(
            o,
            "<text class=\"lane-note\" x=\"{X0}\" y=\"{:.1}\">no pod or flow was observed</text>",
            lanes_top + 14.0
        );
    }
    for (m, row) in markers.iter().zip(rows) {
        let label_y = TOP + 10.0 + row as f64 * LABEL_ROW_H;
        draw_marker(&mut o, &scale, m, label_y, bottom, lanes_top);
    }
    // The axis repeated under the lanes, so a tall picture reads at its foot too.
    let (t0, t1) = scale.ends();
    let _ = writeln!(
        o,
        "<text class=\"lane-note\" x=\"{X0:.1}\" y=\"{:.1}\">{t0} ms</text>\
         <text class=\"lane-note\" x=\"{X1:.1}\" y=\"{:.1}\" text-anchor=\"end\">{t1} ms</text>",
        bottom + 14.0,
        bottom + 14.0
    );
    o.push_str("</svg>\n");
    o
}

/// The legend and the clock sentence under the picture.
pub(super) fn legend(r: &Report) -> String {
    let mut o = String::from("<p class=\"legend\">");
    if r.trial.attach.is_some() {
        for (class, what) in [
            ("phase-before-termination", "serving"),
            ("phase-terminating-ready", "terminating, endpoint still ready"),
            ("phase-terminating-not-ready", "endpoint not ready"),
            ("phase-after-endpoint-removal", "endpoint removed"),
            ("phase-after-exit", "container exited"),
        ] {
            let _ = write!(
                o,
                "<span><svg width=\"14\" height=\"10\"><rect class=\"{class}\" width=\"14\" height=\"10\"/></svg> {what}</span>"
            );
        }
        o.push_str(
            "<span>✕ failed request (red), dial (orange), held connection (purple), on the lane of the pod it is attributed to</span>",
        );
    } else {
        o.push_str(
            "<span>bar: a flow from its connection to its end</span>\
             <span>● green: drained cleanly; red: severed or read timeout; white: still open at the window's end</span>",
        );
    }
    o.push_str("</p>\n<p class=\"legend\">");
    for (_, colour, what) in MARKER_COLOURS {
        let _ = write!(
            o,
            "<span><svg width=\"14\" height=\"10\"><line x1=\"7\" y1=\"0\" x2=\"7\" y2=\"10\" stroke=\"{colour}\" stroke-width=\"2\"/></svg> {what}</span>"
        );
    }
    o.push_str("</p>\n<p class=\"legend\">");
    let mut clocks = vec!["k8s and orchestrator times are the orchestrator's (exact)".to_string()];
    for (name, c) in [
        ("probe", Some(&r.trial.clock.probe)),
        ("client", r.trial.clock.client.as_ref()),
    ] {
        let Some(c) = c else { continue };
        let mapping = name_of(&c.mapping);
        let s = match (c.approximate, c.error_bound_ms) {
            (_, _) if mapping == "not-measured" => continue,
            (false, _) => format!("{name} times exact ({mapping})"),
            (true, Some(b)) => format!("{name} times ±{} ms ({mapping})", bound_text(b)),
            (true, None) => format!("{name} times approximate, bound unknown ({mapping})"),
        };
        clocks.push(s);
    }
    if r.trial.attach.is_some() && r.trial.summary.trigger_to_sigterm_ms.is_none() {
        clocks.push("SIGTERM: not measured (not observable on an unmodified workload)".into());
    }
    let _ = write!(o, "<span>{}</span></p>", esc(&clocks.join("; ")));
    o.push('\n');
    o
}
