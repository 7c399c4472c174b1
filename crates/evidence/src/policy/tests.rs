use super::*;
use crate::plan::PlanInput;
use crate::trigger::Trigger;

fn flags() -> PlanInput {
    crate::plan::tests::input()
}

fn arm(body: &str) -> String {
    format!("version = 1\n[[arm]]\nname = \"a\"\n{body}\n")
}

fn err(text: &str) -> String {
    Policy::parse(text).unwrap_err().to_string()
}

#[test]
fn the_builtin_smoke_policy_is_valid_and_plans() {
    let p = Policy::parse(SMOKE_POLICY).unwrap();
    assert_eq!(p.arms.len(), 1);
    let a = &p.arms[0];
    assert_eq!(a.name, "drain");
    assert_eq!(
        a.thresholds[0].to_string(),
        "tcp drained-clean-close ≥ 100%"
    );
    let plans = p.plan(&flags(), &Explicit::default()).unwrap();
    assert_eq!(plans[0].config.tcp_flows, 10);
    assert_eq!(plans[0].config.udp_flows, 0);
    assert_eq!(plans[0].config.drain_behavior, Some(DrainBehavior::Drain));
    assert_eq!(plans[0].repeat, 1);
}

#[test]
fn unknown_keys_are_named() {
    let e = err(&arm("thresholds = [\"severed <= 0\"]\ngrace-period = 5"));
    assert!(e.contains("grace-period"), "{e}");
    assert!(e.contains("line 5"), "the line is named: {e}");
    let e =
        err("version = 1\nflavour = \"x\"\n[[arm]]\nname = \"a\"\nthresholds = [\"severed <= 0\"]");
    assert!(e.contains("flavour"), "{e}");
    let e = err(&arm(
        "behavior = \"graceful\"\nthresholds = [\"severed <= 0\"]",
    ));
    assert!(e.contains("graceful"), "{e}");
}

#[test]
fn structure_errors_are_named() {
    assert_eq!(
        Policy::parse("version = 1").unwrap_err(),
        PolicyError::NoArms
    );
    assert_eq!(
        Policy::parse("version = 2\n[[arm]]\nname=\"a\"").unwrap_err(),
        PolicyError::Version { found: 2 }
    );
    assert_eq!(
        Policy::parse(&arm("")).unwrap_err(),
        PolicyError::NoThresholds("a".into())
    );
    assert_eq!(
        Policy::parse("version = 1\n[[arm]]\nname = \"Drain Arm\"\nthresholds=[\"severed <= 0\"]")
            .unwrap_err(),
        PolicyError::BadName("Drain Arm".into())
    );
    let twice = "version = 1\n[[arm]]\nname = \"a\"\nthresholds=[\"severed <= 0\"]\n[[arm]]\nname = \"a\"\nthresholds=[\"severed <= 0\"]";
    assert_eq!(
        Policy::parse(twice).unwrap_err(),
        PolicyError::DuplicateArm("a".into())
    );
    assert_eq!(
        Policy::parse(&arm("thresholds = [\"severed <= 0\", \"severed ≤ 0\"]")).unwrap_err(),
        PolicyError::DuplicateThreshold {
            arm: "a".into(),
            threshold: "severed ≤ 0".into()
        }
    );
    let e = err(&arm("thresholds = [\"tcp drained >= 100%\"]"));
    assert!(
        e.starts_with("arm \"a\" threshold \"tcp drained >= 100%\": unknown measure"),
        "{e}"
    );
}

fn k8s_flags() -> PlanInput {
    let mut k8s = flags();
    k8s.platform = crate::plan::Platform::Kubernetes;
    k8s.trigger = Trigger::Delete;
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
    k8s
}

