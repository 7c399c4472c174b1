//! The per-pod sections of an attach trial's chart: every terminated pod (the trial's own,
//! then the context ones already terminating before the trigger), then the replacements'
//! endpoints turning ready, each kind bounded by [`MAX_POD_LANES`].

use super::{Ids, label};
use crate::attach::section::PodLaneReport;
use crate::event::EventName;
use crate::report::{Report, Trial};

/// Pod sections drawn at most, per kind (terminated, replacement): a large Deployment stays
/// readable, and the pods not drawn are named under the chart.
pub const MAX_POD_LANES: usize = 6;

/// The events a per-pod section draws instead of the control plane's first of each.
pub(super) const PER_POD: [EventName; 4] = [
    EventName::PodDeletionTimestampSet,
    EventName::EndpointsliceReadyFalse,
    EventName::EndpointsliceEndpointRemoved,
    EventName::ContainerTerminated,
];

/// Whether the trial has attach pod lanes to draw one section each.
pub(super) fn has_pod_lanes(t: &Trial) -> bool {
    t.attach
        .as_ref()
        .is_some_and(|a| !a.pods.is_empty() || !a.context_pods.is_empty())
}

/// `pods` by when their deletion was requested (stable: by name among equals, and those not
/// seen last).
fn in_order(pods: &[PodLaneReport]) -> Vec<&PodLaneReport> {
    let mut v: Vec<&PodLaneReport> = pods.iter().collect();
    v.sort_by_key(|p| {
        (
            p.deletion_requested_t_ms.is_none(),
            p.deletion_requested_t_ms,
        )
    });
    v
}

/// The terminated pods drawn: the trial's own first, then the context ones, each in the order
/// their deletions were requested (the rollout's story; by name when not seen), at most
/// [`MAX_POD_LANES`]; and the names of those not drawn.
fn terminated(t: &Trial) -> (Vec<(&PodLaneReport, bool)>, Vec<&str>) {
    let Some(a) = &t.attach else {
        return (Vec::new(), Vec::new());
    };
    let all: Vec<(&PodLaneReport, bool)> = in_order(&a.pods)
        .into_iter()
        .map(|p| (p, false))
        .chain(in_order(&a.context_pods).into_iter().map(|p| (p, true)))
        .collect();
    let rest = all
        .iter()
        .skip(MAX_POD_LANES)
        .map(|(p, _)| p.pod.as_str())
        .collect();
    (all.into_iter().take(MAX_POD_LANES).collect(), rest)
}

/// The pods whose endpoint turned ready after the trigger and that are no lane (the
/// replacements), with the first time, in time order.
fn replacements(t: &Trial) -> Vec<(&str, i64)> {
    let Some(a) = &t.attach else {
        return Vec::new();
    };
    let lane = |n: &str| a.pods.iter().chain(&a.context_pods).any(|p| p.pod == n);
    let mut out: Vec<(&str, i64)> = Vec::new();
    for e in t.timeline.iter().filter(|e| e.t_ms >= 0) {
        let turned_ready = e.event == EventName::EndpointsliceReadyTrue
            || (e.event == EventName::EndpointsliceEndpointAdded
                && e.endpoint_ready() == Some(true));
        let pod = e.endpoint_pod();
        if let (true, Some(pod)) = (turned_ready, pod)
            && !lane(pod)
            && !out.iter().any(|(p, _)| *p == pod)
        {
            out.push((pod, e.t_ms));
        }
    }
    out
}

