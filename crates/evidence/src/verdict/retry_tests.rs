//! Quorums, distributions and retries on constructed trials (real recorded reports under
//! chosen ids): a flaky pass cannot be made deterministic on real trials, so its verdict and its
//! rendering are proven here.

pub(crate) use super::fixtures::{flaky_trials, flaky_verdict};
use super::tests::{evidence, fixture};
use super::*;
use crate::policy::Policy;

fn policy(body: &str) -> Policy {
    Policy::parse(&format!("version = 1\n[[arm]]\nname = \"a\"\n{body}\n")).unwrap()
}

#[test]
fn a_threshold_held_only_after_a_retry_passes_as_flaky() {
    let trials = flaky_trials();
    let v = flaky_verdict(&trials);
    assert_eq!(v.verdict, Decision::Pass, "{:?}", v.missed());
    assert_eq!(v.schema_version, "2.0");
    assert_eq!(v.flaky, Some(true));
    let a = &v.arms[0];
    assert_eq!(a.flaky, Some(true));
    assert_eq!(
        a.rule,
        Some(TrialRule {
            quorum: "all".into(),
            need: 2,
            retries: 1
        })
    );
    assert_eq!(a.trials.len(), 3, "every attempt is listed");
    let t = &a.trials[1];
    assert_eq!(
        (t.attempt, t.retry_of.as_deref(), t.counted),
        (Some(2), Some("trial-001"), Some(true))
    );
    assert_eq!(
        (a.trials[0].attempt, a.trials[0].counted),
        (Some(1), Some(false))
    );
    let drained = &a.thresholds[0];
    assert_eq!(drained.checks.len(), 3, "one check per attempt");
    assert_eq!(
        (drained.held, drained.of, drained.flaky),
        (Some(2), Some(2), Some(true))
    );
    // Held in the first attempt as well: not flaky.
    assert_eq!(a.thresholds[1].flaky, Some(false));
    assert!(v.missed().is_empty(), "a flaky pass missed nothing");
    let lines = v.flaky_lines();
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0]
            .starts_with("a: tcp drained-clean-close ≥ 100%: flaky, retried: trial-001: 0 of 3"),
        "{}",
        lines[0]
    );
    // The file round-trips, as `ci summary` reads it back.
    let json = serde_json::to_string(&v).unwrap();
    assert_eq!(serde_json::from_str::<Verdict>(&json).unwrap(), v);
}

#[test]
fn a_retry_that_misses_again_fails_and_lists_both_attempts() {
    let trials = vec![
        evidence("trial-001", Some(fixture("exit-now"))),
        evidence("trial-001-retry-1", Some(fixture("exit-now"))),
    ];
    let p = policy("retries = 1\nthresholds = [\"tcp drained-clean-close >= 100%\"]");
    let v = evaluate(&p, "p.toml", |_| &trials);
    assert_eq!(v.verdict, Decision::Fail);
    assert_eq!(v.flaky, Some(false));
    let t = &v.arms[0].thresholds[0];
    assert_eq!((t.held, t.of, t.flaky), (Some(0), Some(1), Some(false)));
    assert_eq!(v.missed().len(), 2, "{:?}", v.missed());
}

#[test]
fn a_quorum_counts_the_trials_that_held() {
    let trials = vec![
        evidence("trial-001", Some(fixture("drain"))),
        evidence("trial-002", Some(fixture("exit-now"))),
        evidence("trial-003", Some(fixture("drain"))),
    ];
    let body = |q: &str| {
        format!("repeat = 3\nquorum = \"{q}\"\nthresholds = [\"tcp drained-clean-close >= 100%\"]")
    };
    let v = evaluate(&policy(&body("2/3")), "p.toml", |_| &trials);
    assert_eq!(v.verdict, Decision::Pass);
    let t = &v.arms[0].thresholds[0];
    assert_eq!((t.held, t.of, t.flaky), (Some(2), Some(3), Some(false)));
    assert_eq!(v.arms[0].rule.as_ref().unwrap().need, 2);
    let v = evaluate(&policy(&body("3/3")), "p.toml", |_| &trials);
    assert_eq!(v.verdict, Decision::Fail);
    let v = evaluate(&policy(&body("all")), "p.toml", |_| &trials);
    assert_eq!(v.verdict, Decision::Fail);
}