#[test]
fn attach_arms_plan_an_attach_trial() {
    let k8s = k8s_flags();
    let p = Policy::parse(&arm(
        "target = \"deployment/web\"\ntarget-namespace = \"shop\"\nport = \"http\"\ntrigger = \"rollout-restart\"\nflows = 3\ndial-rate = 5\nthresholds = [\"no-request-failed\", \"no-new-connection-refused\"]",
    ))
    .unwrap();
    let plans = p.plan(&k8s, &Explicit::default()).unwrap();
    let c = &plans[0].config;
    assert_eq!(c.trigger, Trigger::RolloutRestart);
    assert_eq!((c.tcp_flows, c.udp_flows), (3, 0));
    assert_eq!(c.drain_behavior, None);
    let a = c.kubernetes.as_ref().unwrap().attach.as_ref().unwrap();
    assert_eq!(a.target.to_string(), "deployment/web");
    assert_eq!(a.target_namespace.as_deref(), Some("shop"));
    assert_eq!(a.dial_rate, 5);
    let numeric = Policy::parse(&arm(
        "target = \"deployment/web\"\nport = 8080\nthresholds = [\"no-request-failed\"]",
    ))
    .unwrap();
    assert!(numeric.plan(&k8s, &Explicit::default()).is_ok());

    // A flag that names another target conflicts; attach keys need a target.
    let mut other = k8s.clone();
    other.attach = Some(crate::plan::attach::AttachInput {
        target: "deployment/api".into(),
        ..Default::default()
    });
    let e = p
        .plan(&other, &Explicit::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("--target deployment/api conflicts"), "{e}");
    let e = err(&arm("dial-rate = 5\nthresholds = [\"no-request-failed\"]"));
    assert!(e.contains("sets dial-rate but no target"), "{e}");
    let e = err(&arm(
        "request-timeout-ms = 5000\nthresholds = [\"no-request-failed\"]",
    ));
    assert!(e.contains("sets request-timeout-ms but no target"), "{e}");

    // The clients' request timeout: the arm's key, else --request-timeout, else 2 s.
    let timeout = |body: &str, flag: Option<u64>| {
        let mut f = k8s.clone();
        f.attach = flag.map(|ms| crate::plan::attach::AttachInput {
            request_timeout_ms: Some(ms),
            ..Default::default()
        });
        let p = Policy::parse(&arm(&format!(
            "target = \"deployment/web\"\n{body}thresholds = [\"no-request-failed\"]"
        )))
        .unwrap();
        let plans = p.plan(&f, &Explicit::default()).unwrap();
        let k = plans[0].config.kubernetes.as_ref().unwrap();
        k.attach.as_ref().unwrap().request_timeout_ms
    };
    assert_eq!(timeout("request-timeout-ms = 5000\n", None), Some(5_000));
    assert_eq!(
        timeout("request-timeout-ms = 5000\n", Some(9_000)),
        Some(5_000)
    );
    assert_eq!(timeout("", Some(9_000)), Some(9_000));
    assert_eq!(timeout("", None), Some(2_000));

    // Attach thresholds need an attach arm, and flows that can measure them.
    let probe = Policy::parse(&arm("thresholds = [\"no-new-connection-refused\"]")).unwrap();
    let e = probe
        .plan(&k8s, &Explicit::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("needs target") || e.contains("the arm needs target"),
        "{e}"
    );
    for t in ["no-new-connection-refused", "no-new-connection-failed"] {
        let no_dials = Policy::parse(&arm(&format!(
            "target = \"deployment/web\"\ndial-rate = 0\nthresholds = [\"{t}\"]"
        )))
        .unwrap();
        let e = no_dials
            .plan(&k8s, &Explicit::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("dial-rate is 0") && e.contains(t), "{e}");
    }
    let tcp = Policy::parse(&arm(
        "target = \"deployment/web\"\nprotocol = \"tcp\"\nthresholds = [\"no-request-failed\"]",
    ))
    .unwrap();
    let e = tcp
        .plan(&k8s, &Explicit::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("no http, http2 or grpc flows"), "{e}");
    // The HTTP/2 thresholds need an arm that speaks HTTP/2; requests are made on grpc arms.
    for t in ["no-stream-reset", "goaway-before-close"] {
        let http = Policy::parse(&arm(&format!(
            "target = \"deployment/web\"\nthresholds = [\"{t}\"]"
        )))
        .unwrap();
        let e = http
            .plan(&k8s, &Explicit::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("a http arm speaks no HTTP/2"), "{e}");
        let h2 = Policy::parse(&arm(&format!(
            "target = \"deployment/web\"\nprotocol = \"http2\"\nthresholds = [\"{t}\", \"no-request-failed\"]"
        )))
        .unwrap();
        assert!(h2.plan(&k8s, &Explicit::default()).is_ok(), "{t}");
    }
    // no-watch-cut needs a held Watch: grpc with grpc-watch (the key, or --grpc-watch).
    let watch = |keys: &str| {
        Policy::parse(&arm(&format!(
            "target = \"deployment/web\"\n{keys}thresholds = [\"no-watch-cut\"]"
        )))
        .unwrap()
    };
    for keys in ["protocol = \"grpc\"\n", "protocol = \"http2\"\n"] {
        let e = watch(keys)
            .plan(&k8s, &Explicit::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no gRPC Watch") && e.contains("grpc-watch"),
            "{e}"
        );
    }
    let cfg = watch("protocol = \"grpc\"\ngrpc-watch = true\n")
        .plan(&k8s, &Explicit::default())
        .unwrap();
    let a = cfg[0]
        .config
        .kubernetes
        .as_ref()
        .unwrap()
        .attach
        .as_ref()
        .unwrap();
    assert!(a.grpc.as_ref().unwrap().watch);
    let mut flag = k8s.clone();
    flag.attach = Some(crate::plan::attach::AttachInput {
        protocol: Some(crate::attach::AttachProtocol::Grpc),
        grpc_watch: true,
        ..Default::default()
    });
    assert!(
        watch("").plan(&flag, &Explicit::default()).is_ok(),
        "--grpc-watch fills the arm"
    );
    // An arm of thresholds only, the target and the Watch from the flags.
    if let Some(a) = flag.attach.as_mut() {
        a.target = "deployment/web".into();
    }
    let only = Policy::parse(&arm("thresholds = [\"no-watch-cut\"]")).unwrap();
    assert!(only.plan(&flag, &Explicit::default()).is_ok());
    // grpc-watch on an arm that is not grpc is the plan's named refusal.
    let e = watch("protocol = \"http2\"\ngrpc-watch = true\n")
        .plan(&k8s, &Explicit::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--grpc-watch") && e.contains("--protocol grpc"),
        "{e}"
    );
}

