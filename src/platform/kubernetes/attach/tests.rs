use super::*;
use crate::evidence::plan::attach::AttachInput;
use crate::evidence::plan::client::{AttachClient, ClientInvocation};

/// The one client's command line for `d`.
fn client_args(d: &AttachConfig) -> Vec<String> {
    ClientInvocation::Attach(Box::new(AttachClient {
        config: d.clone(),
        shard: None,
    }))
    .argv()
}

#[test]
fn the_client_pod_runs_the_attach_client_against_the_cluster_ip() {
    let cfg = crate::evidence::plan::fixtures::input().validate().unwrap();
    let e = Endpoint {
        service: "web".into(),
        cluster_ip: "10.96.0.7".into(),
        port: 80,
        port_name: Some("http".into()),
    };
    let http = AttachInput {
        target: "deployment/web".into(),
        ..AttachInput::default()
    }
    .validate(10, Trigger::Delete)
    .unwrap();
    let d = dial_config(&cfg, &http, &e, "shop");
    assert_eq!((d.host.as_str(), d.port), ("10.96.0.7", 80));
    assert_eq!(d.target.as_deref(), Some("deployment/web"));
    assert_eq!(
        client_args(&d).join(" "),
        "client --attach --protocol http --host 10.96.0.7 --port 80 --tcp-flows 10 --interval 500ms --dial-rate 20 --request-timeout 2000ms --keepalive-idle 5000ms --keepalive-interval 1000ms --keepalive-count 3 --user-timeout 10000ms --path / --expect-status 200 --duration 86400s"
    );
    let tcp = AttachInput {
        target: "deployment/web".into(),
        protocol: Some(crate::evidence::attach::AttachProtocol::Tcp),
        dial_rate: Some(0),
        ..AttachInput::default()
    }
    .validate(10, Trigger::Delete)
    .unwrap();
    let args = client_args(&dial_config(&cfg, &tcp, &e, "shop")).join(" ");
    assert!(
        args.contains("--protocol tcp") && args.contains("--dial-rate 0"),
        "{args}"
    );
    assert!(!args.contains("--path"), "{args}");
    // The clients wait as long as the plan says (--request-timeout).
    let patient = AttachInput {
        target: "deployment/web".into(),
        request_timeout_ms: Some(5_000),
        ..AttachInput::default()
    }
    .validate(10, Trigger::Delete)
    .unwrap();
    let d = dial_config(&cfg, &patient, &e, "shop");
    assert_eq!(d.request_timeout_ms, 5_000);
    assert!(
        client_args(&d)
            .join(" ")
            .contains("--request-timeout 5000ms"),
        "{:?}",
        client_args(&d)
    );
    let ws = AttachInput {
        target: "deployment/web".into(),
        protocol: Some(crate::evidence::attach::AttachProtocol::Websocket),
        path: Some("/ws".into()),
        ..AttachInput::default()
    }
    .validate(10, Trigger::Delete)
    .unwrap();
    let args = client_args(&dial_config(&cfg, &ws, &e, "shop")).join(" ");
    assert!(
        args.contains("--protocol websocket") && args.contains("--path /ws"),
        "{args}"
    );
    // A WebSocket handshake's good answer is 101, not a flag.
    assert!(!args.contains("--expect-status"), "{args}");
    assert!(!args.contains("--tls"), "{args}");
    assert_eq!(dial_config(&cfg, &ws, &e, "shop").tls, None);

    // TLS: the CA given on the host is read in the pod from the ConfigMap's mount, and the
    // name verified defaults to the Service's, since the ClusterIP is what is dialled.
    let tls = |ca: Option<&str>, name: Option<&str>, insecure: bool| {
        AttachInput {
            target: "deployment/web".into(),
            protocol: Some(crate::evidence::attach::AttachProtocol::Websocket),
            tls: crate::evidence::plan::attach::TlsInput {
                tls: true,
                ca_file: ca.map(str::to_string),
                server_name: name.map(str::to_string),
                insecure_skip_verify: insecure,
            },
            ..AttachInput::default()
        }
        .validate(10, Trigger::Delete)
        .unwrap()
    };
    let d = dial_config(&cfg, &tls(Some("/home/me/ca.pem"), None, false), &e, "shop");
    let t = d.tls.clone().unwrap();
    assert_eq!(t.server_name, "web.shop.svc");
    assert_eq!(t.ca_file.as_deref(), Some("/etc/drainwatch/ca/ca.crt"));
    assert!(!t.insecure_skip_verify);
    let args = client_args(&d).join(" ");
    assert!(
        args.contains("--tls --server-name web.shop.svc --ca-file /etc/drainwatch/ca/ca.crt"),
        "{args}"
    );
    assert!(!args.contains("insecure"), "{args}");
    let d = dial_config(&cfg, &tls(None, Some("ws.example"), true), &e, "shop");
    let args = client_args(&d).join(" ");
    assert!(
        args.contains("--tls --server-name ws.example --insecure-skip-verify"),
        "{args}"
    );
    assert!(!args.contains("--ca-file"), "{args}");
    // gRPC: the Watch asked for on the host reaches the client pod as its flag.
    let grpc = |watch: bool| {
        let a = AttachInput {
            target: "deployment/web".into(),
            protocol: Some(crate::evidence::attach::AttachProtocol::Grpc),
            grpc_watch: watch,
            ..AttachInput::default()
        }
        .validate(10, Trigger::Delete)
        .unwrap();
        client_args(&dial_config(&cfg, &a, &e, "shop")).join(" ")
    };
    let args = grpc(true);
    assert!(
        args.contains("--protocol grpc") && args.contains("--grpc-watch"),
        "{args}"
    );
    assert!(!grpc(false).contains("--grpc-watch"));
    // That the client accepts exactly these flags is cli::tests'
    // `the_attach_client_accepts_the_client_pod_arguments` (the platform does not import cli).
}
