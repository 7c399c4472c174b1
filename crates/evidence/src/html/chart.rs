//! The picture's coordinates (the x of a time) and the marker vocabulary (which timeline
//! events are markers, their colours, how an approximate time's bound is read), shared by the
//! timeline, its lanes and the legend.

use crate::clock::SourceClock;
use crate::event::{EventName, Source};
use crate::report::{Report, TimelineEntry};

/// Width of the picture in user units.
pub(super) const WIDTH: f64 = 1100.0;
/// Where the plot starts (lane labels to the left).
pub(super) const X0: f64 = 235.0;
/// Where the plot ends.
pub(super) const X1: f64 = 1085.0;

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
    /// The scale over every time drawn (the trigger, 0, always inside).
    pub(super) fn over(times: impl IntoIterator<Item = i64>) -> Self {
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

pub(super) fn source_clock(r: &Report, s: Source) -> Option<&SourceClock> {
    match s {
        Source::Probe => Some(&r.trial.clock.probe),
        Source::Client => r.trial.clock.client.as_ref(),
        Source::K8s | Source::Orchestrator | Source::Ingress => None,
    }
}

/// The bound of an entry's time: `None` exact, `Some(b)` approximate with half-width `b`.
pub(super) fn bound_of(r: &Report, e: &TimelineEntry) -> Option<Option<f64>> {
    e.approximate
        .then(|| source_clock(r, e.source).and_then(|c| c.error_bound_ms))
}

/// A bound in ms: one decimal below 10 ms, whole ms above.
pub(super) fn bound_text(b: f64) -> String {
    if b < 10.0 {
        format!("{b:.1}")
    } else {
        format!("{b:.0}")
    }
}
