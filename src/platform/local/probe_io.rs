//! The local probe's pipes and exit: its event lines relayed into the trial, its stderr
//! relayed to ours, and its exit recorded as the kubelet records a container's.

use std::os::unix::process::ExitStatusExt;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStderr, ChildStdout};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::console;
use crate::evidence::event::EventName;
use crate::evidence::event::{EventLine, Source};
use crate::evidence::timeline::format_wall_ns;
use crate::host;
use crate::recorder::Recorder;

/// How the child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Exit {
    pub(super) code: i32,
    pub(super) signal: Option<i32>,
}

/// Relays the probe's event lines into the trial; returns the reader, a receiver that turns
/// true at `probe_started`, and one that turns true when its stdout ends.
pub(super) fn read_events(
    stdout: ChildStdout,
    rec: &Recorder,
) -> (JoinHandle<()>, watch::Receiver<bool>, watch::Receiver<bool>) {
    let (started_tx, started) = watch::channel(false);
    let (done_tx, stdout_done) = watch::channel(false);
    let out_rec = rec.clone();
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(text)) = lines.next_line().await {
            let at = host::mono_ns();
            let line = match EventLine::parse(&text) {
                Ok(Some(mut l)) => {
                    l.source = Some(Source::Probe);
                    l.at_ns = Some(at);
                    if l.event == EventName::ProbeStarted {
                        let _ = started_tx.send(true);
                    }
                    l
                }
                Ok(None) => continue,
                Err(_) => EventLine::new(Source::Probe, EventName::UnparseableLine, at)
                    .detail(text.chars().take(120).collect::<String>()),
            };
            out_rec.send(line);
        }
        let _ = done_tx.send(true);
    });
    (reader, started, stdout_done)
}

/// Relays the probe's stderr to ours, each line prefixed.
pub(super) fn relay_stderr(stderr: ChildStderr) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(text)) = lines.next_line().await {
            console::progress!("probe: {text}");
        }
    })
}

/// Waits for the probe to exit and records its `container_terminated` line; the receiver
/// holds how it ended.
pub(super) fn reap(
    mut child: tokio::process::Child,
    rec: &Recorder,
) -> (JoinHandle<()>, watch::Receiver<Option<Exit>>) {
    let (exit_tx, exited) = watch::channel(None);
    let reap_rec = rec.clone();
    let reaper = tokio::spawn(async move {
        let status = child.wait().await;
        let at = host::mono_ns();
        let exit = match status {
            Ok(s) => Exit {
                code: s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)),
                signal: s.signal(),
            },
            Err(_) => Exit {
                code: -1,
                signal: None,
            },
        };
        let reason = if exit.code == 0 { "Completed" } else { "Error" };
        let mut l = EventLine::new(Source::Orchestrator, EventName::ContainerTerminated, at)
            .detail(format!(
                "probe exitCode={} reason={reason} signal={}",
                exit.code,
                exit.signal.unwrap_or(0)
            ));
        l.exit_code = Some(exit.code);
        l.signal = exit.signal;
        l.wall = Some(format_wall_ns(host::wall_ns()));
        reap_rec.send(l);
        let _ = exit_tx.send(Some(exit));
    });
    (reaper, exited)
}
