//! The timeline's lanes: one per terminated pod (attach: `trial.attach.pods`, with each failure
//! marked at its time on the lane of the pod it is attributed to), one per flow up to
//! [`FLOW_LANE_CAP`], and beyond it one per (outcome, mechanism) group; an attach trial's
//! prober and one lane per client node of its data-plane view.

use std::fmt::Write;

mod attach;
mod nodes;
mod probe;

use super::chart::{Marker, Scale, X1};
use super::esc;
use crate::report::Report;

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
    Node,
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
            Self::Node => "node",
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
            Kind::Dials | Kind::Node | Kind::Group => 22.0,
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
        let label_y = if self.kind == Kind::Pod {
            y + 34.0
        } else {
            y + h / 2.0 + 4.0
        };
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
        let bar_y = if self.kind == Kind::Pod {
            y + 24.0
        } else {
            y + h / 2.0
        };
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
        let mark_y = if self.kind == Kind::Pod {
            bar_y + 7.0
        } else {
            bar_y
        };
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
        Some(a) => attach::lanes(r, a),
        None => probe::lanes(r),
    }
}
