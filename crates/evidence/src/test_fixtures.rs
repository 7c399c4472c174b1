//! Real reports recorded on the local platform (tests/fixtures/ci/run-local), for the core's
//! unit tests: a draining probe, one that exits at once, and one that ignores SIGTERM; a real
//! two-pod attach rollout from the local cluster (results/2026-11-30-attach); and the event
//! lines of a rollout over a pod still terminating from an earlier one.

// Built only for tests (this crate's, and the drainwatch crate's through the test-fixtures
// feature): a fixture that does not parse is a broken test setup.
#![allow(clippy::expect_used, clippy::panic)]

use crate::report::Report;

/// The report of the named fixture trial: `drain`, `exit-now`, `ignore`, or `rollout` (an
/// attach rollout-restart of a two-pod Deployment, both pods replaced).
pub fn report(name: &str) -> Report {
    let text = match name {
        "drain" => include_str!("../../../tests/fixtures/ci/run-local/drain/report.json"),
        "exit-now" => include_str!("../../../tests/fixtures/ci/run-local/exit-now/report.json"),
        "ignore" => include_str!("../../../tests/fixtures/ci/run-local/ignore/report.json"),
        "rollout" => include_str!(
            "../../../results/2026-11-30-attach/bad-rollout-policy/out/bad-rollout/report.json"
        ),
        other => panic!("no fixture {other}"),
    };
    serde_json::from_str(text).expect("fixture report parses")
}

/// The event lines of a rollout over a pod still terminating from an earlier one; they live
/// beside the attach tests (the attach module cannot import this one: this one reads reports,
/// whose types import attach).
#[cfg(test)]
pub(crate) use super::attach::context_tests::rollout_with_leftover_lines;
