//! Real reports recorded on the local platform (tests/fixtures/ci/run-local), for the core's
//! unit tests: a draining probe, one that exits at once, and one that ignores SIGTERM.

use super::report::Report;

/// The report of the named fixture trial: `drain`, `exit-now` or `ignore`.
pub(crate) fn report(name: &str) -> Report {
    let text = match name {
        "drain" => include_str!("../../tests/fixtures/ci/run-local/drain/report.json"),
        "exit-now" => include_str!("../../tests/fixtures/ci/run-local/exit-now/report.json"),
        "ignore" => include_str!("../../tests/fixtures/ci/run-local/ignore/report.json"),
        other => panic!("no fixture {other}"),
    };
    serde_json::from_str(text).expect("fixture report parses")
}
