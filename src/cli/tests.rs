use super::*;
use crate::evidence::plan::Platform;

#[test]
fn durations() {
    assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
    assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
    assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
    assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
    assert!(parse_duration("soon").is_err());
    assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
    assert!(parse_duration("5d").is_err());
}

#[test]
fn unknown_behaviour_is_a_usage_error() {
    let e = Cli::try_parse_from(["drainwatch", "run", "--drain-behavior", "graceful"]).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("graceful"));
}

#[test]
fn run_protocol_is_a_closed_set() {
    let e = Cli::try_parse_from([
        "drainwatch",
        "run",
        "--target",
        "deployment/web",
        "--protocol",
        "udp",
    ])
    .unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("udp"), "{e}");
    let cli = Cli::try_parse_explicit([
        "drainwatch",
        "run",
        "--target",
        "deployment/web",
        "--protocol",
        "tcp",
    ])
    .unwrap();
    let Command::Run(r) = cli.command else {
        panic!("not run")
    };
    let a = r
        .plan_input()
        .validate()
        .unwrap()
        .kubernetes
        .unwrap()
        .attach
        .unwrap();
    assert_eq!(a.protocol, AttachProtocol::Tcp);
}

#[test]
fn explicit_flags_are_told_apart_from_defaults() {
    let cli = Cli::try_parse_explicit([
        "drainwatch",
        "run",
        "--policy",
        "p.toml",
        "--grace-period",
        "30",
        "--udp-flows",
        "2",
    ])
    .unwrap();
    let Command::Run(r) = cli.command else {
        panic!("not run")
    };
    assert_eq!(
        r.explicit,
        Explicit {
            grace_period: true,
            udp_flows: true,
            ..Explicit::default()
        },
        "30 is the default value, but it was typed, so it can conflict"
    );
    assert_eq!(r.policy.as_deref(), Some("p.toml"));
    let e = Cli::try_parse_explicit(["drainwatch", "run", "--arms", "a"]).unwrap_err();
    assert!(e.to_string().contains("--policy"), "{e}");
}

#[test]
fn run_defaults_become_a_valid_plan() {
    let cli = Cli::try_parse_from(["drainwatch", "run"]).unwrap();
    let Command::Run(r) = cli.command else {
        panic!("not run")
    };
    let c = r.plan_input().validate().unwrap();
    assert_eq!(c.platform, Platform::Kubernetes);
    assert_eq!(c.trigger, Trigger::Delete);
    assert_eq!(c.drain_max_seconds, 25);
    assert_eq!(c.tcp_flows, 10);
    let k = c.kubernetes.unwrap();
    assert_eq!(k.image, DEFAULT_IMAGE);
    assert_eq!((k.replicas, k.client), (1, ClientPlacement::Pod));
    let cli = Cli::try_parse_from(["drainwatch", "run", "--platform", "local"]).unwrap();
    let Command::Run(r) = cli.command else {
        panic!("not run")
    };
    let c = r.plan_input().validate().unwrap();
    assert_eq!(c.trigger, Trigger::Sigterm);
    assert!(c.kubernetes.is_none() && c.namespace.is_none());
}

