//! The decisions of `drainwatch compare` on the committed real cluster runs
//! (results/2026-12-01-compare-cluster/, README.md there has the commands): five rollout-restart
//! trials of the good example service against five of the bad one, good against a second good,
//! and the probe's drain against exit-now. Pure: the run directories are read with
//! [`load_run`] and compared with [`compare_runs`] in process, and each committed
//! `compare.json` must be what this build computes from them.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

use std::collections::BTreeMap;
use std::path::PathBuf;

use drainwatch::evidence::report::Report;
use drainwatch::evidence::stats::decide::{Change, Comparison, DecidedBy};
use drainwatch::evidence::stats::runs::{
    ArmComparison, ArmResult, Thresholds, compare_runs, compared, regressed,
};
use drainwatch::gate::runs::{SINGLE_ARM, load_run};
use serde_json::Value;

/// Trials in every committed run.
const TRIALS: usize = 5;

fn results() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results/2026-12-01-compare-cluster")
}

/// A committed run: one arm (a `--repeat` run without a policy) of [`TRIALS`] reports.
fn run(name: &str) -> BTreeMap<String, Vec<Report>> {
    let r = load_run(&results().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        r.keys().collect::<Vec<_>>(),
        [SINGLE_ARM],
        "{name}: one arm"
    );
    assert_eq!(r[SINGLE_ARM].len(), TRIALS, "{name}: every trial's report");
    r
}

/// The one arm of `base` against `new`, compared, with default thresholds.
fn compare(base: &str, new: &str) -> Vec<ArmComparison> {
    let arms = compare_runs(&run(base), &run(new), &Thresholds::default());
    assert_eq!(arms.len(), 1, "{arms:?}");
    assert_eq!(
        compared(&arms),
        1,
        "{base} and {new} are comparable: {arms:?}"
    );
    let ArmResult::Compared { trials, .. } = &arms[0].result else {
        unreachable!("compared() counted it");
    };
    assert_eq!(*trials, (TRIALS, TRIALS));
    arms
}

/// `(metric, change, decided_by)` of every metric whose change is `change`, in metric order.
fn with_change(arms: &[ArmComparison], change: Change) -> Vec<(&'static str, DecidedBy)> {
    let ArmResult::Compared { metrics, .. } = &arms[0].result else {
        panic!("{arms:?}");
    };
    metrics
        .iter()
        .filter(|m| m.comparison.change == change)
        .map(|m| (m.metric.name(), m.comparison.decided_by))
        .collect()
}

fn metric<'a>(arms: &'a [ArmComparison], name: &str) -> &'a Comparison {
    let ArmResult::Compared { metrics, .. } = &arms[0].result else {
        panic!("{arms:?}");
    };
    &metrics
        .iter()
        .find(|m| m.metric.name() == name)
        .unwrap_or_else(|| panic!("{name} listed"))
        .comparison
}

#[test]
fn good_against_bad_regresses_on_failed_requests_and_dials_by_every_trial_against_none() {
    let arms = compare("good-a", "bad");
    assert!(regressed(&arms));
    assert_eq!(
        with_change(&arms, Change::Regressed),
        [
            ("failed-requests", DecidedBy::EveryTrialAgainstNone),
            ("failed-dials", DecidedBy::EveryTrialAgainstNone),
            ("longest-failure-window", DecidedBy::EveryTrialAgainstNone),
        ]
    );
    // The bad service exits at once, so its endpoints go sooner: shorter is "improved" to a
    // higher-is-worse metric, and the exact test at 5 against 5 reaches its floor 2/252.
    let removed = metric(&arms, "trigger-to-endpoint-removed");
    assert_eq!(removed.change, Change::Improved);
    assert_eq!(removed.decided_by, DecidedBy::RankSum);
    assert_eq!(removed.p, Some(2.0 / 252.0));
    let failed = metric(&arms, "failed-requests");
    let (b, n) = (failed.base.unwrap(), failed.new.unwrap());
    assert_eq!((b.n, b.max), (TRIALS, 0.0), "no baseline trial failed one");
    assert_eq!(n.n, TRIALS);
    assert!(n.min > 0.0, "every new trial failed some: {n:?}");
}

