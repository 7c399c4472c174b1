//! Findings on probe trials' flows, on minimal reports: present when the evidence is there,
//! absent otherwise.

use super::tests::{flow, ids, one, probe};
use super::*;
use crate::classify::{Mechanism, Outcome};
use crate::flow::Proto;
use crate::report::{FlowReport, RehomeReport};
use crate::test_fixtures;

#[test]
fn sigkill_at_grace_names_grace_period_and_drain_window() {
    let r = test_fixtures::report("ignore");
    let f = one(&r, FindingId::SigkillAtGrace);
    let (g, d) = (
        r.trial.config.grace_period_seconds,
        r.trial.config.drain_max_seconds,
    );
    assert!(f.title.contains("3 of 3 TCP connections"), "{}", f.title);
    assert!(
        f.why.contains(&format!("grace period is {g} s")),
        "{}",
        f.why
    );
    assert!(f.why.contains(&format!("drain window {d} s")), "{}", f.why);
    let flows = f
        .evidence
        .iter()
        .filter(|e| matches!(e, EvidenceRef::Flow { .. }))
        .count();
    assert_eq!(flows, 3);
}

#[test]
fn sigkill_at_grace_needs_exit_137_and_open_flows() {
    assert!(!ids(&test_fixtures::report("drain")).contains(&FindingId::SigkillAtGrace));
    let mut r = probe(vec![flow(
        "tcp-0001",
        Proto::Tcp,
        Outcome::DrainedCleanClose,
        Mechanism::FinAfterAnnouncement,
        900,
    )]);
    r.trial.summary.container_exit_code = Some(137);
    assert!(
        !ids(&r).contains(&FindingId::SigkillAtGrace),
        "{:?}",
        ids(&r)
    );
}

#[test]
fn rst_instead_of_close_on_probe_flows() {
    let r = test_fixtures::report("exit-now");
    let f = one(&r, FindingId::RstInsteadOfClose);
    assert!(
        f.title
            .starts_with("3 of 3 established TCP connections were reset"),
        "{}",
        f.title
    );
    let flows: Vec<_> = f
        .evidence
        .iter()
        .filter(|e| matches!(e, EvidenceRef::Flow { .. }))
        .collect();
    assert_eq!(flows.len(), 3);
    assert!(!ids(&test_fixtures::report("drain")).contains(&FindingId::RstInsteadOfClose));
    assert!(!ids(&test_fixtures::report("ignore")).contains(&FindingId::RstInsteadOfClose));
}

fn rehomed(id: &str, last: i64, first_new: i64) -> FlowReport {
    let mut f = flow(
        id,
        Proto::Udp,
        Outcome::Severed,
        Mechanism::Rehomed,
        first_new,
    );
    f.rehomed = Some(RehomeReport {
        from_instance: "old".into(),
        to_instance: "new".into(),
        last_original_reply_t_ms: Some(last),
        first_new_reply_t_ms: first_new,
    });
    f
}

#[test]
fn udp_rehomed_while_the_old_pod_still_served() {
    // The drain fixture's container exits at 1009 ms; the TCP flow drains at 1007 ms.
    let tcp = flow(
        "tcp-0001",
        Proto::Tcp,
        Outcome::DrainedCleanClose,
        Mechanism::FinAfterAnnouncement,
        1007,
    );
    let r = probe(vec![
        tcp.clone(),
        rehomed("udp-0001", 300, 800),
        rehomed("udp-0002", 500, 700),
    ]);
    let f = one(&r, FindingId::UdpRehomed);
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.title.starts_with("2 of 2 UDP flows"), "{}", f.title);
    let d = f.recommendation.and_then(|r| r.derived).expect("a gap");
    assert_eq!((d.value, d.unit), (500, Unit::Milliseconds));
    // After the old pod stopped serving, a re-homing is failover: no finding.
    let r = probe(vec![tcp, rehomed("udp-0001", 300, 1500)]);
    assert!(!ids(&r).contains(&FindingId::UdpRehomed), "{:?}", ids(&r));
}

#[test]
fn readiness_not_failed_needs_a_watched_endpoint() {
    // The local fixtures watch no endpoint: absence of ready:false proves nothing there.
    assert!(!ids(&test_fixtures::report("drain")).contains(&FindingId::ReadinessNotFailed));
    let mut r = test_fixtures::report("drain");
    r.trial.summary.trigger_to_endpoint_removed_ms = Some(1100);
    let f = one(&r, FindingId::ReadinessNotFailed);
    assert!(
        f.title.contains("ready:false at not-measured"),
        "{}",
        f.title
    );
    // ready:false before the exit: the endpoint left rotation in time.
    r.trial.summary.sigterm_to_ready_false_ms = Some(20);
    assert!(!ids(&r).contains(&FindingId::ReadinessNotFailed));
}
