//! The drainwatch binary: parse, validate, dispatch, and map the result to an exit code
//! (0 report written, 1 policy missed, 2 tool or infrastructure failure, 130 interrupted).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Parser;
use tokio_util::sync::CancellationToken;

use drainwatch::cli::{Cli, ClientArgs, Command, PlatformArg, ReportArgs, RunArgs};
use drainwatch::evidence::event::{EventLine, Source, TrialHeader};
use drainwatch::evidence::plan::{DrainBehavior, PlanInput, Platform};
use drainwatch::evidence::{assemble, table};
use drainwatch::host;
use drainwatch::net::{self, ClientConfig};
use drainwatch::platform::Platform as _;
use drainwatch::platform::local::LocalPlatform;
use drainwatch::probe::{self, config::ProbeConfig, emit::Emitter};
use drainwatch::trial::{self, RunOptions, RunOutcome, output};

const EXIT_TOOL: u8 = 2;
const EXIT_INTERRUPTED: u8 = 130;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Probe => return run_probe(),
        Command::Run(args) => cmd_run(args),
        Command::Client(args) => cmd_client(args),
        Command::Report(args) => cmd_report(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("drainwatch: {e:#}");
            ExitCode::from(EXIT_TOOL)
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("failed to start the async runtime")
}

/// SIGINT or SIGTERM cancels the token; the run then cleans up and keeps partial evidence.
fn interrupt_on_signals() -> Result<CancellationToken> {
    use tokio::signal::unix::{SignalKind, signal};
    let token = CancellationToken::new();
    let mut int =
        signal(SignalKind::interrupt()).context("failed to install the SIGINT handler")?;
    let mut term =
        signal(SignalKind::terminate()).context("failed to install the SIGTERM handler")?;
    let t = token.clone();
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        };
        eprintln!(
            "drainwatch: {name} received: closing the trial, cleaning up, keeping the evidence so far"
        );
        t.cancel();
    });
    Ok(token)
}

fn run_probe() -> ExitCode {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let cfg = match ProbeConfig::from_lookup(|k| std::env::var(k).ok(), host::hostname().ok(), cpus)
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("drainwatch probe: {e}");
            return ExitCode::from(EXIT_TOOL);
        }
    };
    let emitter = Emitter::start(std::io::stdout(), cfg.behavior.as_str());
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("drainwatch probe: {e:#}");
            return ExitCode::from(EXIT_TOOL);
        }
    };
    let result = rt.block_on(probe::run(cfg, emitter.clone()));
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            emitter.emit("fatal", None, Some(format!("{e}")));
            eprintln!("drainwatch probe: {e}");
            i32::from(EXIT_TOOL)
        }
    };
    emitter.flush();
    // Exit now: do not wait for connection tasks, exactly as a process exit would.
    std::process::exit(code)
}

fn cmd_run(args: RunArgs) -> Result<u8> {
    let cfg = args.plan_input().validate().context("invalid flags")?;
    if args.platform == PlatformArg::Kubernetes {
        bail!("--platform kubernetes is not available in this build yet; use --platform local");
    }
    let exe =
        std::env::current_exe().context("failed to locate the drainwatch binary for the probe")?;
    let rt = runtime()?;
    rt.block_on(async {
        let interrupt = interrupt_on_signals()?;
        let opts = RunOptions {
            repeat: args.repeat,
            out: args.out.clone(),
            interrupt,
        };
        let mut platform = LocalPlatform::new(
            exe,
            args.ready_port,
            Duration::from_secs(args.ready_timeout),
        );
        match trial::run(&mut platform, &cfg, &opts).await? {
            RunOutcome::Completed => Ok(0),
            RunOutcome::Interrupted => Ok(EXIT_INTERRUPTED),
        }
    })
}

fn cmd_client(args: ClientArgs) -> Result<u8> {
    let plan = PlanInput {
        platform: Platform::Local,
        drain_behavior: DrainBehavior::Drain,
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
    };
    let mut cfg = plan.validate().context("invalid flags")?;
    cfg.workload = "none (manual client run)".into();
    if let Some(dir) = &args.out {
        output::check_writable(dir)?;
    }
    let rt = runtime()?;
    rt.block_on(async move {
        let interrupt = interrupt_on_signals()?;
        let mut local = LocalPlatform::new(std::path::PathBuf::new(), 1, Duration::ZERO);
        let env = local.environment().await?;
        let (rec, mut rx) = trial::recorder::Recorder::new();
        let mut header = EventLine::new(Source::Orchestrator, "trial_started", host::mono_ns());
        header.header = Some(Box::new(TrialHeader {
            trial_id: "client-manual".into(),
            drainwatch_version: host::VERSION.into(),
            git_commit: host::GIT_COMMIT.into(),
            config: cfg.clone(),
            environment: env,
            boot_id: host::boot_id()?,
        }));
        rec.send(header);
        let mut ccfg = ClientConfig::new(args.host.clone(), args.tcp_port, args.udp_port);
        ccfg.tcp_flows = args.flows.tcp_flows;
        ccfg.udp_flows = args.flows.udp_flows;
        ccfg.interval = args.flows.interval;
        ccfg.flow_timeout = args.flows.flow_timeout;
        ccfg.udp_silence_datagrams = args.flows.udp_silence_datagrams;
        ccfg.clock_extension = args.clock_extension;
        let client = net::start(ccfg, rec.sink()).await?;
        let progress = client.progress.clone();
        let streaming = args.events_stdout;
        let collector = tokio::spawn(async move {
            let mut lines = Vec::new();
            while let Some(l) = rx.recv().await {
                if streaming {
                    println!("{}", l.to_json());
                }
                lines.push(l);
            }
            lines
        });
        let (dialled, _) = progress.wait_until(Duration::from_secs(25), |s| s.dialing == 0).await;
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
        if interrupted {
            rec.orchestrator("trial_aborted", "interrupted by a signal".to_string());
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

fn cmd_report(args: ReportArgs) -> Result<u8> {
    let (report, bytes) = trial::replay(&args.events)?;
    print!("{}", table::render(&report));
    if let Some(dir) = &args.out {
        output::check_writable(dir)?;
        output::write_atomic(&dir.join("report.json"), &bytes)?;
        eprintln!("report written to {}", dir.join("report.json").display());
    }
    Ok(0)
}
