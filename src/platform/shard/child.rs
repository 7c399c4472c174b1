//! One `drainwatch client` child of a sharded run: spawning it with its slice, relaying its
//! stdout into the trial, keeping its stderr tail to name why it failed, and reaping it.

use std::collections::VecDeque;
use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::ShardPlan;
use crate::console;
use crate::evidence::event::{EventLine, EventName, Source};
use crate::evidence::plan::client::ClientInvocation;
use crate::evidence::shard::Slice;
use crate::net::ClientConfig;
use crate::net::follow::LineTracker;
use crate::platform::PlatformError;
use crate::platform::spawn;
use crate::recorder::Recorder;

/// Exit code of a client that closed its window on a signal (SIGTERM from us, or the
/// terminal's SIGINT reaching the whole process group): its evidence is complete.
const CLOSED_ON_SIGNAL: i32 = 130;
/// Stderr lines kept per child to name why it failed.
const STDERR_TAIL: usize = 6;

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Exit {
    code: Option<i32>,
    signal: Option<i32>,
}

impl Exit {
    pub(super) fn clean(self) -> bool {
        matches!(self.code, Some(0 | CLOSED_ON_SIGNAL))
    }

    pub(super) fn describe(self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exited with code {c}"),
            (None, Some(s)) => format!("was killed by signal {s}"),
            (None, None) => "ended with an unknown status".into(),
        }
    }
}

pub(super) struct ShardChild {
    pub(super) name: String,
    pub(super) pid: Pid,
    pub(super) slice: Slice,
    pub(super) exited: watch::Receiver<Option<Exit>>,
    /// Its entry in the restore journal.
    pub(super) journalled: crate::evidence::journal::Change,
    boot_id: watch::Receiver<Option<String>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl ShardChild {
    pub(super) fn failure(&self, what: &str) -> String {
        let tail: Vec<String> = self
            .stderr
            .lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default();
        let stderr = if tail.is_empty() {
            "no stderr".to_string()
        } else {
            format!("stderr: {}", tail.join(" | "))
        };
        format!(
            "{} (pid {}, {}) {what}; {stderr}",
            self.name,
            self.pid,
            self.slice.describe()
        )
    }
}

fn child_args(ccfg: &ClientConfig, s: Slice, hold: Duration) -> Vec<String> {
    ClientInvocation::Probe(super::probe_client(
        ccfg,
        s,
        hold.as_secs(),
        ccfg.clock_extension,
    ))
    .argv()
}

/// Relays one child's stdout: its header names its kernel; its client lines keep their own
/// times, which are CLOCK_MONOTONIC readings on this kernel (checked by boot id before any flow
/// is trusted), so they are placed exactly like the in-process client's; its own orchestrator
/// lines (trial_aborted on SIGTERM) are dropped, the orchestrator here is the one that counts.
fn shard_lines(
    rec: Recorder,
    tracker: Arc<Mutex<LineTracker>>,
    boot: watch::Sender<Option<String>>,
    name: String,
) -> impl FnMut(&str) + Send {
    move |text| {
        let mut l = match EventLine::parse(text) {
            Ok(Some(l)) => l,
            Ok(None) => return,
            Err(_) => {
                console::warning!(
                    "drainwatch: {name}: unparseable stdout line dropped: {}",
                    text.chars().take(120).collect::<String>()
                );
                return;
            }
        };
        if let Some(h) = &l.header {
            let _ = boot.send(Some(h.boot_id.clone()));
            return;
        }
        if l.source != Some(Source::Client) {
            return;
        }
        l.line = None;
        if let Ok(mut t) = tracker.lock() {
            t.observe(&l);
        }
        rec.send(l);
    }
}

/// Where every child's lines go: the trial, the shared progress fold, and the count of children
/// whose output is still open (the last to end marks the flows done).
pub(super) struct Intake {
    pub(super) rec: Recorder,
    pub(super) tracker: Arc<Mutex<LineTracker>>,
    pub(super) open: Arc<AtomicUsize>,
    pub(super) done_tx: Arc<watch::Sender<bool>>,
    /// Cancelled when the window closes: a child that ends before it is named in the evidence.
    pub(super) close: CancellationToken,
}

pub(super) fn spawn_child(
    plan: &ShardPlan<'_>,
    ccfg: &ClientConfig,
    i: usize,
    slice: Slice,
    intake: &Intake,
    tasks: &mut Vec<JoinHandle<()>>,
) -> Result<ShardChild, PlatformError> {
    let name = format!("client {} of {}", i + 1, plan.clients);
    let mut cmd = Command::new(plan.exe);
    cmd.args(child_args(ccfg, slice, plan.hold));
    let spawn::Piped {
        mut child,
        pid,
        stdout,
        stderr,
    } = spawn::piped(&mut cmd, &format!("{name} ({} client)", plan.exe.display()))?;
    let journalled = spawn::journal(
        &intake.rec,
        crate::evidence::journal::ProcessRole::Client,
        pid,
        &name,
    )?;
    let (boot_tx, boot_id) = watch::channel(None);
    let mut relay = shard_lines(
        intake.rec.clone(),
        intake.tracker.clone(),
        boot_tx,
        name.clone(),
    );
    let (open, done_tx) = (intake.open.clone(), intake.done_tx.clone());
    tasks.push(tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(text)) = lines.next_line().await {
            relay(&text);
        }
        if open.fetch_sub(1, Ordering::SeqCst) == 1 {
            let _ = done_tx.send(true);
        }
    }));
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let (err_tail, err_name) = (tail.clone(), name.clone());
    tasks.push(tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(text)) = lines.next_line().await {
            console::progress!("{err_name}: {text}");
            if let Ok(mut t) = err_tail.lock() {
                if t.len() == STDERR_TAIL {
                    t.pop_front();
                }
                t.push_back(text);
            }
        }
    }));
    let (exit_tx, exited) = watch::channel(None);
    let (rec, close, exit_name) = (intake.rec.clone(), intake.close.clone(), name.clone());
    tasks.push(tokio::spawn(async move {
        let exit = match child.wait().await {
            Ok(s) => Exit {
                code: s.code(),
                signal: s.signal(),
            },
            Err(_) => Exit {
                code: None,
                signal: None,
            },
        };
        if !close.is_cancelled() {
            let why = format!(
                "{exit_name} pid {pid} {} before the observation window closed; its flows' events end here",
                exit.describe()
            );
            console::warning!("drainwatch: {why}");
            rec.orchestrator(EventName::ClientProcessExited, why);
        }
        let _ = exit_tx.send(Some(exit));
    }));
    Ok(ShardChild {
        name,
        pid,
        slice,
        exited,
        journalled,
        boot_id,
        stderr: tail,
    })
}