#[test]
fn impossible_thresholds_are_refused_against_the_resolved_flows() {
    let plan = |body: &str| {
        Policy::parse(&arm(body))
            .unwrap()
            .plan(&flags(), &Explicit::default())
            .unwrap_err()
            .to_string()
    };
    let e = plan("tcp-flows = 0\nthresholds = [\"tcp drained-clean-close >= 100%\"]");
    assert!(
        e.contains("impossible") && e.contains("no tcp flows"),
        "{e}"
    );
    let e = plan("tcp-flows = 3\nthresholds = [\"tcp drained-clean-close >= 4\"]");
    assert!(e.contains("at least 4 of the arm's 3 tcp flows"), "{e}");
    let e = plan("thresholds = [\"tcp rehomed <= 0\"]");
    assert!(e.contains("only udp flows are re-homed"), "{e}");
    let e = plan("udp-flows = 2\nthresholds = [\"udp severed <= 2\"]");
    assert!(e.contains("gates nothing"), "{e}");
    let e = plan("grace-period-seconds = 0\nthresholds = [\"severed <= 0\"]");
    assert!(e.starts_with("arm \"a\": --grace-period"), "{e}");
}

#[test]
fn the_policy_wins_and_a_disagreeing_flag_is_an_error() {
    let p = Policy::parse(&arm(
        "grace-period-seconds = 8\nthresholds = [\"severed <= 0\"]",
    ))
    .unwrap();
    let mut f = flags();
    // A default is not a conflict: the policy's value is used.
    assert_eq!(
        p.plan(&f, &Explicit::default()).unwrap()[0]
            .config
            .grace_period_seconds,
        8
    );
    // An explicit flag that agrees is fine.
    f.grace_period_seconds = 8;
    let explicit = Explicit {
        grace_period: true,
        ..Explicit::default()
    };
    assert!(p.plan(&f, &explicit).is_ok());
    // An explicit flag that disagrees is refused, naming both.
    f.grace_period_seconds = 4;
    let e = p.plan(&f, &explicit).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--grace-period 4 conflicts with arm \"a\" of the policy, which sets grace-period-seconds = 8: the policy wins, so drop the flag or edit the policy"
    );
    // A flag the policy leaves open applies to the arm.
    f.udp_flows = 3;
    let explicit = Explicit {
        udp_flows: true,
        ..Explicit::default()
    };
    assert_eq!(p.plan(&f, &explicit).unwrap()[0].config.udp_flows, 3);
}

