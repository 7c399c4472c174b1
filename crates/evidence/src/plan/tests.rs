pub(crate) use super::fixtures::input;
use super::*;

pub(super) fn k8s_input() -> PlanInput {
    PlanInput {
        platform: Platform::Kubernetes,
        trigger: Trigger::Delete,
        kubernetes: Some(KubernetesConfig {
            image: "img".into(),
            replicas: 1,
            client: ClientPlacement::Pod,
            prestop_sleep_seconds: 0,
            readiness_period_seconds: 1,
            pdb: false,
            probe_env: vec![],
            attach: None,
            shard_placement: None,
        }),
        ..input()
    }
}

#[test]
fn the_local_platform_accepts_only_sigterm() {
    let mut i = input();
    for t in Trigger::ALL {
        i.trigger = t;
        let r = i.validate();
        assert_eq!(r.is_ok(), t == Trigger::Sigterm, "{t}: {r:?}");
    }
    i.trigger = Trigger::Delete;
    let msg = i.validate().unwrap_err().to_string();
    assert_eq!(
        msg,
        "trigger delete is not accepted on --platform local: expected sigterm"
    );
}

#[test]
fn kubernetes_triggers_and_prestop_are_validated() {
    assert!(k8s_input().validate().is_ok());
    let mut i = k8s_input();
    i.trigger = Trigger::Sigterm;
    assert!(matches!(
        i.validate(),
        Err(PlanError::TriggerNotAccepted { .. })
    ));
    let mut i = k8s_input();
    if let Some(k) = i.kubernetes.as_mut() {
        k.prestop_sleep_seconds = 5;
    }
    // The default drain window shrinks by the preStop sleep: 30 - 5 - 5.
    assert_eq!(i.validate().unwrap().drain_max_seconds, 20);
    i.drain_max_seconds = 25;
    assert!(matches!(
        i.validate(),
        Err(PlanError::PrestopDrainNotBeforeGrace { .. })
    ));
    let mut i = k8s_input();
    if let Some(k) = i.kubernetes.as_mut() {
        k.replicas = 0;
    }
    assert_eq!(i.validate().unwrap_err(), PlanError::ZeroReplicas);
}

#[test]
fn defaults_follow_the_grace_period() {
    let c = input().validate().unwrap();
    assert_eq!(c.drain_max_seconds, 25);
    assert_eq!(c.observe_timeout_seconds, 60);
    assert_eq!(c.flow_timeout_seconds, 10.0);
    let mut short = input();
    short.grace_period_seconds = 3;
    assert_eq!(short.validate().unwrap().drain_max_seconds, 1);
}

#[test]
fn refusals_name_the_flag() {
    let mut i = input();
    i.tcp_port = 0;
    assert!(i.validate().unwrap_err().to_string().contains("--tcp-port"));
    let mut i = input();
    i.tcp_flows = 0;
    i.udp_flows = 0;
    assert_eq!(i.validate().unwrap_err(), PlanError::NoFlows);
    let mut i = input();
    i.drain_max_seconds = 30;
    assert!(matches!(
        i.validate(),
        Err(PlanError::DrainNotBeforeGrace { .. })
    ));
    let mut i = input();
    i.flow_timeout_ms = 500;
    assert!(
        i.validate()
            .unwrap_err()
            .to_string()
            .contains("--flow-timeout")
    );
    assert!(
        "graceful"
            .parse::<DrainBehavior>()
            .unwrap_err()
            .to_string()
            .contains("\"graceful\"")
    );
}

#[test]
fn drain_window_may_equal_grace_when_not_draining() {
    let mut i = input();
    i.drain_behavior = Some(DrainBehavior::Ignore);
    i.drain_max_seconds = 30;
    assert!(i.validate().is_ok());
}