/// Waits until `c` has streamed its header, and checks it runs on this kernel.
pub(super) async fn wait_started(
    c: &ShardChild,
    ready: Duration,
    ours: &str,
) -> Result<(), String> {
    let (mut boot, mut exited) = (c.boot_id.clone(), c.exited.clone());
    let got = tokio::time::timeout(ready, async {
        tokio::select! {
            r = boot.wait_for(Option::is_some) => r.ok().and_then(|b| b.clone()),
            _ = exited.wait_for(Option::is_some) => None,
        }
    })
    .await;
    match got {
        Ok(Some(b)) if b == ours => Ok(()),
        Ok(Some(b)) => Err(c.failure(&format!(
            "runs on kernel boot id {b}, not this one ({ours}), so its times cannot be placed"
        ))),
        Ok(None) => {
            let how = c
                .exited
                .borrow()
                .map_or_else(|| "ended its output".to_string(), Exit::describe);
            Err(c.failure(&format!("{how} before streaming its events")))
        }
        Err(_) => Err(c.failure(&format!("streamed no trial_started line within {ready:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_window_closed_by_a_signal_or_a_normal_end_is_clean() {
        let e = |code, signal| Exit { code, signal };
        assert!(e(Some(0), None).clean() && e(Some(130), None).clean());
        assert!(!e(Some(2), None).clean());
        assert!(!e(None, Some(9)).clean());
        assert_eq!(e(None, Some(9)).describe(), "was killed by signal 9");
    }

    #[test]
    fn child_lines_keep_their_clock_and_only_client_lines_reach_the_trial() {
        let (rec, mut rx) = Recorder::new();
        let tracker = Arc::new(Mutex::new(LineTracker::new(vec!["tcp-0011".into()])));
        let (tx, boot) = watch::channel(None);
        let mut relay = shard_lines(rec, tracker.clone(), tx, "client 2 of 3".into());
        let header = crate::evidence::assemble::fixtures::header(1, 0);
        relay(&header.to_json());
        assert!(
            boot.borrow().is_some(),
            "the header names the child's kernel"
        );
        let mut c = EventLine::new(Source::Client, EventName::FlowConnected, 700).flow("tcp-0011");
        c.line = Some(2);
        relay(&c.to_json());
        relay(&EventLine::new(Source::Orchestrator, EventName::TrialAborted, 800).to_json());
        relay("");
        let got = rx.try_recv().unwrap();
        assert_eq!((got.at_ns, got.line, got.boot_id), (Some(700), None, None));
        assert!(
            rx.try_recv().is_err(),
            "header and orchestrator lines are dropped"
        );
        let p = tracker.lock().unwrap().progress();
        assert_eq!(
            p.snapshot().dialing,
            0,
            "the shared progress saw the flow connect"
        );
    }
}
