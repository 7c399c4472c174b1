//! The lanes of a probe trial: the workload, then a lane per flow with its terminal event up to
//! the cap, beyond it one per protocol, outcome and mechanism.

use std::collections::BTreeMap;

use super::super::{FLOW_LANE_CAP, esc};
use super::{AXIS_END, AXIS_START, Kind, Lane, Mark, Seg, Shape};
use crate::classify::Outcome;
use crate::event::EventName;
use crate::report::{FlowReport, Report};

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

/// Every lane of a probe trial, top to bottom.
pub(super) fn lanes(r: &Report) -> Vec<Lane> {
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
            let mut lane = Lane::new(
                Kind::Flow,
                attrs,
                format!("{} {}", f.id, f.outcome.as_str()),
            );
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
    let first = |ev: &EventName| {
        r.trial
            .timeline
            .iter()
            .find(|e| &e.event == ev)
            .map(|e| e.t_ms)
    };
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
