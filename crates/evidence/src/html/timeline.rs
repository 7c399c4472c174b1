//! The timeline picture: an inline SVG with an axis in ms from the trigger, the control-plane
//! events as vertical markers, and lanes (per pod, per flow up to a cap; see `lanes.rs`).
//!
//! The x range is the span of every event drawn (markers, pod transitions, failures, flow
//! ends), the trigger always inside it; only a bar that began earlier (a connection opened
//! long before the trigger) starts at the axis's edge, with an arrow and its real start.

use std::fmt::Write;

use super::chart::{Marker, Scale, WIDTH, X0, X1, bound_of, bound_text, marker_kind};
use super::esc;
use super::lanes::{self, Lane};
use crate::report::Report;

/// Rows of marker labels above the axis.
const LABEL_ROWS: usize = 4;
const LABEL_ROW_H: f64 = 12.0;
const TOP: f64 = 8.0;

/// Events that belong to one pod: on an attach trial they are drawn in that pod's lane.
fn per_pod(event: &str) -> bool {
    !matches!(event, "trigger" | "sigterm" | "sigkill")
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
