//! Every kind of `drainwatch client` line the platforms build
//! (`evidence::plan::client::ClientInvocation::argv`) parses back through the clap definition
//! the client itself runs with, to the same settings.

use clap::Parser;

use super::{Cli, ClientArgs, Command};
use crate::evidence::attach::{AttachConfig, AttachGrpc, AttachProtocol, AttachTls};
use crate::evidence::plan::client::{AttachClient, AttachShard, ClientInvocation, ProbeClient};

fn parsed(inv: &ClientInvocation) -> ClientArgs {
    let argv = inv.argv();
    let cli = Cli::try_parse_from(std::iter::once("drainwatch".to_string()).chain(argv.clone()))
        .unwrap_or_else(|e| panic!("{argv:?} does not parse: {e}"));
    match cli.command {
        Command::Client(c) => c,
        other => panic!("{argv:?} parsed as {other:?}"),
    }
}

/// The invocation the parsed flags describe.
fn back(args: &ClientArgs) -> ClientInvocation {
    let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap();
    if args.attach.attach {
        let config = args.attach_config().unwrap();
        let shard = (args.attach.dial_stride > 1).then(|| AttachShard {
            tcp_flows: args.flows.tcp_flows,
            first_tcp_flow: args.first_tcp_flow,
            first_dial: args.attach.first_dial,
            dial_stride: u32::try_from(args.attach.dial_stride).unwrap(),
        });
        return ClientInvocation::Attach(Box::new(AttachClient { config, shard }));
    }
    assert!(args.events_stdout, "a probe client streams its events");
    ClientInvocation::Probe(ProbeClient {
        host: args.host.clone(),
        tcp_port: args.tcp_port,
        udp_port: args.udp_port,
        tcp_flows: args.flows.tcp_flows,
        udp_flows: args.flows.udp_flows,
        first_tcp_flow: args.first_tcp_flow,
        first_udp_flow: args.first_udp_flow,
        interval_ms: ms(args.flows.interval),
        flow_timeout_ms: ms(args.flows.flow_timeout),
        udp_silence_datagrams: args.flows.udp_silence_datagrams,
        duration_seconds: args.duration.as_secs(),
        clock_extension: args.clock_extension,
    })
}

fn probe(clock_extension: bool) -> ProbeClient {
    ProbeClient {
        host: "10.96.0.10".into(),
        tcp_port: 7001,
        udp_port: 7002,
        tcp_flows: 3,
        udp_flows: 2,
        first_tcp_flow: 4,
        first_udp_flow: 3,
        interval_ms: 250,
        flow_timeout_ms: 12_000,
        udp_silence_datagrams: 5,
        duration_seconds: 86_400,
        clock_extension,
    }
}

/// An attach configuration as the platform builds it; `target`, `service` and `duration_ms`
/// are the report's, not the client's (it is told `--duration` 24 h), so they are what the
/// parse back gives.
fn attach(protocol: AttachProtocol) -> AttachConfig {
    AttachConfig {
        target: None,
        service: None,
        protocol,
        host: "10.96.0.7".into(),
        port: 8443,
        path: (protocol != AttachProtocol::Tcp).then(|| "/ws".to_string()),
        expect_status: matches!(protocol, AttachProtocol::Http | AttachProtocol::Http2)
            .then_some(204),
        tcp_flows: 6,
        interval_ms: 300,
        dial_rate: 15,
        request_timeout_ms: 1_500,
        keepalive_idle_ms: 4_000,
        keepalive_interval_ms: 500,
        keepalive_count: 5,
        user_timeout_ms: 9_000,
        duration_ms: 86_400_000,
        tls: None,
        grpc: None,
        host_header: None,
        request_id_prefix: None,
        direct_dial: None,
    }
}

#[test]
fn every_client_line_parses_back_to_its_settings() {
    let mut cases = vec![
        ClientInvocation::Probe(probe(true)),
        ClientInvocation::Probe(probe(false)),
    ];
    for protocol in [
        AttachProtocol::Http,
        AttachProtocol::Http2,
        AttachProtocol::Tcp,
        AttachProtocol::Websocket,
    ] {
        cases.push(ClientInvocation::Attach(Box::new(AttachClient {
            config: attach(protocol),
            shard: None,
        })));
    }
    let mut tls = attach(AttachProtocol::Websocket);
    tls.tls = Some(AttachTls {
        server_name: "web.shop.svc".into(),
        ca_file: Some("/etc/drainwatch/ca/ca.crt".into()),
        insecure_skip_verify: false,
    });
    cases.push(ClientInvocation::Attach(Box::new(AttachClient {
        config: tls,
        shard: None,
    })));
    let mut through_ingress = attach(AttachProtocol::Http);
    through_ingress.host_header = Some("shop.example".into());
    through_ingress.request_id_prefix = Some("20261206-063311-3fa9c01b-001".parse().unwrap());
    through_ingress.direct_dial = Some("10.96.0.12:80".parse().unwrap());
    cases.push(ClientInvocation::Attach(Box::new(AttachClient {
        config: through_ingress,
        shard: None,
    })));
    let mut grpc = attach(AttachProtocol::Grpc);
    grpc.path = None;
    grpc.grpc = Some(AttachGrpc {
        method: None,
        service: Some("shop.Cart".into()),
        watch: true,
    });
    let mut method = attach(AttachProtocol::Grpc);
    method.path = None;
    method.grpc = Some(AttachGrpc {
        method: Some("/shop.Cart/Get".into()),
        service: None,
        watch: false,
    });
    cases.push(ClientInvocation::Attach(Box::new(AttachClient {
        config: method,
        shard: None,
    })));
    cases.push(ClientInvocation::Attach(Box::new(AttachClient {
        config: grpc,
        shard: Some(AttachShard {
            tcp_flows: 2,
            first_tcp_flow: 3,
            first_dial: 2,
            dial_stride: 3,
        }),
    })));
    assert_eq!(cases.len(), 10);
    for inv in &cases {
        let mut want = inv.clone();
        if let ClientInvocation::Attach(a) = &mut want
            && let Some(s) = a.shard
        {
            // A shard is told its own held connections; the rest of the run's settings stay.
            a.config.tcp_flows = s.tcp_flows;
        }
        assert_eq!(back(&parsed(inv)), want, "{:?}", inv.argv());
    }
}

#[test]
fn a_probe_clients_flows_size_its_pod_and_an_attach_shards_its_own() {
    assert_eq!(ClientInvocation::Probe(probe(true)).flows(), 5);
    let whole = AttachClient {
        config: attach(AttachProtocol::Http),
        shard: None,
    };
    assert_eq!(ClientInvocation::Attach(Box::new(whole.clone())).flows(), 6);
    let part = AttachClient {
        shard: Some(AttachShard {
            tcp_flows: 2,
            first_tcp_flow: 5,
            first_dial: 3,
            dial_stride: 3,
        }),
        ..whole
    };
    assert_eq!(ClientInvocation::Attach(Box::new(part)).flows(), 2);
}