#[test]
fn kubernetes_flags_reach_the_plan() {
    let cli = Cli::try_parse_from([
        "drainwatch",
        "run",
        "--trigger",
        "evict",
        "--pdb",
        "--client",
        "host",
        "--replicas",
        "2",
        "--prestop-sleep",
        "3",
        "--readiness-period",
        "2",
        "--namespace",
        "team-a",
        "--image",
        "reg/x:1",
    ])
    .unwrap();
    let Command::Run(r) = cli.command else {
        panic!("not run")
    };
    let c = r.plan_input().validate().unwrap();
    let k = c.kubernetes.unwrap();
    assert_eq!(c.namespace.as_deref(), Some("team-a"));
    assert!(k.pdb && k.client == ClientPlacement::Host);
    assert_eq!(
        (
            k.replicas,
            k.prestop_sleep_seconds,
            k.readiness_period_seconds
        ),
        (2, 3, 2)
    );
    assert_eq!(c.drain_max_seconds, 22);
    // A trigger that does not exist is refused by the parser, naming the ones that do.
    let unknown = Cli::try_parse_from(["drainwatch", "run", "--trigger", "drain"])
        .unwrap_err()
        .to_string();
    assert!(
        unknown.contains("invalid value 'drain'") && unknown.contains("drain-node"),
        "{unknown}"
    );
    // One that exists but not on this platform is refused by the plan.
    let bad = Cli::try_parse_from(["drainwatch", "run", "--trigger", "sigterm"]).unwrap();
    let Command::Run(r) = bad.command else {
        panic!("not run")
    };
    assert!(
        r.plan_input()
            .validate()
            .unwrap_err()
            .to_string()
            .contains("delete, evict or scale")
    );
    assert_eq!(
        Cli::try_parse_from(["drainwatch", "run", "--client", "sidecar"])
            .unwrap_err()
            .exit_code(),
        2
    );
}

#[test]
fn target_flags_make_an_attach_plan() {
    let cli = Cli::try_parse_explicit([
        "drainwatch",
        "run",
        "--target",
        "deployment/web",
        "--target-namespace",
        "shop",
        "--port",
        "http",
        "--trigger",
        "drain-node",
        "--dial-rate",
        "5",
        "--request-timeout",
        "5s",
    ])
    .unwrap();
    let Command::Run(r) = cli.command else {
        panic!("not run")
    };
    let c = r.plan_input().validate().unwrap();
    assert_eq!(c.drain_behavior, None, "not the probe");
    assert_eq!((c.tcp_flows, c.udp_flows), (10, 0));
    let a = c.kubernetes.unwrap().attach.unwrap();
    assert_eq!(a.target.to_string(), "deployment/web");
    assert_eq!(a.target_namespace.as_deref(), Some("shop"));
    assert_eq!(a.dial_rate, 5);
    assert_eq!(a.request_timeout_ms, Some(5_000));
    let cli = Cli::try_parse_explicit([
        "drainwatch",
        "run",
        "--target",
        "deployment/web",
        "--udp-flows",
        "2",
    ])
    .unwrap();
    let Command::Run(r) = cli.command else {
        panic!("not run")
    };
    assert!(
        r.plan_input()
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--udp-flows 2")
    );
    let cli = Cli::try_parse_explicit(["drainwatch", "run", "--service", "web"]).unwrap();
    let Command::Run(r) = cli.command else {
        panic!("not run")
    };
    assert_eq!(
        r.plan_input().validate().unwrap_err().to_string(),
        "--service needs --target"
    );
}

/// The argument line the Kubernetes platform gives the attach client pod (asserted byte for
/// byte in platform::kubernetes::attach::tests): the client accepts every flag of it.
#[test]
fn the_attach_client_accepts_the_client_pod_arguments() {
    let line = "client --attach --protocol http --host 10.96.0.7 --port 80 --tcp-flows 10 --interval 500ms --dial-rate 20 --request-timeout 2000ms --keepalive-idle 5000ms --keepalive-interval 1000ms --keepalive-count 3 --user-timeout 10000ms --path / --expect-status 200 --duration 86400s";
    let argv: Vec<String> = std::iter::once("drainwatch")
        .chain(line.split(' '))
        .map(String::from)
        .collect();
    let parsed = Cli::try_parse_explicit(argv);
    assert!(parsed.is_ok(), "{:?}", parsed.err());
}

#[test]
fn every_subcommand_passes_clap_s_own_checks() {
    // Duplicate argument ids (two flattened structs with a field of one name) only panic when
    // that subcommand is parsed; this finds them for all of them at once.
    use clap::CommandFactory;
    Cli::command().debug_assert();
}

