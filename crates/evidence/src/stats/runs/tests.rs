use super::*;
use crate::stats::decide::{Change, DecidedBy};
use crate::test_fixtures::report;

fn run(arms: &[(&str, &[&str])]) -> BTreeMap<String, Vec<Report>> {
    arms.iter()
        .map(|(a, trials)| (a.to_string(), trials.iter().map(|t| report(t)).collect()))
        .collect()
}

fn metric<'a>(c: &'a ArmComparison, name: &str) -> &'a Comparison {
    let ArmResult::Compared { metrics, .. } = &c.result else {
        panic!("{} was not compared: {:?}", c.arm, c.result);
    };
    &metrics
        .iter()
        .find(|m| m.metric.name() == name)
        .expect("every metric is listed")
        .comparison
}

#[test]
fn a_run_against_itself_never_regresses() {
    let r = run(&[("drain", &["drain"]), ("exit-now", &["exit-now"])]);
    let out = compare_runs(&r, &r, &Thresholds::default());
    assert_eq!(out.len(), 2);
    assert_eq!(compared(&out), 2);
    assert!(!regressed(&out));
    for a in &out {
        let ArmResult::Compared { metrics, trials } = &a.result else {
            panic!("{a:?}");
        };
        assert_eq!(*trials, (1, 1));
        assert_eq!(metrics.len(), Metric::ALL.len());
        assert!(
            metrics
                .iter()
                .all(|m| m.comparison.change != Change::Regressed),
            "{a:?}"
        );
    }
}

#[test]
fn drain_as_baseline_against_exit_now_is_a_named_regression() {
    let base = run(&[("arm", &["drain"])]);
    let new = run(&[("arm", &["exit-now"])]);
    let out = compare_runs(&base, &new, &Thresholds::default());
    assert_eq!(out.len(), 1);
    assert!(regressed(&out));
    let c = metric(&out[0], "tcp-severed");
    assert_eq!(
        (c.change, c.decided_by),
        (Change::Regressed, DecidedBy::EveryTrialAgainstNone)
    );
    assert_eq!(
        metric(&out[0], "trigger-to-endpoint-removed").change,
        Change::NotMeasured
    );
}

#[test]
fn arms_on_one_side_only_and_different_shapes_are_reported() {
    let base = run(&[("a", &["drain"]), ("gone", &["drain"])]);
    let mut new = run(&[("a", &["drain"]), ("added", &["drain"])]);
    new.get_mut("a").expect("arm a")[0].trial.config.tcp_flows = 7;
    let out = compare_runs(&base, &new, &Thresholds::default());
    let names: Vec<&str> = out.iter().map(|a| a.arm.as_str()).collect();
    assert_eq!(compared(&out), 0, "nothing to compare: {out:?}");
    assert_eq!(names, ["a", "added", "gone"]);
    let ArmResult::Incomparable { reason } = &out[0].result else {
        panic!("{:?}", out[0]);
    };
    assert!(
        reason.contains("3 TCP") && reason.contains("7 TCP"),
        "{reason}"
    );
    assert!(matches!(out[1].result, ArmResult::OnlyInNew));
    assert!(matches!(out[2].result, ArmResult::OnlyInBase));
}

#[test]
fn attach_arms_whose_clients_waited_differently_are_not_compared() {
    let attach = |timeout_ms: u64| {
        let mut r = run(&[("a", &["drain"])]);
        let mut c = crate::attach::tests::config(crate::attach::AttachProtocol::Http, 20);
        c.request_timeout_ms = timeout_ms;
        r.get_mut("a").expect("arm a")[0].trial.config.attach = Some(c);
        r
    };
    let same = compare_runs(&attach(2_000), &attach(2_000), &Thresholds::default());
    assert_eq!(compared(&same), 1, "{same:?}");
    let out = compare_runs(&attach(2_000), &attach(5_000), &Thresholds::default());
    assert_eq!(compared(&out), 0, "{out:?}");
    let ArmResult::Incomparable { reason } = &out[0].result else {
        panic!("{:?}", out[0]);
    };
    assert!(
        reason.contains("2000 ms request timeout") && reason.contains("5000 ms request timeout"),
        "{reason}"
    );
}
