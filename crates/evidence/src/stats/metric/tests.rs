use super::*;
use crate::test_fixtures::report;

fn attach_report() -> Report {
    serde_json::from_str(include_str!(
        "../../../../../tests/fixtures/attach/report.json"
    ))
    .expect("the attach fixture parses")
}

#[test]
fn names_are_unique_and_kebab_case() {
    let names: std::collections::BTreeSet<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
    assert_eq!(names.len(), Metric::ALL.len());
    for n in names {
        assert!(n.chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{n}");
    }
}

#[test]
fn probe_reports_give_flow_counts_and_intervals_and_no_attach_metric() {
    let drain = report("drain");
    let exit_now = report("exit-now");
    assert_eq!(Metric::TcpSevered.of(&drain), Some(0.0));
    assert_eq!(Metric::TcpSevered.of(&exit_now), Some(3.0));
    assert_eq!(Metric::UdpLost.of(&drain), Some(2.0));
    assert_eq!(Metric::TriggerToSigtermMs.of(&drain), Some(4.0));
    assert_eq!(Metric::SigtermToLastFlowEndMs.of(&drain), Some(1493.0));
    // The local platform has no endpoints: not measured, not 0.
    assert_eq!(Metric::TriggerToEndpointRemovedMs.of(&drain), None);
    for m in [
        Metric::FailedRequests,
        Metric::FailedDials,
        Metric::SeveredConnections,
        Metric::LongestFailureWindowMs,
    ] {
        assert_eq!(m.of(&drain), None, "{}", m.name());
    }
}

#[test]
fn attach_reports_give_requests_dials_connections_and_the_failure_window() {
    let r = attach_report();
    assert_eq!(Metric::FailedRequests.of(&r), Some(3.0));
    assert_eq!(Metric::FailedDials.of(&r), Some(1.0));
    assert_eq!(Metric::SeveredConnections.of(&r), Some(1.0));
    assert_eq!(Metric::LongestFailureWindowMs.of(&r), Some(250.0));
}

#[test]
fn a_window_with_nothing_failed_is_zero_only_where_requests_or_dials_were_measured() {
    let mut r = attach_report();
    let a = r.trial.attach.as_mut().expect("attach section");
    a.longest_failure_window = None;
    assert_eq!(Metric::LongestFailureWindowMs.of(&r), Some(0.0));
    let a = r.trial.attach.as_mut().expect("attach section");
    a.requests = None;
    a.dials = None;
    assert_eq!(Metric::LongestFailureWindowMs.of(&r), None);
    assert_eq!(Metric::FailedRequests.of(&r), None);
}

#[test]
fn only_intervals_are_exempt_from_the_count_rule() {
    let exempt: Vec<&str> = Metric::ALL
        .iter()
        .filter(|m| !m.counts_failures())
        .map(|m| m.name())
        .collect();
    assert_eq!(
        exempt,
        [
            "trigger-to-sigterm",
            "sigterm-to-last-flow-end",
            "trigger-to-endpoint-removed"
        ]
    );
}

#[test]
fn drain_as_baseline_against_exit_now_regresses_on_severed_tcp_flows() {
    use crate::stats::decide::{Change, DecidedBy, Rule, compare};
    let (base, new) = (report("drain"), report("exit-now"));
    let rule = |m: Metric| Rule {
        alpha: 0.05,
        min_effect: 1.0,
        counts_failures: m.counts_failures(),
    };
    let m = Metric::TcpSevered;
    let c = compare(&[m.of(&base)], &[m.of(&new)], &rule(m));
    assert_eq!(
        (c.change, c.decided_by),
        (Change::Regressed, DecidedBy::EveryTrialAgainstNone)
    );
    // One trial a side: an interval cannot be decided, and says so.
    let m = Metric::SigtermToLastFlowEndMs;
    let c = compare(&[m.of(&base)], &[m.of(&new)], &rule(m));
    assert_eq!(c.decided_by, DecidedBy::TooFewTrials);
    // Not measured on either side.
    let m = Metric::TriggerToEndpointRemovedMs;
    let c = compare(&[m.of(&base)], &[m.of(&new)], &rule(m));
    assert_eq!(c.change, Change::NotMeasured);
}

#[test]
fn the_window_and_the_intervals_are_in_milliseconds_the_rest_are_counts() {
    let ms: Vec<&str> = Metric::ALL
        .iter()
        .filter(|m| m.unit() == Unit::Milliseconds)
        .map(|m| m.name())
        .collect();
    assert_eq!(
        ms,
        [
            "longest-failure-window",
            "trigger-to-sigterm",
            "sigterm-to-last-flow-end",
            "trigger-to-endpoint-removed"
        ]
    );
}

#[test]
fn every_name_parses_back_and_an_unknown_one_lists_the_known() {
    for m in Metric::ALL {
        assert_eq!(Metric::parse(m.name()), Ok(m));
    }
    let e = Metric::parse("failed-request").unwrap_err();
    assert_eq!(e, UnknownMetric("failed-request".into()));
    let msg = e.to_string();
    assert!(msg.contains("\"failed-request\""), "{msg}");
    for m in Metric::ALL {
        assert!(msg.contains(m.name()), "{msg} lacks {}", m.name());
    }
}

#[test]
fn a_metric_name_pads_to_a_table_column() {
    assert_eq!(
        format!("{:<20}|", Metric::FailedRequests),
        "failed-requests     |"
    );
}
