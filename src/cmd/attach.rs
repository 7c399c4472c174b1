//! `drainwatch client --attach`: hold HTTP or TCP flows against an unmodified workload, probe
//! new connections, and stream every event line (stdout, or `--events FILE`).

use std::fs::File;
use std::io::{BufWriter, Write};

use anyhow::{Context, Result};

use drainwatch::cli::ClientArgs;
use drainwatch::evidence::attach::AttachConfig;
use drainwatch::evidence::event::EventLine;
use drainwatch::evidence::plan::{Platform, TrialConfig};
use drainwatch::evidence::trigger::Trigger;
use drainwatch::net;
use drainwatch::trial::output;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

use super::manual::{Ending, finish, manual_recorder};
use super::{interrupt_on_signals, runtime};
use drainwatch::console;

pub fn cmd_attach(args: ClientArgs) -> Result<u8> {
    let attach = args.attach_config().context("invalid flags")?;
    let cfg = trial_config(&args, &attach);
    if let Some(dir) = &args.out {
        output::check_writable(dir)?;
    }
    let events_file = match &args.attach.events {
        Some(p) => Some(BufWriter::new(File::create(p).with_context(|| {
            format!("failed to create --events {}", p.display())
        })?)),
        None => None,
    };
    let rt = runtime()?;
    rt.block_on(async move {
        let interrupt = interrupt_on_signals()?;
        let (rec, rx) = manual_recorder(cfg).await?;
        let to_file = events_file.is_some();
        let collector = stream(rx, events_file);
        let ids = net::attach::Ids {
            first_flow: args.first_tcp_flow,
            first_dial: args.attach.first_dial,
            dial_stride: args.attach.dial_stride,
        };
        let client = net::attach::start(&attach, ids, rec.sink()).await?;
        if attach.tls.as_ref().is_some_and(|t| t.insecure_skip_verify) {
            console::warning!(
                "WARNING: --insecure-skip-verify: the server's TLS certificate is NOT verified (recorded in the report)"
            );
        }
        console::progress!(
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
        let reason = if interrupted {
            "interrupted"
        } else {
            "duration"
        };
        client.close(reason).await;
        let end = Ending {
            interrupted,
            print_table: to_file,
            out: args.out.as_deref(),
            records: "attach records",
        };
        finish(rec, collector, end).await
    })
}

/// The manual attach run's configuration, built directly rather than through PlanInput: the
/// probe plan's checks (UDP port, drain window) are about a workload this run does not have.
fn trial_config(args: &ClientArgs, attach: &AttachConfig) -> TrialConfig {
    TrialConfig {
        platform: Platform::Local,
        tcp_flows: attach.tcp_flows,
        udp_flows: 0,
        grace_period_seconds: 0,
        drain_behavior: None,
        drain_max_seconds: 0,
        exit_now_force_rst: false,
        trigger: Trigger::Manual,
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
    }
}

/// Collects every line and writes each, numbered, to `--events` or stdout as it arrives.
fn stream(
    mut rx: UnboundedReceiver<EventLine>,
    mut events_file: Option<BufWriter<File>>,
) -> JoinHandle<Vec<EventLine>> {
    tokio::spawn(async move {
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
                console::warning!("drainwatch: failed to write an event line: {e}");
            }
            lines.push(l);
        }
        lines
    })
}
