//! The longest failure window and the latency summary: small pure folds over sorted samples.

use super::section::FailureWindow;
use crate::clock::ns_to_ms_f64;
use crate::rank::nearest_rank;

/// The longest run of failures in `outcomes` ((time, failed), sorted by time) not interrupted
/// by a success; ties go to the earliest. Times stay in the caller's unit. `None` when nothing
/// failed.
pub fn longest_failure_window(outcomes: &[(i64, bool)]) -> Option<FailureWindow> {
    let mut best: Option<FailureWindow> = None;
    let mut run: Option<FailureWindow> = None;
    let close = |run: &mut Option<FailureWindow>, best: &mut Option<FailureWindow>| {
        if let Some(r) = run.take() {
            if best.as_ref().is_none_or(|b| r.duration_ms > b.duration_ms) {
                *best = Some(r);
            }
        }
    };
    for &(at, failed) in outcomes {
        if failed {
            match &mut run {
                Some(r) => {
                    r.end_t_ms = at;
                    r.duration_ms = at - r.start_t_ms;
                    r.failures += 1;
                }
                None => {
                    run = Some(FailureWindow {
                        start_t_ms: at,
                        end_t_ms: at,
                        duration_ms: 0,
                        failures: 1,
                    })
                }
            }
        } else {
            close(&mut run, &mut best);
        }
    }
    close(&mut run, &mut best);
    best
}

/// Latency percentiles in ms; each null when there is no sample.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Latency {
    /// Median (nearest rank).
    pub p50: Option<f64>,
    /// 99th percentile (nearest rank).
    pub p99: Option<f64>,
    /// Largest.
    pub max: Option<f64>,
}

/// Sorts `ns` and summarises it.
pub fn latency_summary(ns: &mut [i64]) -> Latency {
    ns.sort_unstable();
    Latency {
        p50: nearest_rank(ns, 500).map(ns_to_ms_f64),
        p99: nearest_rank(ns, 990).map(ns_to_ms_f64),
        max: ns.last().copied().map(ns_to_ms_f64),
    }
}
