//! A trial's key events as a Mermaid gantt chart, which GitHub renders in job summaries and
//! comments: the trigger, SIGTERM, the pod turning terminating, the endpoint leaving the ready
//! set and being removed, the container's exit, the grace period, and when the flows ended,
//! grouped by protocol and outcome. The time axis is milliseconds after the trigger.
//!
//! Pure text. A gantt chart (rather than Mermaid's `timeline`) keeps the spacing proportional
//! to time, which is the point: the reader sees which of SIGTERM and the endpoint change won.
//!
//! An attach trial draws every terminated pod as its own section (a rollout replaces all of
//! them, and the failures are often on a later one), then the pods already terminating before
//! the trigger (context), then the replacements' endpoints turning ready; at most
//! [`MAX_POD_LANES`] of each, the rest named by [`not_drawn`] under the chart; then a section
//! per client node of its data-plane view: how long after each pod's endpoint turned not ready
//! that node still sent it new connections.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::classify::Outcome;
use super::event::EventName;
use super::report::{Report, Trial};

mod nodes;
mod pods;
pub use pods::{MAX_POD_LANES, not_drawn};
use pods::{PER_POD, has_pod_lanes, pod_sections};

/// Timeline events worth a milestone, by section, with their label.
const MILESTONES: [(&str, EventName, &str); 6] = [
    ("control plane", EventName::TriggerIssued, "trigger"),
    (
        "control plane",
        EventName::PodDeletionTimestampSet,
        "pod terminating",
    ),
    (
        "control plane",
        EventName::EndpointsliceReadyFalse,
        "endpoint not ready",
    ),
    (
        "control plane",
        EventName::EndpointsliceEndpointRemoved,
        "endpoint removed",
    ),
    ("workload", EventName::SigtermReceived, "SIGTERM"),
    ("workload", EventName::ContainerTerminated, "container exit"),
];

/// Mermaid task names end at `:` and comments start at `%%`; `#` and `;` confuse the parser.
fn label(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            ':' | '#' | ';' | '%' | '\n' | '\r' => ' ',
            c => c,
        })
        .collect()
}

fn outcome_tag(o: Outcome) -> &'static str {
    match o {
        Outcome::DrainedCleanClose => "done, ",
        Outcome::Severed | Outcome::ReadTimeout => "crit, ",
        Outcome::SurvivedObservationWindow | Outcome::NotMeasured => "active, ",
    }
}

/// Rows of the chart by section name.
type Sections<'a> = BTreeMap<&'a str, Vec<String>>;

/// Task ids, `e1`, `e2`, … in the order the rows are made.
struct Ids(u32);

impl Ids {
    fn next(&mut self) -> String {
        self.0 += 1;
        format!("e{}", self.0)
    }
}

/// The gantt chart of one trial, without the surrounding code fence.
pub fn gantt(title: &str, report: &Report) -> String {
    let t = &report.trial;
    let span = t
        .timeline
        .iter()
        .map(|e| e.t_ms)
        .chain(t.flows.iter().filter_map(|f| f.t_terminal_ms))
        .max()
        .unwrap_or(0);
    let mut ids = Ids(0);
    let mut sections: Sections = BTreeMap::new();
    let per_pod = has_pod_lanes(t);
    milestones(t, per_pod, &mut ids, &mut sections);
    let pods = if per_pod {
        pod_sections(t, span, &mut ids)
    } else {
        Vec::new()
    };
    let nodes = nodes::node_sections(t, span, &mut ids);
    grace_period(t, &mut ids, &mut sections);
    flows_ended(t, span, &mut ids, &mut sections);
    let mut o = header(title, span);
    let mut section = |name: &str, lines: &[String]| {
        let _ = writeln!(o, "    section {}", label(name));
        for l in lines {
            let _ = writeln!(o, "{l}");
        }
    };
    // Fixed section order: cause, then each pod's termination and each node's routing to
    // it, then effect, then what the flows saw.
    if let Some(lines) = sections.get("control plane") {
        section("control plane", lines);
    }
    for (name, lines) in pods.iter().chain(&nodes) {
        section(name, lines);
    }
    for name in ["workload", "flows ended"] {
        if let Some(lines) = sections.get(name) {
            section(name, lines);
        }
    }
    o
}