#[test]
fn arms_shortcut_selects_in_policy_order() {
    let text = "version = 1\n[[arm]]\nname = \"x\"\nthresholds=[\"severed <= 0\"]\n[[arm]]\nname = \"y\"\nthresholds=[\"severed <= 0\"]";
    let p = Policy::parse(text).unwrap();
    let names = parse_arm_list(" y, ,x ");
    assert_eq!(names, ["y", "x"]);
    let sel = p.clone().select(&names).unwrap();
    assert_eq!(
        sel.arms.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
        ["x", "y"]
    );
    assert_eq!(p.clone().select(&[]).unwrap(), p.clone());
    assert_eq!(
        p.select(&["z".into()]).unwrap_err().to_string(),
        "--arms names \"z\", which the policy does not have (arms: x, y)"
    );
}

#[test]
fn attach_arms_take_tls_keys_and_flags_fill_them() {
    let k8s = k8s_flags();
    let tls_of = |p: &Policy, flags: &PlanInput| {
        p.plan(flags, &Explicit::default())
            .map(|plans| {
                plans[0]
                    .config
                    .kubernetes
                    .as_ref()
                    .and_then(|k| k.attach.as_ref())
                    .and_then(|a| a.tls.clone())
            })
            .map_err(|e| e.to_string())
    };
    let p = Policy::parse(&arm(
        "target = \"deployment/ws-good\"\nprotocol = \"websocket\"\ntls = true\nca-file = \"ca.pem\"\nserver-name = \"ws-good.drainwatch-examples.svc\"\nthresholds = [\"no-new-connection-refused\"]",
    ))
    .unwrap();
    let t = tls_of(&p, &k8s).unwrap().unwrap();
    assert_eq!(t.ca_file.as_deref(), Some("ca.pem"));
    assert_eq!(
        t.server_name.as_deref(),
        Some("ws-good.drainwatch-examples.svc")
    );
    // The CA path is the host's: a policy may leave it to --ca-file.
    let p = Policy::parse(&arm(
        "target = \"deployment/ws-good\"\ntls = true\nthresholds = [\"no-new-connection-refused\"]",
    ))
    .unwrap();
    assert!(
        tls_of(&p, &k8s)
            .unwrap_err()
            .contains("--tls needs --ca-file")
    );
    let mut with_ca = k8s.clone();
    with_ca.attach = Some(crate::plan::attach::AttachInput {
        tls: crate::plan::attach::TlsInput {
            ca_file: Some("/etc/ca.pem".into()),
            ..Default::default()
        },
        ..Default::default()
    });
    let t = tls_of(&p, &with_ca).unwrap().unwrap();
    assert_eq!(t.ca_file.as_deref(), Some("/etc/ca.pem"));
    let p = Policy::parse(&arm(
        "target = \"deployment/ws-good\"\ntls = true\ninsecure-skip-verify = true\nthresholds = [\"no-new-connection-refused\"]",
    ))
    .unwrap();
    assert!(tls_of(&p, &k8s).unwrap().unwrap().insecure_skip_verify);
    assert!(tls_of(&p, &with_ca).unwrap_err().contains("contradict"));
    // TLS keys are attach keys: they need a target, and the CA file needs tls.
    let e = err(&arm("tls = true\nthresholds = [\"no-request-failed\"]"));
    assert!(e.contains("sets tls but no target"), "{e}");
    let p = Policy::parse(&arm(
        "target = \"deployment/web\"\nca-file = \"ca.pem\"\nthresholds = [\"no-request-failed\"]",
    ))
    .unwrap();
    assert!(
        tls_of(&p, &k8s)
            .unwrap_err()
            .contains("--ca-file needs --tls")
    );
}