#[test]
fn a_distribution_is_one_check_on_the_nearest_rank_percentile() {
    // sigterm-to-last-flow-end: drain 1493 ms, exit-now 505 ms, ignore 4440 ms.
    let trials = vec![
        evidence("trial-001", Some(fixture("drain"))),
        evidence("trial-002", Some(fixture("exit-now"))),
        evidence("trial-003", Some(fixture("ignore"))),
    ];
    let run = |t: &str| {
        let v = evaluate(
            &policy(&format!("repeat = 3\nthresholds = [\"{t}\"]")),
            "p.toml",
            |_| &trials,
        );
        v.arms[0].thresholds[0].clone()
    };
    let p50 = run("p50 sigterm-to-last-flow-end <= 1500ms");
    assert_eq!(p50.verdict, ThresholdDecision::Pass);
    assert_eq!(p50.level, Some(Level::Arm));
    assert_eq!(p50.checks.len(), 1);
    assert_eq!(p50.checks[0].value, Some(1493));
    assert_eq!(
        p50.checks[0].message,
        "arm: p50 sigterm-to-last-flow-end of 3 trials = 1493 ms (trial-001 1493 ms, trial-002 505 ms, trial-003 4440 ms)"
    );
    let p100 = run("p100 sigterm-to-last-flow-end <= 4s");
    assert_eq!(p100.verdict, ThresholdDecision::Fail);
    assert_eq!(p100.checks[0].value, Some(4440));
    assert!(
        p100.checks[0]
            .message
            .ends_with("; the threshold is ≤ 4000 ms")
    );
    // Only counted attempts enter the distribution.
    let retried = vec![
        evidence("trial-001", Some(fixture("ignore"))),
        evidence("trial-001-retry-1", Some(fixture("drain"))),
    ];
    let v = evaluate(
        &policy("retries = 1\nthresholds = [\"p100 sigterm-to-last-flow-end <= 1500ms\"]"),
        "p.toml",
        |_| &retried,
    );
    assert_eq!(v.verdict, Decision::Pass, "{:?}", v.missed());
}

#[test]
fn a_trial_without_the_metric_makes_the_distribution_not_measured() {
    // The probe's reports have no attach section, so failed-requests is absent, never 0.
    let mut no_sigterm = fixture("drain");
    no_sigterm.trial.summary.sigterm_to_last_flow_terminal_ms = None;
    let trials = [
        evidence("trial-001", Some(fixture("drain"))),
        evidence("trial-002", Some(no_sigterm)),
        evidence("trial-003", None),
    ];
    let v = evaluate(
        &policy("repeat = 3\nthresholds = [\"p50 sigterm-to-last-flow-end <= 26s\"]"),
        "p.toml",
        |_| &trials[..2],
    );
    let c = &v.arms[0].thresholds[0].checks[0];
    assert_eq!(v.verdict, Decision::Fail);
    assert_eq!(c.state, CheckState::NotMeasured);
    assert!(
        c.message
            .contains("trial-002 did not measure sigterm-to-last-flow-end (absence is not 0)"),
        "{}",
        c.message
    );
    let v = evaluate(
        &policy("repeat = 3\nthresholds = [\"p50 sigterm-to-last-flow-end <= 26s\"]"),
        "p.toml",
        |_| &trials[2..],
    );
    // trial-001 and trial-002 of the three left no directory: the first absent one is named.
    assert!(
        v.arms[0].thresholds[0].checks[0]
            .message
            .contains("trial-001 left no report"),
        "{}",
        v.arms[0].thresholds[0].checks[0].message
    );
}

#[test]
fn an_old_verdict_without_the_new_fields_still_reads() {
    let v: Verdict = serde_json::from_str(include_str!(
        "../../../../results/2026-11-30-attach/bad-rollout-policy/out/verdict.json"
    ))
    .unwrap();
    assert_eq!(v.schema_version, "1.0");
    assert!(v.flaky.is_none() && v.arms[0].rule.is_none());
    assert!(v.arms[0].trials.iter().all(TrialRef::is_counted));
    assert!(!v.arms[0].thresholds.iter().any(ThresholdVerdict::is_flaky));
}

