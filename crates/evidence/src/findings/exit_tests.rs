//! `sigterm-not-handled` on minimal attach reports, and the preStop hook `endpoint-lag`
//! recommends on each side of the Sleep action's version boundary.

use super::tests::{attach, failure, ids, one};
use super::*;
use crate::attach::section::{FailureKind, FailureMechanism, Phase};
use crate::settings::{SettingsSource, TerminationSettings};

/// The fixture's pod `p` (deleted at 1 s) exiting `code` at `exited` ms, nothing failed.
fn exiting(code: i32, exited: i64) -> Report {
    let mut r = attach(Vec::new());
    if let Some(a) = r.trial.attach.as_mut() {
        assert_eq!(a.pods.len(), 1);
        a.pods[0].exit_code = Some(code);
        a.pods[0].exited_t_ms = Some(exited);
    }
    r
}

fn grace(r: &mut Report, seconds: u32) {
    r.trial.termination_settings = Some(TerminationSettings {
        source: SettingsSource::Workload,
        workload: "deployment/web".into(),
        termination_grace_period_seconds: Some(seconds),
        containers: None,
        rollout: None,
        pdbs: None,
        unread: vec![],
    });
}

#[test]
fn exit_143_after_the_deletion_request_is_no_sigterm_handler() {
    let r = exiting(143, 1300);
    let f = one(&r, FindingId::SigtermNotHandled);
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.title
            .contains("1 of 1 terminated pods exited with code 143 (pod p: exit 143 0.30 s after"),
        "{}",
        f.title
    );
    assert!(f.why.contains("128 + 15"), "{}", f.why);
    let rec = f.recommendation.as_ref().map(|r| r.text.as_str());
    assert!(
        rec.is_some_and(|t| t.starts_with("Handle SIGTERM")),
        "{rec:?}"
    );
    assert!(f.evidence.contains(&EvidenceRef::Pod { pod: "p".into() }));
}

#[test]
fn exit_2_before_the_grace_period_names_go_as_pid_1_and_at_the_boundary_does_not() {
    let mut r = exiting(2, 1300);
    let f = one(&r, FindingId::SigtermNotHandled);
    assert!(f.title.contains("exited with code 2"), "{}", f.title);
    assert!(f.why.contains("Go program running as PID 1"), "{}", f.why);
    assert!(
        f.why.contains("may also exit 2 for its own reasons"),
        "{}",
        f.why
    );
    // At the end of a recorded 30 s grace period an exit 2 says nothing about SIGTERM.
    grace(&mut r, 30);
    assert!(ids(&r).contains(&FindingId::SigtermNotHandled));
    if let Some(a) = r.trial.attach.as_mut() {
        a.pods[0].exited_t_ms = Some(1000 + 29_500);
    }
    assert!(!ids(&r).contains(&FindingId::SigtermNotHandled));
}

#[test]
fn a_clean_exit_a_sigkill_or_an_exit_without_a_deletion_request_is_no_such_finding() {
    for code in [0, 1, 137] {
        let r = exiting(code, 1300);
        assert!(!ids(&r).contains(&FindingId::SigtermNotHandled), "{code}");
    }
    let mut r = exiting(143, 1300);
    if let Some(a) = r.trial.attach.as_mut() {
        a.pods[0].deletion_requested_t_ms = None;
    }
    assert!(!ids(&r).contains(&FindingId::SigtermNotHandled));
    // An exit before the deletion request is not the termination's.
    let r = exiting(143, 900);
    assert!(!ids(&r).contains(&FindingId::SigtermNotHandled));
}

#[test]
fn sigterm_not_handled_replaces_nothing_wrong_only_with_its_own_warning() {
    let r = exiting(143, 1300);
    assert_eq!(ids(&r), vec![FindingId::SigtermNotHandled]);
}

fn lag_with_version(version: Option<&str>) -> Finding {
    let mut r = attach(vec![failure(
        2400,
        FailureKind::Dial,
        FailureMechanism::Refused,
        Some("p"),
        Phase::AfterExit,
    )]);
    r.environment.kubernetes_version = version.map(String::from);
    one(&r, FindingId::EndpointLag)
}

#[test]
fn endpoint_lag_writes_the_prestop_hook_the_recorded_cluster_accepts() {
    let text = |f: &Finding| {
        f.recommendation
            .as_ref()
            .map(|r| r.text.clone())
            .unwrap_or_default()
    };
    // The lag is 1.4 s: 2 s rounded up, plus the 1 s margin.
    let new = text(&lag_with_version(Some("v1.34.4")));
    assert!(
        new.contains("`lifecycle.preStop.sleep.seconds: 3`"),
        "{new}"
    );
    assert!(!new.contains("exec.command"), "{new}");
    let boundary = text(&lag_with_version(Some("v1.30.0")));
    assert!(boundary.contains("sleep.seconds: 3"), "{boundary}");
    let old = text(&lag_with_version(Some("v1.29.15")));
    assert!(
        old.contains(r#"`lifecycle.preStop.exec.command: ["sleep", "3"]`"#),
        "{old}"
    );
    assert!(!old.contains("sleep.seconds"), "{old}");
    let unknown = text(&lag_with_version(None));
    assert!(
        unknown.contains("sleep.seconds: 3") && unknown.contains(r#"["sleep", "3"]"#),
        "{unknown}"
    );
}

#[test]
fn endpoint_lag_names_the_worst_client_node_when_several_were_seen() {
    use crate::attach::data_plane::{NodeView, PodRouting};
    let mut r = attach(vec![failure(
        2400,
        FailureKind::Dial,
        FailureMechanism::Refused,
        Some("p"),
        Phase::AfterExit,
    )]);
    let view = |node: &str, lag: i64| NodeView {
        node: Some(node.into()),
        dials_served: 10,
        pods: vec![PodRouting {
            pod: "p".into(),
            last_served_t_ms: Some(1000 + lag),
            lag_after_not_ready_ms: Some(lag),
            lag_after_removed_ms: None,
            last_routed_t_ms: None,
            lag_at_least_ms: None,
            lag_at_most_ms: None,
            routed_after_not_ready: None,
        }],
        max_lag_after_not_ready_ms: Some(lag),
        max_lag_after_removed_ms: None,
        lag_at_least_ms: None,
        lag_at_most_ms: None,
    };
    let why = |r: &Report| one(r, FindingId::EndpointLag).why;
    assert!(!why(&r).contains("Per client node"), "no view: {}", why(&r));
    let a = r.trial.attach.as_mut().unwrap();
    a.data_plane = Some(vec![view("node1", 860)]);
    assert!(
        !why(&r).contains("Per client node"),
        "one node: nothing to compare"
    );
    let a = r.trial.attach.as_mut().unwrap();
    a.data_plane = Some(vec![view("node1", 860), view("node2", 9927)]);
    let w = why(&r);
    assert!(
        w.contains(" Per client node, the worst was node2: it sent this pod new connections until 9.92 s after its endpoint turned not ready (node1 0.86 s)"),
        "{w}"
    );
    assert!(
        one(&r, FindingId::EndpointLag)
            .evidence
            .iter()
            .any(|e| matches!(e, EvidenceRef::Field { path } if path == "trial.attach.data_plane"))
    );
}
