//! A trial's first line, for the assembly's own tests and the relays' (whose replay starts at
//! a header).

use crate::environment::Environment;
use crate::event::{EventLine, EventName, Source, TrialHeader};
use crate::plan::{DrainBehavior, Platform, TrialConfig};
use crate::trigger::Trigger;

/// A local trial's header line: `tcp` and `udp` flows, trial-001, boot boot-a.
pub fn header(tcp: u32, udp: u32) -> EventLine {
    let mut l = EventLine::new(Source::Orchestrator, EventName::TrialStarted, 0);
    l.header = Some(Box::new(TrialHeader {
        trial_id: "trial-001".into(),
        drainwatch_version: "0.0.0-test".into(),
        git_commit: "abc".into(),
        config: TrialConfig {
            platform: Platform::Local,
            tcp_flows: tcp,
            udp_flows: udp,
            grace_period_seconds: 30,
            drain_behavior: Some(DrainBehavior::Drain),
            drain_max_seconds: 25,
            exit_now_force_rst: true,
            trigger: Trigger::Sigterm,
            workload: "local-process".into(),
            namespace: None,
            target_host: "127.0.0.1".into(),
            tcp_port: 7001,
            udp_port: 7002,
            settle_seconds: 1,
            observe_timeout_seconds: 60,
            flow_timeout_seconds: 10.0,
            interval_ms: 500,
            udp_silence_datagrams: 6,
            post_terminal_grace_seconds: 5,
            kubernetes: None,
            clients: 1,
            attach: None,
        },
        environment: Environment {
            platform: "local".into(),
            kubernetes_version: None,
            cluster: None,
            node_count: None,
            nodes: vec![],
            kube_proxy_mode: None,
            cni: None,
            cluster_timing: None,
            drainwatch_version: "0.0.0-test".into(),
            git_commit: "abc".into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            kernel: "6.1".into(),
            hostname: "h".into(),
            probe_image: None,
            wall_clock_start: "2026-11-30T00:00:00Z".into(),
            run_id: None,
            warnings: vec![],
        },
        boot_id: "boot-a".into(),
        streamed: false,
    }));
    l
}
