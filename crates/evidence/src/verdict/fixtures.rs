//! Trials and verdicts built from the committed reports, for the verdict's own tests and the
//! gate's (the drainwatch crate's, through the test-fixtures feature).

// Built only for tests: a fixture policy that does not parse is a broken test setup.
#![allow(clippy::expect_used)]

use super::{TrialEvidence, Verdict, evaluate};
use crate::policy::Policy;
use crate::report::Report;
use crate::test_fixtures::report as fixture;

/// A trial's evidence as the gate collects it: `report` under the trial id `id`.
pub fn evidence(id: &str, r: Option<Report>) -> TrialEvidence {
    TrialEvidence {
        id: id.into(),
        report_path: format!("a/{id}/report.json"),
        report: r,
    }
}

fn retry_policy(body: &str) -> Policy {
    Policy::parse(&format!("version = 1\n[[arm]]\nname = \"a\"\n{body}\n"))
        .expect("the retry policy parses")
}

/// trial-001 exits at once (misses drained-clean-close), its retry drains; trial-002 drains.
pub fn flaky_trials() -> Vec<TrialEvidence> {
    vec![
        evidence("trial-001", Some(fixture("exit-now"))),
        evidence("trial-001-retry-1", Some(fixture("drain"))),
        evidence("trial-002", Some(fixture("drain"))),
    ]
}

/// The verdict of a two-trial policy with one retry over `trials`.
pub fn flaky_verdict(trials: &[TrialEvidence]) -> Verdict {
    let p = retry_policy(
        "repeat = 2\nretries = 1\nthresholds = [\"tcp drained-clean-close >= 100%\", \"sigterm-to-last-flow-end <= 3s\"]",
    );
    evaluate(&p, "p.toml", |_| trials)
}