#[test]
fn no_ws_abnormal_close_needs_a_websocket_attach_arm() {
    let k8s = k8s_flags();
    let ws = Policy::parse(&arm(
        "target = \"deployment/ws-bad\"\nprotocol = \"websocket\"\nthresholds = [\"no-ws-abnormal-close\"]",
    ))
    .unwrap();
    assert!(ws.plan(&k8s, &Explicit::default()).is_ok());
    let http = Policy::parse(&arm(
        "target = \"deployment/web\"\nthresholds = [\"no-ws-abnormal-close\"]",
    ))
    .unwrap();
    let e = http
        .plan(&k8s, &Explicit::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("no websocket flows"), "{e}");
    let probe = Policy::parse(&arm("thresholds = [\"no-ws-abnormal-close\"]")).unwrap();
    let e = probe
        .plan(&k8s, &Explicit::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs target"), "{e}");
}

#[test]
fn an_arm_goes_through_an_ingress_by_its_keys_or_the_flags() {
    let k8s = k8s_flags();
    let through = |keys: &str| {
        Policy::parse(&arm(&format!(
            "target = \"deployment/web\"\n{keys}thresholds = [\"no-request-failed\"]"
        )))
    };
    let cfg =
        through("ingress-service = \"traefik/traefik:web\"\ningress-host = \"web.example\"\n")
            .unwrap()
            .plan(&k8s, &Explicit::default())
            .unwrap();
    let it = cfg[0]
        .config
        .kubernetes
        .as_ref()
        .unwrap()
        .attach
        .as_ref()
        .unwrap();
    let it = it.ingress.as_ref().unwrap();
    assert_eq!(
        (
            it.namespace.as_deref(),
            it.service.as_str(),
            it.host.as_str()
        ),
        (Some("traefik"), "traefik", "web.example")
    );
    // The host from a flag fills the arm's service.
    let mut flag = k8s.clone();
    flag.attach = Some(crate::plan::attach::AttachInput {
        ingress: crate::plan::attach::ingress::IngressInput {
            host: Some("web.example".into()),
            ..Default::default()
        },
        ..Default::default()
    });
    assert!(
        through("ingress-service = \"traefik/traefik\"\n")
            .unwrap()
            .plan(&flag, &Explicit::default())
            .is_ok()
    );
    // Alone, the service is the plan's named refusal; without a target, the key is refused.
    let e = through("ingress-service = \"traefik/traefik\"\n")
        .unwrap()
        .plan(&k8s, &Explicit::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("--ingress-host"), "{e}");
    let e = Policy::parse(&arm(
        "ingress-host = \"web.example\"\nthresholds = [\"no-request-failed\"]",
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("ingress-host"), "{e}");
}

#[test]
fn the_ingress_thresholds_need_an_arm_through_an_ingress() {
    let k8s = k8s_flags();
    for t in [
        "ingress-last-request-lag <= 1s",
        "ingress-propagation-lag <= 2s",
    ] {
        let plan = |keys: &str| {
            Policy::parse(&arm(&format!(
                "target = \"deployment/web\"\n{keys}thresholds = [\"{t}\"]"
            )))
            .unwrap()
            .plan(&k8s, &Explicit::default())
        };
        let e = plan("").unwrap_err().to_string();
        assert!(
            e.contains("impossible") && e.contains("through an ingress"),
            "{t}: {e}"
        );
        assert!(
            plan("ingress-service = \"traefik/traefik\"\ningress-host = \"web.example\"\n").is_ok(),
            "{t}"
        );
    }
}
