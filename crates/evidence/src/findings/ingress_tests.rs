//! The findings only a trial through an ingress has, on minimal reports.

use super::tests::{attach, failure, ids, one};
use super::*;
use crate::attach::section::{FailureKind, FailureMechanism, Phase};
use crate::ingress::IngressOutcome;
use crate::ingress::retries::HiddenRetries;
use crate::ingress::summary::IngressReport;

/// A failure the ingress gave `outcome`.
fn through(t: i64, outcome: IngressOutcome) -> crate::attach::section::FailureRecord {
    let mut f = failure(
        t,
        FailureKind::Request,
        FailureMechanism::Status5xx,
        None,
        Phase::TerminatingNotReady,
    );
    f.ingress = Some(outcome);
    f
}

fn ingress(hidden: Option<u64>) -> IngressReport {
    IngressReport {
        logged: 100,
        not_logged: 0,
        unclaimed: 0,
        abandoned: 0,
        duplicates: 0,
        upstreams: Vec::new(),
        routing: None,
        hidden_retries: Some(HiddenRetries {
            replicas: vec![],
            hidden,
        }),
        view: None,
    }
}

#[test]
fn a_503_the_ingress_gave_itself_is_no_available_server_and_asks_for_a_ready_pod() {
    let r = attach(vec![
        through(1_200, IngressOutcome::NoAvailableServer),
        through(900, IngressOutcome::UpstreamError),
        through(2_400, IngressOutcome::NoAvailableServer),
    ]);
    let f = one(&r, FindingId::IngressNoAvailableServer);
    assert_eq!(f.severity, Severity::Failure);
    assert!(
        f.title
            .starts_with("2 requests got 503 from the ingress itself, with no server to send them to, between 1.20 s and 2.40 s"),
        "{}",
        f.title
    );
    assert_eq!(
        f.evidence,
        vec![
            EvidenceRef::AttachFailure { index: 0 },
            EvidenceRef::AttachFailure { index: 2 }
        ]
    );
    let d = f.recommendation.and_then(|r| r.derived).expect("derived");
    assert_eq!((d.value, d.unit), (2, Unit::Pods));
    // The 502 is not this finding's, nor is a 404 the ingress gave.
    assert!(!ids(&r).contains(&FindingId::IngressNoRoute));
}

#[test]
fn a_404_the_ingress_gave_itself_is_no_route() {
    let r = attach(vec![through(1_500, IngressOutcome::NoRoute)]);
    let f = one(&r, FindingId::IngressNoRoute);
    assert!(
        f.title
            .starts_with("1 request got 404 from the ingress itself"),
        "{}",
        f.title
    );
    assert!(
        f.recommendation
            .is_some_and(|r| r.text.contains("allowEmptyServices=true")),
    );
    assert!(!ids(&r).contains(&FindingId::IngressNoAvailableServer));
}

#[test]
fn retries_the_counters_show_are_a_warning_and_none_or_unmeasured_are_not() {
    let mut r = attach(vec![]);
    let cases = [(Some(8), true), (Some(0), false), (None, false)];
    assert_eq!(cases.len(), 3);
    for (hidden, found) in cases {
        if let Some(a) = r.trial.attach.as_mut() {
            a.ingress = Some(ingress(hidden));
        }
        assert_eq!(
            ids(&r).contains(&FindingId::IngressHiddenRetry),
            found,
            "{hidden:?}"
        );
    }
    if let Some(a) = r.trial.attach.as_mut() {
        a.ingress = Some(ingress(Some(8)));
    }
    let f = one(&r, FindingId::IngressHiddenRetry);
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(
        f.title,
        "The ingress retried 8 failed attempts its clients never saw."
    );
    assert!(f.why.contains("a POST"), "{}", f.why);
    // No routing to derive the sleep from: no number, not a made-up one.
    assert!(f.recommendation.is_some_and(|r| r.derived.is_none()));
    // Hidden retries are something wrong: nothing-wrong is not said beside them.
    assert!(!ids(&r).contains(&FindingId::NothingWrong));
}
