//! `quorum`, `retries` and distribution thresholds through the policy as a user writes them:
//! parsed, merged with the flags, and refused by name.

use super::*;
use crate::plan::PlanInput;
use crate::stats::metric::Metric;
use threshold::Distribution;

fn flags() -> PlanInput {
    crate::plan::tests::input()
}

fn arm(body: &str) -> String {
    format!("version = 1\n[[arm]]\nname = \"a\"\n{body}\n")
}

fn plan(body: &str, flags: &PlanInput, explicit: &Explicit) -> Result<ArmPlan, PolicyError> {
    let p = Policy::parse(&arm(body))?;
    p.plan(flags, explicit).map(|mut v| v.remove(0))
}

#[test]
fn quorum_and_retries_reach_the_plan() {
    let p = plan(
        "repeat = 5\nquorum = \"4/5\"\nretries = 1\nthresholds = [\"severed <= 0\", \"p50 sigterm-to-last-flow-end <= 26s\"]",
        &flags(),
        &Explicit::default(),
    )
    .unwrap();
    assert_eq!(
        (p.repeat, p.quorum, p.retries),
        (5, Quorum::Of { k: 4, n: 5 }, 1)
    );
    assert_eq!(
        p.per_trial
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["severed ≤ 0"],
        "the distribution is arm-level, so it never decides a retry"
    );
    let d = plan(
        "thresholds = [\"severed <= 0\"]",
        &flags(),
        &Explicit::default(),
    )
    .unwrap();
    assert_eq!(
        (d.quorum, d.retries),
        (Quorum::All, 0),
        "the defaults are today's"
    );
    let all = plan(
        "quorum = \"all\"\nthresholds = [\"severed <= 0\"]",
        &flags(),
        &Explicit::default(),
    )
    .unwrap();
    assert_eq!(all.quorum, Quorum::All);
}

#[test]
fn the_quorum_must_name_the_arms_resolved_repeat() {
    let e = plan(
        "repeat = 3\nquorum = \"4/5\"\nthresholds = [\"severed <= 0\"]",
        &flags(),
        &Explicit::default(),
    )
    .unwrap_err();
    assert_eq!(
        e,
        PolicyError::QuorumRepeat {
            arm: "a".into(),
            quorum: "4/5".into(),
            repeat: 3
        }
    );
    assert!(
        e.to_string()
            .contains("does not match the arm's repeat = 3"),
        "{e}"
    );
    // --repeat resolves it when the arm leaves repeat open.
    let mut f = flags();
    f.repeat = 5;
    let explicit = Explicit {
        repeat: true,
        ..Explicit::default()
    };
    let p = plan(
        "quorum = \"4/5\"\nthresholds = [\"severed <= 0\"]",
        &f,
        &explicit,
    )
    .unwrap();
    assert_eq!(p.repeat, 5);
    let e = plan(
        "quorum = \"4/5\"\nthresholds = [\"severed <= 0\"]",
        &flags(),
        &Explicit::default(),
    )
    .unwrap_err();
    assert!(
        matches!(e, PolicyError::QuorumRepeat { repeat: 1, .. }),
        "{e}"
    );
}

#[test]
fn bad_quorums_and_retries_are_named_errors() {
    let e = Policy::parse(&arm("quorum = \"most\"\nthresholds = [\"severed <= 0\"]"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("arm \"a\" quorum \"most\": expected \"all\" or \"k/n\""),
        "{e}"
    );
    let e = Policy::parse(&arm("quorum = \"0/3\"\nthresholds = [\"severed <= 0\"]"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("k must be 1 to n"), "{e}");
    let e = Policy::parse(&arm("retries = 6\nthresholds = [\"severed <= 0\"]")).unwrap_err();
    assert_eq!(
        e,
        PolicyError::Retries {
            arm: "a".into(),
            retries: 6
        }
    );
    let e = Policy::parse(&arm("retries = -1\nthresholds = [\"severed <= 0\"]"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("retries"), "{e}");
}

#[test]
fn distribution_thresholds_parse_in_the_arms_list() {
    let p = Policy::parse(&arm(
        "thresholds = [\"p50 sigterm-to-last-flow-end <= 26s\", \"p90 tcp-severed <= 0\"]",
    ))
    .unwrap();
    assert_eq!(
        p.arms[0].thresholds[0],
        Threshold::Distribution(Distribution {
            percentile: 50,
            metric: Metric::SigtermToLastFlowEndMs,
            max: 26_000
        })
    );
    let e = Policy::parse(&arm("thresholds = [\"p50 sigterm-to-last-flow <= 26s\"]"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown metric \"sigterm-to-last-flow\"") && e.contains("failed-requests"),
        "{e}"
    );
    let e = Policy::parse(&arm("thresholds = [\"p50 failed-requests <= 2s\"]"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("failed-requests takes a count"), "{e}");
}

#[test]
fn distributions_the_arm_cannot_measure_are_impossible() {
    // A probe arm has no requests; an attach arm does not observe SIGTERM.
    let e = plan(
        "thresholds = [\"p90 failed-requests <= 2\"]",
        &flags(),
        &Explicit::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("impossible") && e.contains("the arm needs target"),
        "{e}"
    );
    let e = plan(
        "udp-flows = 0\nthresholds = [\"p50 udp-lost <= 0\"]",
        &flags(),
        &Explicit::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("no udp flows"), "{e}");
    let mut k8s = flags();
    k8s.platform = crate::plan::Platform::Kubernetes;
    k8s.trigger = crate::trigger::Trigger::Delete;
    k8s.kubernetes = Some(crate::plan::KubernetesConfig {
        image: "img".into(),
        replicas: 1,
        client: crate::plan::ClientPlacement::Pod,
        prestop_sleep_seconds: 0,
        readiness_period_seconds: 1,
        pdb: false,
        probe_env: vec![],
        attach: None,
        shard_placement: None,
    });
    let e = plan(
        "target = \"deployment/web\"\nthresholds = [\"p50 sigterm-to-last-flow-end <= 26s\"]",
        &k8s,
        &Explicit::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("timed from SIGTERM"), "{e}");
    assert!(
        plan(
            "target = \"deployment/web\"\nthresholds = [\"p90 failed-requests <= 2\"]",
            &k8s,
            &Explicit::default(),
        )
        .is_ok()
    );
}
