use super::super::{Threshold, ThresholdError, parse};
use super::Margin;
use crate::stats::metric::{Metric, UnknownMetric};

#[test]
fn the_four_forms_and_the_predicate_parse() {
    assert_eq!(
        parse("failed-requests <= baseline").unwrap(),
        Threshold::Baseline {
            metric: Metric::FailedRequests,
            margin: Margin::None
        }
    );
    assert_eq!(
        parse("sigterm-to-last-flow-end <= baseline + 10%").unwrap(),
        Threshold::Baseline {
            metric: Metric::SigtermToLastFlowEndMs,
            margin: Margin::PerMille(100)
        }
    );
    assert_eq!(
        parse("longest-failure-window ≤ baseline+200ms").unwrap(),
        Threshold::Baseline {
            metric: Metric::LongestFailureWindowMs,
            margin: Margin::Ms(200)
        }
    );
    assert_eq!(
        parse("FAILED-DIALS <= baseline + 2").unwrap(),
        Threshold::Baseline {
            metric: Metric::FailedDials,
            margin: Margin::Count(2)
        }
    );
    assert_eq!(parse("no-regression").unwrap(), Threshold::NoRegression);
    assert!(parse("no-regression").unwrap().against_baseline());
    assert!(!parse("severed <= 0").unwrap().against_baseline());
}

#[test]
fn display_is_canonical_and_round_trips() {
    for (written, canonical) in [
        ("failed-requests <= baseline", "failed-requests ≤ baseline"),
        ("tcp-severed<=baseline + 0", "tcp-severed ≤ baseline"),
        (
            "sigterm-to-last-flow-end <= baseline + 12.5%",
            "sigterm-to-last-flow-end ≤ baseline + 12.5%",
        ),
        (
            "trigger-to-endpoint-removed <= baseline + 1000ms",
            "trigger-to-endpoint-removed ≤ baseline + 1s",
        ),
        (
            "longest-failure-window <= baseline + 250ms",
            "longest-failure-window ≤ baseline + 250ms",
        ),
        ("udp-lost <= baseline + 3", "udp-lost ≤ baseline + 3"),
        (
            "trigger-to-sigterm <= baseline + 0",
            "trigger-to-sigterm ≤ baseline",
        ),
        ("No-Regression", "no-regression"),
    ] {
        let t = parse(written).unwrap();
        assert_eq!(t.to_string(), canonical);
        assert_eq!(parse(canonical).unwrap(), t, "{canonical} round-trips");
    }
}

#[test]
fn an_interval_name_against_a_duration_stays_an_absolute_threshold() {
    assert!(matches!(
        parse("sigterm-to-last-flow-end <= 25s").unwrap(),
        Threshold::Interval { .. }
    ));
}

#[test]
fn each_refusal_is_named() {
    let e = |s: &str| parse(s).unwrap_err();
    assert_eq!(
        e("failed-request <= baseline"),
        ThresholdError::UnknownMetric(UnknownMetric("failed-request".into()))
    );
    assert!(
        e("severed <= baseline")
            .to_string()
            .contains("expected one of tcp-severed, tcp-read-timeout")
    );
    assert_eq!(
        e("failed-requests <= baseline + 200ms"),
        ThresholdError::MarginUnit {
            metric: "failed-requests",
            margin: "200ms".into()
        }
    );
    assert!(
        e("failed-requests <= baseline + 200ms")
            .to_string()
            .contains("it is a count")
    );
    assert_eq!(
        e("longest-failure-window <= baseline + 2"),
        ThresholdError::MarginUnit {
            metric: "longest-failure-window",
            margin: "2".into()
        }
    );
    assert_eq!(
        e("failed-requests >= baseline"),
        ThresholdError::LowerBoundOnBaseline("failed-requests")
    );
    assert_eq!(
        e("tcp tcp-severed <= baseline"),
        ThresholdError::Misplaced("tcp-severed".into())
    );
    for bad in [
        "- 2", "+", "+ 1.5", "+ 10.25%", "+ -3", "* 2", "+ 2 3", "+ 0x",
    ] {
        let t = format!("failed-dials <= baseline {bad}");
        assert!(
            matches!(e(&t), ThresholdError::BadMargin(_)),
            "{t}: {:?}",
            e(&t)
        );
    }
    assert_eq!(
        e("no-regression <= 1"),
        ThresholdError::Misplaced("no-regression".into())
    );
    assert_eq!(
        e("sigterm-to-last-flow-end <= baseline + 5x"),
        ThresholdError::BadMargin("5x".into())
    );
}

#[test]
fn the_bound_is_the_baseline_median_plus_the_margin() {
    assert_eq!(Margin::None.bound(3.0), 3.0);
    assert_eq!(Margin::PerMille(100).bound(2000.0), 2200.0);
    assert_eq!(Margin::Ms(200).bound(1500.0), 1700.0);
    assert_eq!(Margin::Count(2).bound(0.0), 2.0);
    assert_eq!(Margin::PerMille(500).bound(0.0), 0.0, "a share of nothing");
}