fn header(title: &str, span: i64) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "gantt");
    let _ = writeln!(o, "    title {}", label(title));
    let _ = writeln!(o, "    dateFormat x");
    // Epoch milliseconds stand in for "ms after the trigger"; seconds and milliseconds read
    // the same in every time zone, minutes need not.
    let axis = if span < 60_000 { "%S.%L s" } else { "%M:%S" };
    let _ = writeln!(o, "    axisFormat {axis}");
    let _ = writeln!(o, "    todayMarker off");
    o
}

/// The first of each [`MILESTONES`] event, as a milestone; with `per_pod` sections, the
/// pod's own events are drawn there instead.
fn milestones(t: &Trial, per_pod: bool, ids: &mut Ids, sections: &mut Sections) {
    for (section, event, name) in &MILESTONES {
        if per_pod && PER_POD.contains(event) {
            continue;
        }
        if let Some(e) = t.timeline.iter().find(|e| e.event == *event) {
            let extra = match (event, t.summary.container_exit_code) {
                (EventName::ContainerTerminated, Some(code)) => format!(" code {code}"),
                _ => String::new(),
            };
            sections.entry(section).or_default().push(format!(
                "    {}{extra} at {} ms :milestone, {}, {}, 0ms",
                name,
                e.t_ms,
                ids.next(),
                e.t_ms.max(0)
            ));
        }
    }
}

/// The grace period as a bar from SIGTERM, when SIGTERM was seen.
fn grace_period(t: &Trial, ids: &mut Ids, sections: &mut Sections) {
    if let Some(sig) = t
        .timeline
        .iter()
        .find(|e| e.event == EventName::SigtermReceived)
    {
        let grace = i64::from(t.config.grace_period_seconds) * 1000;
        sections.entry("workload").or_default().push(format!(
            "    grace period {} s :{}, {}, {grace}ms",
            t.config.grace_period_seconds,
            ids.next(),
            sig.t_ms.max(0)
        ));
    }
}

/// One bar per protocol and outcome, from the first flow of the group to end to the last.
fn flows_ended(t: &Trial, span: i64, ids: &mut Ids, sections: &mut Sections) {
    let mut groups: BTreeMap<(&str, Outcome), (i64, i64, u32)> = BTreeMap::new();
    for f in &t.flows {
        if let Some(end) = f.t_terminal_ms {
            let g = groups
                .entry((f.proto.as_str(), f.outcome))
                .or_insert((end, end, 0));
            g.0 = g.0.min(end);
            g.1 = g.1.max(end);
            g.2 += 1;
        }
    }
    // A bar narrower than 1% of the chart does not show, so a group that ended at once gets
    // that much; its label carries the exact range.
    let min_width = (span / 100).max(1);
    for ((proto, outcome), (first, last, n)) in groups {
        let range = if first == last {
            format!("{first} ms")
        } else {
            format!("{first}-{last} ms")
        };
        sections.entry("flows ended").or_default().push(format!(
            "    {proto} {outcome} x{n} {range} :{}{}, {}, {}ms",
            outcome_tag(outcome),
            ids.next(),
            first.max(0),
            (last - first).max(min_width)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixtures::report as fixture;

    #[test]
    fn a_drain_trial_has_its_key_events_and_flow_groups() {
        let g = gantt("drain: trial-001", &fixture("drain"));
        assert!(g.starts_with("gantt\n    title drain  trial-001\n    dateFormat x\n"));
        assert!(g.contains("todayMarker off"));
        assert!(
            g.contains("    trigger at 0 ms :milestone, e1, 0, 0ms\n"),
            "{g}"
        );
        assert!(
            g.contains("    SIGTERM at 4 ms :milestone, e2, 4, 0ms\n"),
            "{g}"
        );
        assert!(
            g.contains("    container exit code 0 at 1009 ms :milestone,"),
            "{g}"
        );
        assert!(g.contains("    grace period 4 s :"), "{g}");
        assert!(g.contains("    tcp drained-clean-close x3 "), "{g}");
        assert!(g.contains(":crit, "), "udp flows were severed: {g}");
        let cp = g.find("section control plane").unwrap();
        let wl = g.find("section workload").unwrap();
        let fl = g.find("section flows ended").unwrap();
        assert!(cp < wl && wl < fl);
        // No character that ends a Mermaid task name inside one.
        for line in g
            .lines()
            .filter(|l| l.contains(":milestone") || l.contains(" ms :"))
        {
            assert_eq!(line.matches(':').count(), 1, "{line}");
        }
    }
}