/// One section per terminated pod (its termination as a bar, each transition a milestone),
/// then one for the replacements' endpoints turning ready.
pub(super) fn pod_sections(t: &Trial, span: i64, ids: &mut Ids) -> Vec<(String, Vec<String>)> {
    let min_width = (span / 100).max(1);
    let mut out = Vec::new();
    for (p, context) in terminated(t).0 {
        let mut rows = Vec::new();
        let end = [
            p.exited_t_ms,
            p.endpoint_removed_t_ms,
            p.endpoint_not_ready_t_ms,
        ]
        .into_iter()
        .flatten()
        .max();
        if let (Some(d), Some(e)) = (p.deletion_requested_t_ms, end) {
            rows.push(format!(
                "    terminating {d}-{e} ms, {} failures :{}{}, {}, {}ms",
                p.failures,
                if p.failures > 0 { "crit, " } else { "active, " },
                ids.next(),
                d.max(0),
                (e.max(0) - d.max(0)).max(min_width)
            ));
        }
        let exit = p.exit_code.map_or_else(
            || "container exit".to_string(),
            |c| format!("container exit code {c}"),
        );
        for (name, at) in [
            ("deletion requested".to_string(), p.deletion_requested_t_ms),
            ("endpoint not ready".to_string(), p.endpoint_not_ready_t_ms),
            ("endpoint removed".to_string(), p.endpoint_removed_t_ms),
            (exit, p.exited_t_ms),
        ] {
            if let Some(at) = at {
                rows.push(format!(
                    "    {name} at {at} ms :milestone, {}, {}, 0ms",
                    ids.next(),
                    at.max(0)
                ));
            }
        }
        let name = if context {
            format!("pod {} (context, terminating before the trigger)", p.pod)
        } else {
            format!("pod {}", p.pod)
        };
        out.push((name, rows));
    }
    let ready = replacements(t);
    if !ready.is_empty() {
        let rows = ready
            .iter()
            .take(MAX_POD_LANES)
            .map(|&(pod, at)| {
                format!(
                    "    {} ready at {at} ms :milestone, {}, {}, 0ms",
                    label(pod),
                    ids.next(),
                    at.max(0)
                )
            })
            .collect();
        out.push(("replacements (endpoint ready)".to_string(), rows));
    }
    out
}