#[test]
fn quorum_all_counts_a_planned_trial_that_left_no_directory() {
    // repeat = 3, but only trial-001 and trial-002 are there (a run cut short, a directory
    // lost between jobs): "all" is the three planned, not the two found.
    let trials = [
        evidence("trial-001", Some(fixture("drain"))),
        evidence("trial-002", Some(fixture("drain"))),
    ];
    let v = evaluate(
        &policy("repeat = 3\nthresholds = [\"tcp severed <= 0\"]"),
        "p.toml",
        |_| &trials[..],
    );
    assert_eq!(v.verdict, Decision::Fail);
    let t = &v.arms[0].thresholds[0];
    assert_eq!((t.held, t.of), (Some(2), Some(3)));
    assert_eq!(t.checks.len(), 3);
    assert_eq!(t.checks[2].trial_id, "trial-003");
    assert_eq!(t.checks[2].state, CheckState::NotMeasured);
    assert_eq!(v.arms[0].trials.len(), 3);
    assert_eq!(v.arms[0].trials[2].report, None);
    // A gap in the numbering says the same without a planned repeat.
    let gap = [
        evidence("trial-001", Some(fixture("drain"))),
        evidence("trial-003", Some(fixture("drain"))),
    ];
    let v = evaluate(
        &policy("thresholds = [\"tcp severed <= 0\"]"),
        "p.toml",
        |_| &gap[..],
    );
    assert_eq!(v.verdict, Decision::Fail);
    assert_eq!(v.arms[0].thresholds[0].checks[1].trial_id, "trial-002");
    // `--repeat 3` on a policy that leaves repeat open: planned as the run was.
    let v = evaluate(
        &policy("thresholds = [\"tcp severed <= 0\"]").as_planned(|_| Some(3)),
        "p.toml",
        |_| &trials[..],
    );
    assert_eq!(v.verdict, Decision::Fail);
    assert_eq!(v.arms[0].thresholds[0].checks.len(), 3);
    assert_eq!(v.arms[0].thresholds[0].checks[2].trial_id, "trial-003");
    // Every planned trial there: as before.
    let all = [
        evidence("trial-001", Some(fixture("drain"))),
        evidence("trial-002", Some(fixture("drain"))),
        evidence("trial-003", Some(fixture("drain"))),
    ];
    let v = evaluate(
        &policy("repeat = 3\nthresholds = [\"tcp severed <= 0\"]"),
        "p.toml",
        |_| &all[..],
    );
    assert_eq!(v.verdict, Decision::Pass, "{:?}", v.missed());
}

#[test]
fn a_failure_count_over_nothing_sent_is_not_measured() {
    use crate::attach::section::{DialCounts, RequestCounts};
    let mut r = fixture("drain");
    let cfg = crate::attach::tests::config(crate::attach::AttachProtocol::Http, 20);
    let mut a = crate::attach::attach_section(&[], &crate::shard::Losses::unsharded(&[]), &cfg, 0);
    a.requests = Some(RequestCounts {
        total: 0,
        ok: 0,
        failed: 0,
        failed_by_mechanism: Default::default(),
        latency_p50_ms: None,
        latency_p99_ms: None,
        latency_max_ms: None,
    });
    a.dials = Some(DialCounts {
        total: 0,
        served: 0,
        failed: 0,
        failed_by_result: Default::default(),
        served_by_instance: Default::default(),
    });
    r.trial.attach = Some(a);
    let trials = [evidence("trial-001", Some(r))];
    for t in [
        "p100 failed-requests <= 0",
        "p100 failed-dials <= 0",
        "p100 longest-failure-window <= 0ms",
    ] {
        let v = evaluate(
            &policy(&format!("thresholds = [\"{t}\"]")),
            "p.toml",
            |_| &trials[..],
        );
        let c = &v.arms[0].thresholds[0].checks[0];
        assert_eq!(c.state, CheckState::NotMeasured, "{t}: {}", c.message);
        assert_eq!(v.verdict, Decision::Fail, "{t}");
    }
}
