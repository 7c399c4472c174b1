use super::*;
use crate::plan::ATTACH_OBSERVE_SECONDS;
use crate::plan::tests::{input as plan_input, k8s_input};

fn input(target: &str) -> AttachInput {
    AttachInput {
        target: target.into(),
        ..AttachInput::default()
    }
}

#[test]
fn defaults_are_http_on_slash_with_200_and_20_dials_a_second() {
    let c = input("deployment/web")
        .validate(10, Trigger::RolloutRestart)
        .unwrap();
    assert_eq!(c.target.to_string(), "deployment/web");
    assert_eq!(c.protocol, AttachProtocol::Http);
    assert_eq!(c.path.as_deref(), Some("/"));
    assert_eq!(c.expect_status, Some(200));
    assert_eq!(c.dial_rate, DEFAULT_DIAL_RATE);
    assert_eq!((c.port, c.service, c.target_namespace), (None, None, None));
    let sts = input("sts/db").validate(1, Trigger::Delete).unwrap();
    assert_eq!(sts.target.to_string(), "statefulset/db");
    assert_eq!(c.request_timeout_ms, Some(DEFAULT_REQUEST_TIMEOUT_MS));
}

#[test]
fn the_request_timeout_is_recorded_as_given_within_its_bounds() {
    let mut i = input("deployment/web");
    i.request_timeout_ms = Some(5_000);
    let c = i.validate(4, Trigger::RolloutRestart).unwrap();
    assert_eq!(c.request_timeout_ms, Some(5_000));
    for bad in [0, MAX_REQUEST_TIMEOUT_MS + 1] {
        i.request_timeout_ms = Some(bad);
        let e = i.validate(4, Trigger::RolloutRestart).unwrap_err();
        assert!(
            matches!(e, PlanError::RequestTimeout { ms, .. } if ms == bad),
            "{e}"
        );
        assert!(e.to_string().contains("--request-timeout"), "{e}");
    }
    // Without --target the flag is named as the one at fault.
    let lone = AttachInput {
        request_timeout_ms: Some(5_000),
        ..AttachInput::default()
    };
    let e = lone.validate(4, Trigger::RolloutRestart).unwrap_err();
    assert!(e.to_string().contains("--request-timeout"), "{e}");
}

#[test]
fn ports_are_numbers_or_names() {
    let mut i = input("deploy/web");
    i.port = Some("8080".into());
    assert_eq!(
        i.validate(1, Trigger::Delete).unwrap().port,
        Some(PortRef::Number(8080))
    );
    i.port = Some("http".into());
    assert_eq!(
        i.validate(1, Trigger::Delete).unwrap().port,
        Some(PortRef::Name("http".into()))
    );
    i.port = Some("0".into());
    assert_eq!(
        i.validate(1, Trigger::Delete).unwrap_err(),
        PlanError::BadPort("0".into())
    );
    i.port = Some("70000".into());
    assert!(matches!(
        i.validate(1, Trigger::Delete),
        Err(PlanError::BadPort(_))
    ));
}

#[test]
fn refusals_name_what_is_wrong() {
    for bad in ["web", "pod/web", "deployment/", "deployment/Web", "job/x"] {
        let e = input(bad).validate(1, Trigger::Delete).unwrap_err();
        assert_eq!(e, PlanError::BadTarget(bad.into()), "{bad}");
        assert!(e.to_string().contains("--target"), "{e}");
    }
    let mut tcp = input("deployment/web");
    tcp.protocol = Some(AttachProtocol::Tcp);
    tcp.path = Some("/x".into());
    assert_eq!(
        tcp.validate(1, Trigger::Delete).unwrap_err(),
        PlanError::HttpOnlyFlag
    );
    tcp.path = None;
    let c = tcp.validate(1, Trigger::Delete).unwrap();
    assert_eq!((c.path, c.expect_status), (None, None));
    // WebSocket: the handshake's path, defaulted; its good answer is 101, not a flag.
    let mut ws = input("deployment/web");
    ws.protocol = Some(AttachProtocol::Websocket);
    let c = ws.validate(1, Trigger::Delete).unwrap();
    assert_eq!((c.path.as_deref(), c.expect_status), (Some("/"), None));
    ws.expect_status = Some(200);
    assert_eq!(
        ws.validate(1, Trigger::Delete).unwrap_err(),
        PlanError::HttpOnlyFlag
    );
    let mut nothing = input("deployment/web");
    nothing.dial_rate = Some(0);
    assert_eq!(
        nothing.validate(0, Trigger::Delete).unwrap_err(),
        PlanError::NoAttachFlows
    );
    assert!(
        nothing.validate(1, Trigger::Delete).is_ok(),
        "flows only is fine"
    );
    assert!(
        input("deployment/web").validate(0, Trigger::Delete).is_ok(),
        "dials only is fine"
    );
    let e = input("deployment/web")
        .validate(1, Trigger::Sigterm)
        .unwrap_err();
    assert!(e.to_string().contains("rollout-restart"), "{e}");
    // A StatefulSet scales down too: its highest ordinal is the pod removed.
    assert!(input("statefulset/db").validate(1, Trigger::Scale).is_ok());
    let mut path = input("deployment/web");
    path.path = Some("healthz".into());
    assert!(matches!(
        path.validate(1, Trigger::Delete),
        Err(PlanError::BadPath(_))
    ));
    let mut st = input("deployment/web");
    st.expect_status = Some(42);
    assert_eq!(
        st.validate(1, Trigger::Delete).unwrap_err(),
        PlanError::BadExpectStatus(42)
    );
    let mut ns = input("deployment/web");
    ns.target_namespace = Some("Team A".into());
    assert!(matches!(
        ns.validate(1, Trigger::Delete),
        Err(PlanError::BadObjectName {
            flag: "--target-namespace",
            ..
        })
    ));
}

