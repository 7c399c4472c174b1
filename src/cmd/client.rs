//! `drainwatch client`: hold flows against a running probe and report what happened to them.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result};

use drainwatch::cli::ClientArgs;
use drainwatch::evidence::event::EventLine;
use drainwatch::evidence::plan::{PlanInput, Platform, TrialConfig};
use drainwatch::evidence::trigger::Trigger;
use drainwatch::host;
use drainwatch::net::bench::BenchStats;
use drainwatch::net::progress::Progress;
use drainwatch::net::{self, ClientConfig};
use drainwatch::trial::output;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::manual::{Ending, finish, manual_recorder};
use super::{interrupt_on_signals, runtime};
use drainwatch::console;

/// The benchmark harness opens and then closes the steady-state window with SIGUSR2.
fn close_window_on_sigusr2(b: Arc<BenchStats>) -> Result<()> {
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
    let cfg = trial_config(&args)?;
    if let Some(dir) = &args.out {
        output::check_writable(dir)?;
    }
    let rt = runtime()?;
    rt.block_on(async move {
        let interrupt = interrupt_on_signals()?;
        let (rec, rx) = manual_recorder(cfg).await?;
        let bench = args.bench_stats.then(|| Arc::new(BenchStats::default()));
        if let Some(b) = &bench {
            close_window_on_sigusr2(b.clone())?;
        }
        let client = net::start(client_config(&args, bench.clone()), rec.sink()).await?;
        let progress = client.progress.clone();
        let collector = collect(rx, args.events_stdout);
        established(&args, &progress, bench.as_deref()).await;
        let interrupted = hold(&args, &progress, &interrupt).await;
        client.close().await;
        if let Some(b) = &bench {
            let interval = u64::try_from(args.flows.interval.as_nanos()).unwrap_or(u64::MAX);
            // Machine-read (scripts/bench.py), so not a console line: --quiet keeps it.
            eprintln!("bench_stats {}", b.to_json(interval));
        }
        let end = Ending {
            interrupted,
            print_table: !args.events_stdout,
            out: args.out.as_deref(),
            records: "flow records",
        };
        finish(rec, collector, end).await
    })
}

/// The manual run's validated configuration: the probe plan with its trial-loop knobs at rest.
fn trial_config(args: &ClientArgs) -> Result<TrialConfig> {
    let plan = PlanInput {
        platform: Platform::Local,
        drain_behavior: None,
        trigger: Trigger::Manual,
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
    Ok(cfg)
}

/// The flow generator's configuration from the flags.
fn client_config(args: &ClientArgs, bench: Option<Arc<BenchStats>>) -> ClientConfig {
    let mut c = ClientConfig::new(args.host.clone(), args.tcp_port, args.udp_port);
    c.tcp_flows = args.flows.tcp_flows;
    c.udp_flows = args.flows.udp_flows;
    c.first_tcp_flow = args.first_tcp_flow;
    c.first_udp_flow = args.first_udp_flow;
    c.interval = args.flows.interval;
    c.flow_timeout = args.flows.flow_timeout;
    c.udp_silence_datagrams = args.flows.udp_silence_datagrams;
    c.clock_extension = args.clock_extension;
    c.bench = bench;
    c
}

/// Collects every line; with `streaming` also prints each on stdout as it arrives.
fn collect(mut rx: UnboundedReceiver<EventLine>, streaming: bool) -> JoinHandle<Vec<EventLine>> {
    tokio::spawn(async move {
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
    })
}

/// How long the client waits for every dial to finish, and watches for every flow to carry
/// data, before it says so.
const ESTABLISH_LIMIT: Duration = Duration::from_secs(25);

/// Waits (bounded) for every dial to finish, and under `--bench-stats` for every flow to carry
/// data, stamping both moments; then says what was established. Without `--bench-stats` the
/// hold starts at once, and "every flow carries data" is said when it happens.
async fn established(args: &ClientArgs, progress: &Arc<Progress>, bench: Option<&BenchStats>) {
    let (dialled, _) = progress
        .wait_until(ESTABLISH_LIMIT, |s| s.dialing == 0)
        .await;
    let carrying = |p: Arc<Progress>| async move {
        let (_, all) = p
            .wait_until(ESTABLISH_LIMIT, |s| s.carried + s.terminal >= s.total)
            .await;
        if all {
            console::progress!("every flow carries data");
        }
        all
    };
    match bench {
        Some(b) => {
            b.dialled_ns.store(host::mono_ns(), Ordering::Relaxed);
            if carrying(progress.clone()).await {
                b.carrying_ns.store(host::mono_ns(), Ordering::Relaxed);
            }
        }
        None => {
            tokio::spawn(carrying(progress.clone()));
        }
    }
    console::progress!(
        "established {} tcp and {} udp flows against {} ({} failed); holding for {:?}",
        args.flows.tcp_flows,
        args.flows.udp_flows,
        args.host,
        dialled.dial_failed.len(),
        args.duration
    );
}

/// Holds the flows for `--duration`, until every flow has ended, or until a signal; true when
/// a signal stopped it.
async fn hold(args: &ClientArgs, progress: &Progress, interrupt: &CancellationToken) -> bool {
    tokio::select! {
        () = interrupt.cancelled() => true,
        (_, all) = progress.wait_until(args.duration, |s| s.terminal + s.dial_failed.len() == s.total) => {
            if all {
                console::progress!("every flow reached a terminal event; stopping early");
            }
            false
        }
    }
}
