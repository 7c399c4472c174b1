//! The legend under the timeline: what the colours and marks mean, and how each source's times
//! were placed (exact, or approximate with a bound).

use std::fmt::Write;

use super::chart::{MARKER_COLOURS, bound_text};
use super::{esc, name_of};
use crate::report::Report;

/// The legend and the clock sentence under the picture.
pub(super) fn legend(r: &Report) -> String {
    let mut o = String::from("<p class=\"legend\">");
    if r.trial.attach.is_some() {
        for (class, what) in [
            ("phase-before-termination", "serving"),
            (
                "phase-terminating-ready",
                "terminating, endpoint still ready",
            ),
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
        if r.trial
            .attach
            .as_ref()
            .is_some_and(|a| a.data_plane.is_some())
        {
            o.push_str(
                "<span><svg width=\"10\" height=\"10\"><path class=\"node-last-served\" d=\"M5 1l4 4l-4 4l-4 -4z\"/></svg> node lanes: the last new connection that client node sent the pod; \
                 <svg width=\"14\" height=\"10\"><line class=\"node-lag\" x1=\"0\" y1=\"5\" x2=\"14\" y2=\"5\"/></svg> after its endpoint turned not ready (the node's routing lag, a lower bound)</span>",
            );
        }
    } else {
        for (class, what) in [
            ("phase-before-termination", "workload running"),
            (
                "phase-terminating-ready",
                "terminating (deletion or SIGTERM to exit)",
            ),
            ("phase-after-exit", "exited"),
        ] {
            let _ = write!(
                o,
                "<span><svg width=\"14\" height=\"10\"><rect class=\"{class}\" width=\"14\" height=\"10\"/></svg> {what}</span>"
            );
        }
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
