//! `drainwatch manifests`: the objects a Kubernetes trial would create, as YAML for review.

use anyhow::{Context, Result};

use drainwatch::cli::ManifestsArgs;
use drainwatch::evidence::plan::{PlanInput, Platform};
use drainwatch::evidence::trigger::Trigger;
use drainwatch::k8s::manifests::{WorkloadSpec, render_yaml};

pub fn cmd_manifests(args: ManifestsArgs) -> Result<u8> {
    let k = args.workload.config();
    // Validate exactly as `run` would, so the printed drain window is the one that would run.
    let plan = PlanInput {
        platform: Platform::Kubernetes,
        drain_behavior: Some(args.drain_behavior.into()),
        trigger: Trigger::Delete,
        grace_period_seconds: args.grace_period,
        drain_max_seconds: args.drain_max_seconds,
        exit_now_force_rst: true,
        tcp_flows: 1,
        udp_flows: 1,
        target_host: String::new(),
        tcp_port: args.tcp_port,
        udp_port: args.udp_port,
        ready_port: 7003,
        settle_seconds: 0,
        observe_timeout_seconds: 0,
        flow_timeout_ms: 10_000,
        interval_ms: 500,
        udp_silence_datagrams: 6,
        post_terminal_grace_seconds: 0,
        repeat: 1,
        namespace: args.workload.namespace.clone(),
        kubernetes: Some(k.clone()),
        clients: 1,
        attach: None,
    };
    let cfg = plan.validate().context("invalid flags")?;
    let ns = args
        .workload
        .namespace
        .clone()
        .unwrap_or_else(|| "drainwatch-RUNID-001".into());
    let spec = WorkloadSpec::from_config(
        ns.clone(),
        "drainwatch-RUNID-001".into(),
        "RUNID".into(),
        args.drain_behavior.into(),
        &cfg,
        &k,
    );
    let yaml = render_yaml(&spec, args.workload.namespace.is_none())
        .context("failed to render the manifests")?;
    println!(
        "# drainwatch {}: the objects one trial creates (RUNID is the run id, its UTC start second and a per-process suffix; the client pod, with --client pod, is created after preflight)",
        env!("CARGO_PKG_VERSION")
    );
    print!("{yaml}");
    Ok(0)
}