/// The pods an attach trial's chart leaves out beyond [`MAX_POD_LANES`], by name, as one
/// sentence for under the chart; None when every one is drawn.
pub fn not_drawn(report: &Report) -> Option<String> {
    let t = &report.trial;
    if !has_pod_lanes(t) {
        return None;
    }
    let (_, rest) = terminated(t);
    let ready: Vec<&str> = replacements(t)
        .into_iter()
        .skip(MAX_POD_LANES)
        .map(|(p, _)| p)
        .collect();
    let mut parts = Vec::new();
    if !rest.is_empty() {
        parts.push(format!(
            "{} more terminated pods not drawn: {}",
            rest.len(),
            rest.join(", ")
        ));
    }
    if !ready.is_empty() {
        parts.push(format!(
            "{} more replacements not drawn: {}",
            ready.len(),
            ready.join(", ")
        ));
    }
    (!parts.is_empty()).then(|| {
        format!(
            "{} (report.json `trial.attach` has every pod).",
            parts.join("; ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::super::gantt;
    use super::*;
    use crate::attach::section::PodLaneReport;
    use crate::test_fixtures::report as fixture;

    const FIRST: &str = "bad-shutdown-6dccdfcdc5-5f94z";
    const SECOND: &str = "bad-shutdown-6dccdfcdc5-6zjh2";

    fn lane(pod: &str, at: i64) -> PodLaneReport {
        PodLaneReport {
            pod: pod.into(),
            deletion_requested_t_ms: Some(at),
            endpoint_not_ready_t_ms: Some(at + 10),
            endpoint_removed_t_ms: Some(at + 30),
            exited_t_ms: Some(at + 20),
            exit_code: Some(0),
            failures: 0,
            endpoint_seen_ready: Some(true),
            left_ready_before_exit: None,
        }
    }

    #[test]
    fn a_two_pod_rollout_draws_both_pods_and_the_replacements() {
        let r = fixture("rollout");
        let a = r.trial.attach.as_ref().expect("attach trial");
        assert_eq!(a.pods.len(), 2);
        let g = gantt("bad-rollout", &r);
        // Each pod its own section, with its own times (the second carried 21 of 24 failures).
        let first = g.find(&format!("    section pod {FIRST}\n")).expect(&g);
        let second = g.find(&format!("    section pod {SECOND}\n")).expect(&g);
        assert!(first < second, "{g}");
        for row in [
            "    terminating 870-1213 ms, 3 failures :crit, ",
            "    deletion requested at 870 ms :milestone, ",
            "    endpoint not ready at 901 ms :milestone, ",
            "    container exit code 0 at 1207 ms :milestone, ",
            "    terminating 1976-2203 ms, 21 failures :crit, ",
            "    deletion requested at 1976 ms :milestone, ",
            "    endpoint removed at 2203 ms :milestone, ",
            "    container exit code 0 at 2195 ms :milestone, ",
        ] {
            assert_eq!(g.matches(row).count(), 1, "{row} in {g}");
        }
        // The control plane keeps the trigger; the pods' events are not drawn twice there.
        let cp = g.find("    section control plane\n").expect(&g);
        assert!(cp < first);
        assert!(
            g.contains("    trigger at 0 ms :milestone, e1, 0, 0ms\n"),
            "{g}"
        );
        assert!(!g.contains("pod terminating at"), "{g}");
        // The replacements' endpoints turning ready, from their EndpointSlice rows.
        let rep = g
            .find("    section replacements (endpoint ready)\n")
            .expect(&g);
        assert!(second < rep);
        assert!(g.contains("    bad-shutdown-745bb49468-9dcdc ready at 851 ms :milestone, "));
        assert!(g.contains("    bad-shutdown-745bb49468-gzscf ready at 1945 ms :milestone, "));
        assert_eq!(not_drawn(&r), None);
        // Still one ':' per task line, so Mermaid parses each name whole.
        let tasks: Vec<&str> = g.lines().filter(|l| l.contains(" ms ")).collect();
        assert!(tasks.len() >= 11, "{g}");
        for line in tasks {
            assert_eq!(line.matches(':').count(), 1, "{line}");
        }
    }

    #[test]
    fn replacements_are_read_from_the_rows_typed_fields() {
        let r = fixture("rollout");
        let from_text = replacements(&r.trial);
        assert_eq!(from_text.len(), 2, "{from_text:?}");
        // The same rows as a 5.1 report writes them, with the text of their detail gone.
        let mut typed = r.clone();
        let mut moved = 0;
        for e in &mut typed.trial.timeline {
            if let Some(pod) = e.endpoint_pod().map(str::to_string) {
                e.ready = e.endpoint_ready();
                e.pod = Some(pod);
                e.detail = None;
                moved += 1;
            }
        }
        assert!(moved >= 4, "{moved} EndpointSlice rows");
        assert_eq!(replacements(&typed.trial), from_text);
    }

    #[test]
    fn a_large_rollout_is_bounded_and_names_the_rest() {
        let mut r = fixture("rollout");
        let a = r.trial.attach.as_mut().expect("attach trial");
        a.pods = (0..9)
            .map(|i| lane(&format!("web-{i}"), i * 1000))
            .collect();
        a.context_pods = vec![lane("web-old", -2000)];
        let g = gantt("big", &r);
        assert_eq!(g.matches("    section pod ").count(), MAX_POD_LANES, "{g}");
        assert!(g.contains("    section pod web-5\n"));
        assert!(!g.contains("    section pod web-6\n"));
        assert_eq!(
            not_drawn(&r).as_deref(),
            Some(
                "4 more terminated pods not drawn: web-6, web-7, web-8, web-old (report.json `trial.attach` has every pod)."
            )
        );
        // With room, the context pod is drawn after the trial's own, and says so.
        let a = r.trial.attach.as_mut().expect("attach trial");
        a.pods.truncate(2);
        let g = gantt("small", &r);
        let own = g.find("    section pod web-1\n").expect(&g);
        let ctx = g
            .find("    section pod web-old (context, terminating before the trigger)\n")
            .expect(&g);
        assert!(own < ctx);
        // Its bar starts at the chart's start, as every time before the trigger does.
        assert!(
            g.contains("    terminating -2000--1970 ms, 0 failures :active, "),
            "{g}"
        );
        assert_eq!(not_drawn(&r), None);
    }

    #[test]
    fn pods_are_drawn_in_the_order_their_deletions_were_requested() {
        let mut r = fixture("rollout");
        let a = r.trial.attach.as_mut().expect("attach trial");
        a.pods = vec![lane("web-a", 2000), lane("web-b", 500)];
        let g = gantt("order", &r);
        let a_at = g.find("    section pod web-a\n").expect(&g);
        let b_at = g.find("    section pod web-b\n").expect(&g);
        assert!(b_at < a_at, "{g}");
    }

    #[test]
    fn a_probe_trial_keeps_its_control_plane_milestones() {
        let g = gantt("drain", &fixture("drain"));
        assert!(!g.contains("section pod "), "{g}");
        assert_eq!(not_drawn(&fixture("drain")), None);
    }
}