#[test]
fn attach_flags_without_a_target_are_named() {
    let i = AttachInput {
        service: Some("web".into()),
        ..AttachInput::default()
    };
    let e = i.validate(1, Trigger::Delete).unwrap_err();
    assert_eq!(e, PlanError::NeedsTarget("--service"));
    assert_eq!(e.to_string(), "--service needs --target");
}

#[test]
fn the_config_round_trips_as_json() {
    let mut i = input("deployment/web");
    i.port = Some("http".into());
    let c = i.validate(2, Trigger::DrainNode).unwrap();
    let j = serde_json::to_value(&c).unwrap();
    assert_eq!(j["target"], "deployment/web");
    assert_eq!(j["port"], "http");
    assert_eq!(j["protocol"], "http");
    let back: AttachTarget = serde_json::from_value(j).unwrap();
    assert_eq!(back, c);
}

#[test]
fn attach_plans_need_no_probe_and_no_udp() {
    let mut i = k8s_input();
    i.drain_behavior = None;
    i.udp_flows = 0;
    i.trigger = Trigger::RolloutRestart;
    i.attach = Some(AttachInput {
        target: "deployment/web".into(),
        ..AttachInput::default()
    });
    let c = i.validate().unwrap();
    assert_eq!(c.workload, "attach deployment/web");
    assert_eq!(c.observe_timeout_seconds, ATTACH_OBSERVE_SECONDS);
    let a = c.kubernetes.unwrap().attach.unwrap();
    assert_eq!(a.target.to_string(), "deployment/web");
    let mut udp = i.clone();
    udp.udp_flows = 3;
    assert_eq!(udp.validate().unwrap_err(), PlanError::UdpWithTarget(3));
    let mut none = i.clone();
    none.tcp_flows = 0;
    if let Some(a) = none.attach.as_mut() {
        a.dial_rate = Some(0);
    }
    assert_eq!(none.validate().unwrap_err(), PlanError::NoAttachFlows);
    let mut probe = k8s_input();
    probe.trigger = Trigger::RolloutRestart;
    assert!(
        probe
            .validate()
            .unwrap_err()
            .to_string()
            .contains("delete, evict or scale"),
        "the probe has no rollout to restart"
    );
    let mut local = plan_input();
    local.attach = i.attach.clone();
    assert_eq!(
        local.validate().unwrap_err(),
        PlanError::TargetOffKubernetes
    );
}

#[test]
fn grpc_watch_is_kept_on_grpc_and_refused_by_name_elsewhere() {
    let mut a = input("deployment/web");
    a.grpc_watch = true;
    a.protocol = Some(AttachProtocol::Grpc);
    let c = a.validate(2, Trigger::RolloutRestart).unwrap();
    assert!(c.grpc.unwrap().watch);
    for p in [
        AttachProtocol::Http,
        AttachProtocol::Http2,
        AttachProtocol::Tcp,
        AttachProtocol::Websocket,
    ] {
        a.protocol = Some(p);
        let e = a.validate(2, Trigger::RolloutRestart).unwrap_err();
        assert!(
            matches!(&e, PlanError::Grpc(m) if m.contains("--grpc-watch") && m.contains("--protocol grpc")),
            "{p}: {e}"
        );
    }
    // Without --target, --grpc-watch is the attach flag at fault.
    let lone = AttachInput {
        grpc_watch: true,
        ..AttachInput::default()
    };
    assert_eq!(
        lone.validate(2, Trigger::Delete).unwrap_err(),
        PlanError::NeedsTarget("--grpc-watch")
    );
}