#[test]
fn the_same_runs_swapped_improve_where_they_regressed() {
    let forward = compare("good-a", "bad");
    let back = compare("bad", "good-a");
    assert_eq!(
        with_change(&back, Change::Improved)
            .into_iter()
            .filter(|(_, by)| *by == DecidedBy::EveryTrialAgainstNone)
            .collect::<Vec<_>>(),
        with_change(&forward, Change::Regressed)
    );
    assert_eq!(
        with_change(&back, Change::Regressed),
        with_change(&forward, Change::Improved)
    );
}

#[test]
fn good_against_good_regresses_nothing() {
    let arms = compare("good-a", "good-b");
    assert!(!regressed(&arms));
    assert_eq!(with_change(&arms, Change::Regressed), []);
    for m in ["failed-requests", "failed-dials", "severed-connections"] {
        let c = metric(&arms, m);
        assert_eq!(
            (c.base.unwrap().max, c.new.unwrap().max),
            (0.0, 0.0),
            "{m}: the good service fails nothing"
        );
    }
}

#[test]
fn probe_drain_against_exit_now_regresses_on_severed_tcp_flows() {
    let arms = compare("probe-drain", "probe-exit-now");
    assert!(regressed(&arms));
    assert_eq!(
        with_change(&arms, Change::Regressed),
        [("tcp-severed", DecidedBy::EveryTrialAgainstNone)]
    );
    let severed = metric(&arms, "tcp-severed");
    assert_eq!(severed.base.unwrap().max, 0.0);
    assert!(severed.new.unwrap().min > 0.0, "{severed:?}");
    // Not measured on a probe arm: never a 0.
    let failed = metric(&arms, "failed-requests");
    assert_eq!(failed.change, Change::NotMeasured);
    assert!(failed.base.is_none() && failed.new.is_none());
}

/// Each committed compare.json fits the schema and holds the arms this build computes from the committed runs, the
/// default thresholds, the decision, and the two directories as `run.sh compare` named them.
#[test]
fn every_committed_compare_json_is_what_this_build_computes() {
    let pairs = [
        ("good-vs-bad", "good-a", "bad", true),
        ("good-vs-good", "good-a", "good-b", false),
        ("drain-vs-exit-now", "probe-drain", "probe-exit-now", true),
    ];
    assert_eq!(pairs.len(), 3);
    let schema_text =
        std::fs::read_to_string(results().join("../../schema/compare.schema.json")).unwrap();
    let schema = jsonschema::validator_for(&serde_json::from_str(&schema_text).unwrap())
        .expect("the schema compiles");
    for (dir, base, new, decision) in pairs {
        let path = results().join(dir).join("compare.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{dir}: {e}"));
        let committed: Value = serde_json::from_str(&text).unwrap();
        let errors: Vec<String> = schema
            .iter_errors(&committed)
            .map(|e| e.to_string())
            .collect();
        assert!(
            errors.is_empty(),
            "{dir}: compare.json fits schema/compare.schema.json: {errors:?}"
        );
        let arms = compare(base, new);
        assert_eq!(
            committed["arms"],
            serde_json::to_value(&arms).unwrap(),
            "{dir}: the committed arms"
        );
        assert_eq!(
            committed["thresholds"],
            serde_json::to_value(Thresholds::default()).unwrap()
        );
        assert_eq!(committed["regressed"], decision, "{dir}");
        assert_eq!(regressed(&arms), decision, "{dir}");
        let at = |s: &str| format!("results/2026-12-01-compare-cluster/{s}");
        assert_eq!(committed["base"], at(base), "{dir}");
        assert_eq!(committed["new"], at(new), "{dir}");
    }
}
