//! The windows in which the attached Service had no ready endpoint (schema 3.1,
//! `trial.attach.no_ready_endpoint_windows`), from the EndpointSlice lines of the target's
//! pods. Only recordings whose `endpointslice_endpoint_added` lines carry `ready` (written
//! since 3.1) say whether an endpoint appeared ready, so an older one yields none at all
//! (absent), never an empty list it cannot vouch for.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::event::{EventLine, EventName, Source};

/// One window without a ready endpoint, ms from the trigger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoReadyWindow {
    /// When the last ready endpoint stopped being ready (or left).
    pub start_t_ms: i64,
    /// When an endpoint was ready again; the end of the observation when none was.
    pub end_t_ms: i64,
    /// `end_t_ms - start_t_ms`.
    pub duration_ms: i64,
    /// True when no endpoint was ready again before the observation ended.
    pub open_at_end: bool,
}

/// The windows of `lines` with no ready endpoint, ms relative to `t0_ns`; `end_ns` closes one
/// still open. None when the lines cannot say (no endpoint seen, or an added endpoint without
/// its `ready`).
pub fn no_ready_windows(
    lines: &[EventLine],
    t0_ns: i64,
    end_ns: Option<i64>,
) -> Option<Vec<NoReadyWindow>> {
    let rel = |at: i64| (at - t0_ns) / 1_000_000;
    let mut ready: BTreeMap<&str, bool> = BTreeMap::new();
    let mut seen_any = false;
    let mut open: Option<i64> = None;
    let mut last = None;
    let mut out = Vec::new();
    for l in lines.iter().filter(|l| l.source == Some(Source::K8s)) {
        let (Some(pod), Some(at)) = (l.instance.as_deref(), l.at_ns) else {
            continue;
        };
        let before = ready.values().filter(|r| **r).count();
        match l.event {
            EventName::EndpointsliceEndpointAdded => {
                ready.insert(pod, l.ready?);
                seen_any = true;
            }
            EventName::EndpointsliceReadyTrue => {
                ready.insert(pod, true);
            }
            EventName::EndpointsliceReadyFalse => {
                ready.insert(pod, false);
            }
            EventName::EndpointsliceEndpointRemoved => {
                ready.remove(pod);
            }
            _ => continue,
        }
        last = Some(at);
        let after = ready.values().filter(|r| **r).count();
        if before > 0 && after == 0 {
            open = Some(at);
        } else if before == 0
            && after > 0
            && let Some(start) = open.take()
        {
            out.push(NoReadyWindow {
                start_t_ms: rel(start),
                end_t_ms: rel(at),
                duration_ms: rel(at) - rel(start),
                open_at_end: false,
            });
        }
    }
    if !seen_any {
        return None;
    }
    if let Some(start) = open {
        let end = end_ns.or(last).unwrap_or(start).max(start);
        out.push(NoReadyWindow {
            start_t_ms: rel(start),
            end_t_ms: rel(end),
            duration_ms: rel(end) - rel(start),
            open_at_end: true,
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(event: EventName, pod: &str, ms: i64, ready: Option<bool>) -> EventLine {
        let mut l = EventLine::new(Source::K8s, event, ms * 1_000_000);
        l.instance = Some(pod.into());
        l.ready = ready;
        l
    }

    #[test]
    fn a_gap_between_the_old_pod_going_and_the_new_one_ready_is_one_window() {
        let lines = [
            line(EventName::EndpointsliceEndpointAdded, "a", -500, Some(true)),
            line(EventName::EndpointsliceReadyFalse, "a", 100, None),
            line(EventName::EndpointsliceEndpointAdded, "b", 300, Some(false)),
            line(EventName::EndpointsliceReadyTrue, "b", 900, None),
            line(EventName::EndpointsliceEndpointRemoved, "a", 1000, None),
        ];
        let w = no_ready_windows(&lines, 0, Some(5_000_000_000)).expect("measured");
        assert_eq!(
            w,
            vec![NoReadyWindow {
                start_t_ms: 100,
                end_t_ms: 900,
                duration_ms: 800,
                open_at_end: false
            }]
        );
    }

    #[test]
    fn a_surge_leaves_no_window_and_an_old_recording_says_nothing() {
        let surge = [
            line(EventName::EndpointsliceEndpointAdded, "a", -500, Some(true)),
            line(EventName::EndpointsliceEndpointAdded, "b", 100, Some(false)),
            line(EventName::EndpointsliceReadyTrue, "b", 400, None),
            line(EventName::EndpointsliceReadyFalse, "a", 500, None),
        ];
        assert_eq!(no_ready_windows(&surge, 0, None), Some(vec![]));
        let old = [line(EventName::EndpointsliceEndpointAdded, "a", -500, None)];
        assert_eq!(no_ready_windows(&old, 0, None), None);
        assert_eq!(no_ready_windows(&[], 0, None), None);
    }

    #[test]
    fn a_window_still_open_ends_at_the_observation_end() {
        let lines = [
            line(EventName::EndpointsliceEndpointAdded, "a", -500, Some(true)),
            line(EventName::EndpointsliceEndpointRemoved, "a", 200, None),
        ];
        let w = no_ready_windows(&lines, 0, Some(3_000_000_000)).expect("measured");
        assert_eq!(w.len(), 1);
        assert_eq!((w[0].end_t_ms, w[0].open_at_end), (3000, true));
    }
}
