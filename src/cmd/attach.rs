//! `drainwatch client --attach`: hold HTTP or TCP flows against an unmodified workload, probe
//! new connections, and stream every event line (stdout, or `--events FILE`).

use std::io::Write;

use anyhow::{Context, Result};

use drainwatch::cli::ClientArgs;
use drainwatch::evidence::plan::{Platform, TrialConfig};
use drainwatch::evidence::{assemble, table};
use drainwatch::net;
use drainwatch::trial::output;

use super::{EXIT_INTERRUPTED, interrupt_on_signals, runtime};
use drainwatch::evidence::event::EventName;

pub fn cmd_attach(args: ClientArgs) -> Result<u8> {
    let attach = args
        .attach
        .config(
            &args.host,
            args.flows.tcp_flows,
            args.flows.interval,
            args.duration,
        )
        .context("invalid flags")?;
    // Built directly, not through PlanInput: the probe plan's checks (UDP port, drain window)
    // are about a workload this run does not have.
    let cfg = TrialConfig {
        platform: Platform::Local,
        tcp_flows: attach.tcp_flows,
        udp_flows: 0,
        grace_period_seconds: 0,
        drain_behavior: None,
        drain_max_seconds: 0,
        exit_now_force_rst: false,
        trigger: "none (manual client run)".into(),
        workload: "attached (manual client run)".into(),
        namespace: None,
        target_host: attach.host.clone(),
        tcp_port: attach.port,
        udp_port: attach.port,
        settle_seconds: 0,
        observe_timeout_seconds: u32::try_from(args.duration.as_secs()).unwrap_or(u32::MAX),
        flow_timeout_seconds: attach.request_timeout_ms as f64 / 1000.0,
        interval_ms: attach.interval_ms,
        udp_silence_datagrams: 1,
        post_terminal_grace_seconds: 0,
        kubernetes: None,
        clients: 1,
        attach: Some(attach.clone()),
    };
    if let Some(dir) = &args.out {
        output::check_writable(dir)?;
    }
    let mut events_file = match &args.attach.events {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p)
                .with_context(|| format!("failed to create --events {}", p.display()))?,
        )),
        None => None,
    };
    let rt = runtime()?;
    rt.block_on(async move {
        let interrupt = interrupt_on_signals()?;
        let (rec, mut rx) = super::client::manual_recorder(cfg).await?;
        let to_file = events_file.is_some();
        let collector = tokio::spawn(async move {
            let mut lines = Vec::new();
            let mut n = 0u64;
            let stdout = std::io::stdout();
            while let Some(l) = rx.recv().await {
                // A line counter, so a follower that reopens the pod log drops repeats.
                n += 1;
                let mut out = l.clone();
                out.line = Some(n);
                let text = out.to_json();
                let written = match events_file.as_mut() {
                    Some(f) => writeln!(f, "{text}").and_then(|()| f.flush()),
                    None => writeln!(stdout.lock(), "{text}"),
                };
                if let Err(e) = written {
                    eprintln!("drainwatch: failed to write an event line: {e}");
                }
                lines.push(l);
            }
            lines
        });
        let client = net::attach::start(&attach, rec.sink()).await?;
        eprintln!(
            "attached to {} {}:{} with {} flows and {} dials/s; holding for {:?}",
            attach.protocol,
            attach.host,
            attach.port,
            attach.tcp_flows,
            attach.dial_rate,
            args.duration
        );
        let interrupted = tokio::select! {
            () = interrupt.cancelled() => true,
            () = tokio::time::sleep(args.duration) => false,
        };
        client
            .close(if interrupted {
                "interrupted"
            } else {
                "duration"
            })
            .await;
        if interrupted {
            rec.orchestrator(
                EventName::TrialAborted,
                "interrupted by a signal".to_string(),
            );
        }
        drop(rec);
        let lines = collector.await.context("the event collector failed")?;
        let report = assemble::build_report(&lines)?;
        if to_file {
            print!("{}", table::render(&report));
        }
        if let Some(dir) = &args.out {
            output::write_trial(dir, &report, &lines)?;
            eprintln!(
                "attach records written to {}",
                dir.join("report.json").display()
            );
        }
        Ok(if interrupted { EXIT_INTERRUPTED } else { 0 })
    })
}
