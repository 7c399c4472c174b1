//! `drainwatch client`: hold flows against a running probe and report what happened to them.

use std::time::Duration;

use anyhow::{Context, Result};

use drainwatch::cli::ClientArgs;
use drainwatch::evidence::event::{EventLine, EventName, Source, TrialHeader};
use drainwatch::evidence::plan::{PlanInput, Platform, TrialConfig};
use drainwatch::evidence::{assemble, table};
use drainwatch::host;
use drainwatch::net::{self, ClientConfig};
use drainwatch::platform::Platform as _;
use drainwatch::platform::local::LocalPlatform;
use drainwatch::trial::output;
use drainwatch::trial::recorder::Recorder;
use tokio::sync::mpsc::UnboundedReceiver;

use super::{EXIT_INTERRUPTED, interrupt_on_signals, runtime};

/// The benchmark harness opens and then closes the steady-state window with SIGUSR2.
/// The recorder of a manual client run (`drainwatch client`, with or without `--attach`), its
/// `trial_started` header already sent: this machine's environment and `cfg`.
pub(super) async fn manual_recorder(
    cfg: TrialConfig,
) -> Result<(Recorder, UnboundedReceiver<EventLine>)> {
    let mut local = LocalPlatform::new(std::path::PathBuf::new(), 1, Duration::ZERO);
    let env = local.environment().await?;
    let (rec, rx) = Recorder::new();
    let mut header = EventLine::new(
        Source::Orchestrator,
        EventName::TrialStarted,
        host::mono_ns(),
    );
    header.header = Some(Box::new(TrialHeader {
        trial_id: "client-manual".into(),
        drainwatch_version: host::VERSION.into(),
        git_commit: host::GIT_COMMIT.into(),
        config: cfg,
        environment: env,
        boot_id: host::boot_id()?,
    }));
    rec.send(header);
    Ok((rec, rx))
}

fn close_window_on_sigusr2(b: std::sync::Arc<net::bench::BenchStats>) -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut usr2 =
        signal(SignalKind::user_defined2()).context("failed to install the SIGUSR2 handler")?;
    tokio::spawn(async move {
        while usr2.recv().await.is_some() {
            b.toggle_window(host::mono_ns());
        }
    });
    Ok(())
}

pub fn cmd_client(args: ClientArgs) -> Result<u8> {
    if args.attach.attach {
        return super::attach::cmd_attach(args);
    }
    let plan = PlanInput {
        platform: Platform::Local,
        drain_behavior: None,
        trigger: "none (manual client run)".into(),
        grace_period_seconds: 1,
        drain_max_seconds: 0,
        exit_now_force_rst: true,
        tcp_flows: args.flows.tcp_flows,
        udp_flows: args.flows.udp_flows,
        target_host: args.host.clone(),
        tcp_port: args.tcp_port,
        udp_port: args.udp_port,
        ready_port: 1,
        settle_seconds: 0,
        observe_timeout_seconds: u32::try_from(args.duration.as_secs().max(1)).unwrap_or(u32::MAX),
        flow_timeout_ms: u64::try_from(args.flows.flow_timeout.as_millis()).unwrap_or(u64::MAX),
        interval_ms: u64::try_from(args.flows.interval.as_millis()).unwrap_or(u64::MAX),
        udp_silence_datagrams: args.flows.udp_silence_datagrams,
        post_terminal_grace_seconds: 0,
        repeat: 1,
        namespace: None,
        kubernetes: None,
        clients: 1,
        attach: None,
    };
    let mut cfg = plan.validate().context("invalid flags")?;
    cfg.workload = "none (manual client run)".into();
    if let Some(dir) = &args.out {
        output::check_writable(dir)?;
    }
    let rt = runtime()?;
    rt.block_on(async move {
        let interrupt = interrupt_on_signals()?;
        let (rec, mut rx) = manual_recorder(cfg.clone()).await?;
        let mut ccfg = ClientConfig::new(args.host.clone(), args.tcp_port, args.udp_port);
        ccfg.tcp_flows = args.flows.tcp_flows;
        ccfg.udp_flows = args.flows.udp_flows;
        ccfg.first_tcp_flow = args.first_tcp_flow;
        ccfg.first_udp_flow = args.first_udp_flow;
        ccfg.interval = args.flows.interval;
        ccfg.flow_timeout = args.flows.flow_timeout;
        ccfg.udp_silence_datagrams = args.flows.udp_silence_datagrams;
        ccfg.clock_extension = args.clock_extension;
        let bench = args
            .bench_stats
            .then(|| std::sync::Arc::new(net::bench::BenchStats::default()));
        if let Some(b) = &bench {
            close_window_on_sigusr2(b.clone())?;
        }
        ccfg.bench = bench.clone();
        let client = net::start(ccfg, rec.sink()).await?;
        let progress = client.progress.clone();
        let streaming = args.events_stdout;
        let collector = tokio::spawn(async move {
            let mut lines = Vec::new();
            let mut n = 0u64;
            while let Some(l) = rx.recv().await {
                if streaming {
                    // A line counter, so a follower that reopens the pod log drops repeats.
                    n += 1;
                    let mut out = l.clone();
                    out.line = Some(n);
                    println!("{}", out.to_json());
                }
                lines.push(l);
            }
            lines
        });
        let (dialled, _) = progress.wait_until(Duration::from_secs(25), |s| s.dialing == 0).await;
        if let Some(b) = &bench {
            b.dialled_ns.store(host::mono_ns(), std::sync::atomic::Ordering::Relaxed);
            let (_, all) = progress
                .wait_until(Duration::from_secs(25), |s| s.carried + s.terminal >= s.total)
                .await;
            if all {
                b.carrying_ns
                    .store(host::mono_ns(), std::sync::atomic::Ordering::Relaxed);
                eprintln!("bench: every flow carries data");
            }
        }
        eprintln!(
            "established {} tcp and {} udp flows against {} ({} failed); holding for {:?}",
            args.flows.tcp_flows,
            args.flows.udp_flows,
            args.host,
            dialled.dial_failed.len(),
            args.duration
        );
        let interrupted = tokio::select! {
            () = interrupt.cancelled() => true,
            (_, all) = progress.wait_until(args.duration, |s| s.terminal + s.dial_failed.len() == s.total) => {
                if all { eprintln!("every flow reached a terminal event; stopping early"); }
                false
            }
        };
        client.close().await;
        if let Some(b) = &bench {
            eprintln!("bench_stats {}", b.to_json(u64::try_from(args.flows.interval.as_nanos()).unwrap_or(u64::MAX)));
        }
        if interrupted {
            rec.orchestrator(EventName::TrialAborted, "interrupted by a signal".to_string());
        }
        drop(rec);
        let lines = collector.await.context("the event collector failed")?;
        let report = assemble::build_report(&lines)?;
        if !streaming {
            print!("{}", table::render(&report));
        }
        if let Some(dir) = &args.out {
            output::write_trial(dir, &report, &lines)?;
            eprintln!("flow records written to {}", dir.join("report.json").display());
        }
        Ok(if interrupted { EXIT_INTERRUPTED } else { 0 })
    })
}