fn run_plan(extra: &[&str]) -> Result<crate::evidence::plan::TrialConfig, String> {
    let argv = ["drainwatch", "run", "--target", "deployment/ws-good"]
        .iter()
        .chain(extra)
        .map(|s| s.to_string());
    let cli = Cli::try_parse_explicit(argv).map_err(|e| e.to_string())?;
    let Command::Run(r) = cli.command else {
        panic!("not run")
    };
    r.plan_input().validate().map_err(|e| e.to_string())
}

#[test]
fn run_target_tls_flags_make_the_attach_tls() {
    let cfg = run_plan(&[
        "--protocol",
        "websocket",
        "--tls",
        "--ca-file",
        "/var/lib/drainwatch-cluster/examples-ca.crt",
        "--server-name",
        "ws-good.drainwatch-examples.svc",
    ])
    .unwrap();
    let a = cfg.kubernetes.unwrap().attach.unwrap();
    let t = a.tls.unwrap();
    assert_eq!(
        t.ca_file.as_deref(),
        Some("/var/lib/drainwatch-cluster/examples-ca.crt")
    );
    assert_eq!(
        t.server_name.as_deref(),
        Some("ws-good.drainwatch-examples.svc")
    );
    assert!(!t.insecure_skip_verify);
    let t = run_plan(&["--tls", "--insecure-skip-verify"])
        .unwrap()
        .kubernetes
        .unwrap()
        .attach
        .unwrap()
        .tls
        .unwrap();
    assert!(t.insecure_skip_verify);
    assert_eq!((t.ca_file, t.server_name), (None, None));
    assert_eq!(
        run_plan(&[])
            .unwrap()
            .kubernetes
            .unwrap()
            .attach
            .unwrap()
            .tls,
        None
    );
}

#[test]
fn run_target_tls_refusals_name_the_flag() {
    let e = run_plan(&["--ca-file", "ca.pem"]).unwrap_err();
    assert_eq!(e, "--ca-file needs --tls");
    let e = run_plan(&["--insecure-skip-verify"]).unwrap_err();
    assert_eq!(e, "--insecure-skip-verify needs --tls");
    let e = run_plan(&["--tls"]).unwrap_err();
    assert!(
        e.contains("--ca-file") && e.contains("--insecure-skip-verify"),
        "{e}"
    );
    let e = run_plan(&["--tls", "--ca-file", "ca.pem", "--insecure-skip-verify"]).unwrap_err();
    assert!(e.contains("contradict"), "{e}");
    // Without --target, a TLS flag is an attach flag at fault.
    let cli = Cli::try_parse_explicit(["drainwatch", "run", "--tls"]).unwrap();
    let Command::Run(r) = cli.command else {
        panic!("not run")
    };
    assert_eq!(
        r.plan_input().validate().unwrap_err().to_string(),
        "--tls needs --target"
    );
}

#[test]
fn run_target_grpc_watch_reaches_the_plan_and_needs_grpc() {
    let cfg = run_plan(&["--protocol", "grpc", "--grpc-watch"]).unwrap();
    let g = cfg.kubernetes.unwrap().attach.unwrap().grpc.unwrap();
    assert!(g.watch);
    let e = run_plan(&["--protocol", "http2", "--grpc-watch"]).unwrap_err();
    assert!(
        e.contains("--grpc-watch") && e.contains("--protocol grpc"),
        "{e}"
    );
    // Without --protocol the arm is http: refused by name too.
    let e = run_plan(&["--grpc-watch"]).unwrap_err();
    assert!(e.contains("--grpc-watch"), "{e}");
    // The client pod's flags parse, the Watch with them.
    let argv = "drainwatch client --attach --protocol grpc --host 10.96.0.7 --port 80 --grpc-watch --duration 86400s";
    let cli = Cli::try_parse_explicit(argv.split(' ').map(String::from)).unwrap();
    let Command::Client(c) = cli.command else {
        panic!("not client")
    };
    assert!(c.attach_config().unwrap().grpc.unwrap().watch);
}
