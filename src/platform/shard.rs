//! `--clients N` on the local platform: the flows run in N `drainwatch client` child processes,
//! each holding a contiguous slice of the global ids, so one process's open-file limit no longer
//! caps a trial. Their stdout event lines are relayed into the trial, their progress is rebuilt
//! with the same fold as a client pod's, and closing the window sends each of them SIGTERM.

use std::collections::VecDeque;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Flows, PlatformError};
use crate::evidence::event::{EventLine, Source};
use crate::evidence::flow::{Proto, flow_id};
use crate::host;
use crate::net::ClientConfig;
use crate::net::follow::LineTracker;
use crate::trial::recorder::Recorder;

/// Exit code of a client that closed its window on a signal (SIGTERM from us, or the
/// terminal's SIGINT reaching the whole process group): its evidence is complete.
const CLOSED_ON_SIGNAL: i32 = 130;
/// Stderr lines kept per child to name why it failed.
const STDERR_TAIL: usize = 6;

/// One child's share of the flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    /// Number of its first TCP flow.
    pub first_tcp: u32,
    /// Its TCP flows.
    pub tcp: u32,
    /// Number of its first UDP flow.
    pub first_udp: u32,
    /// Its UDP flows.
    pub udp: u32,
}

impl Slice {
    /// `tcp-0011..tcp-0020 + udp-0011..udp-0020`, for messages.
    pub fn describe(&self) -> String {
        let range = |proto: Proto, first: u32, n: u32| match n {
            0 => format!("no {} flows", proto.as_str()),
            _ => format!(
                "{}..{}",
                flow_id(proto, first),
                flow_id(proto, first + n - 1)
            ),
        };
        format!(
            "{} + {}",
            range(Proto::Tcp, self.first_tcp, self.tcp),
            range(Proto::Udp, self.first_udp, self.udp)
        )
    }
}

/// Splits `tcp` and `udp` flows into `n` contiguous slices in id order, the first slices taking
/// the remainders, so that the slices together hold exactly the ids of one client.
pub fn slices(tcp: u32, udp: u32, n: u32) -> Vec<Slice> {
    let n = n.max(1);
    let share = |total: u32, i: u32| total / n + u32::from(i < total % n);
    let (mut next_tcp, mut next_udp) = (1, 1);
    (0..n)
        .map(|i| {
            let s = Slice {
                first_tcp: next_tcp,
                tcp: share(tcp, i),
                first_udp: next_udp,
                udp: share(udp, i),
            };
            next_tcp += s.tcp;
            next_udp += s.udp;
            s
        })
        .collect()
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Exit {
    code: Option<i32>,
    signal: Option<i32>,
}

impl Exit {
    fn clean(self) -> bool {
        matches!(self.code, Some(0 | CLOSED_ON_SIGNAL))
    }

    fn describe(self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exited with code {c}"),
            (None, Some(s)) => format!("was killed by signal {s}"),
            (None, None) => "ended with an unknown status".into(),
        }
    }
}

struct ShardChild {
    name: String,
    pid: Pid,
    slice: Slice,
    exited: watch::Receiver<Option<Exit>>,
    boot_id: watch::Receiver<Option<String>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl ShardChild {
    fn failure(&self, what: &str) -> String {
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

/// The running child processes of a sharded run.
pub struct Shards {
    children: Vec<ShardChild>,
    tasks: Vec<JoinHandle<()>>,
}

/// What the children are told beyond their slice.
pub struct ShardPlan<'a> {
    /// The drainwatch binary (this one).
    pub exe: &'a Path,
    /// Client processes.
    pub clients: u32,
    /// An upper bound on the trial: a child outlives a killed orchestrator by at most this.
    pub hold: Duration,
    /// How long a child may take to start streaming.
    pub ready: Duration,
}

fn child_args(ccfg: &ClientConfig, s: Slice, hold: Duration) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "client".into(),
        "--events-stdout".into(),
        "--host".into(),
        ccfg.host.clone(),
        "--tcp-port".into(),
        ccfg.tcp_port.to_string(),
        "--udp-port".into(),
        ccfg.udp_port.to_string(),
        "--tcp-flows".into(),
        s.tcp.to_string(),
        "--udp-flows".into(),
        s.udp.to_string(),
        "--first-tcp-flow".into(),
        s.first_tcp.to_string(),
        "--first-udp-flow".into(),
        s.first_udp.to_string(),
        "--interval".into(),
        format!("{}ms", ccfg.interval.as_millis()),
        "--flow-timeout".into(),
        format!("{}ms", ccfg.flow_timeout.as_millis()),
        "--udp-silence-datagrams".into(),
        ccfg.udp_silence_datagrams.to_string(),
        "--duration".into(),
        format!("{}s", hold.as_secs().max(1)),
    ];
    if ccfg.clock_extension {
        a.push("--clock-extension".into());
    }
    a
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
        let Ok(Some(mut l)) = EventLine::parse(text) else {
            eprintln!(
                "drainwatch: {name}: unparseable stdout line dropped: {}",
                text.chars().take(120).collect::<String>()
            );
            return;
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
struct Intake {
    rec: Recorder,
    tracker: Arc<Mutex<LineTracker>>,
    open: Arc<AtomicUsize>,
    done_tx: Arc<watch::Sender<bool>>,
}

fn spawn_child(
    plan: &ShardPlan<'_>,
    ccfg: &ClientConfig,
    i: usize,
    slice: Slice,
    intake: &Intake,
    tasks: &mut Vec<JoinHandle<()>>,
) -> Result<ShardChild, PlatformError> {
    let name = format!("client {} of {}", i + 1, plan.clients);
    let mut child = Command::new(plan.exe)
        .args(child_args(ccfg, slice, plan.hold))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            PlatformError::Clients(format!(
                "spawning {name} ({} client): {e}",
                plan.exe.display()
            ))
        })?;
    let pid = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .map(Pid::from_raw)
        .ok_or_else(|| PlatformError::Clients(format!("{name} exited before its pid was read")))?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(PlatformError::Clients(format!(
            "{name}: stdout/stderr were not captured"
        )));
    };
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
            eprintln!("{err_name}: {text}");
            if let Ok(mut t) = err_tail.lock() {
                if t.len() == STDERR_TAIL {
                    t.pop_front();
                }
                t.push_back(text);
            }
        }
    }));
    let (exit_tx, exited) = watch::channel(None);
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
        let _ = exit_tx.send(Some(exit));
    }));
    Ok(ShardChild {
        name,
        pid,
        slice,
        exited,
        boot_id,
        stderr: tail,
    })
}

/// Waits until `c` has streamed its header, and checks it runs on this kernel.
async fn wait_started(c: &ShardChild, ready: Duration, ours: &str) -> Result<(), String> {
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

/// Starts one child per slice and returns their merged flows once every child streams.
pub async fn start(
    plan: &ShardPlan<'_>,
    ccfg: &ClientConfig,
    rec: &Recorder,
) -> Result<(Flows, Shards), PlatformError> {
    let tracker = Arc::new(Mutex::new(LineTracker::new(ccfg.flow_ids())));
    let progress = tracker
        .lock()
        .map(|t| t.progress())
        .map_err(|_| PlatformError::Clients("the progress tracker is poisoned".into()))?;
    let parts = slices(ccfg.tcp_flows, ccfg.udp_flows, plan.clients);
    let (done_tx, done) = watch::channel(false);
    let intake = Intake {
        rec: rec.clone(),
        tracker,
        open: Arc::new(AtomicUsize::new(parts.len())),
        done_tx: Arc::new(done_tx),
    };
    let mut shards = Shards {
        children: Vec::new(),
        tasks: Vec::new(),
    };
    for (i, s) in parts.into_iter().enumerate() {
        let c = spawn_child(plan, ccfg, i, s, &intake, &mut shards.tasks);
        match c {
            Ok(c) => shards.children.push(c),
            Err(e) => {
                shards.kill_all();
                return Err(e);
            }
        }
    }
    let ours = host::boot_id().map_err(|e| PlatformError::Clients(e.to_string()))?;
    for c in &shards.children {
        if let Err(why) = wait_started(c, plan.ready, &ours).await {
            shards.kill_all();
            return Err(PlatformError::Clients(why));
        }
    }
    for c in &shards.children {
        rec.orchestrator(
            "client_process_started",
            format!(
                "{} pid {} runs `drainwatch client` for {}",
                c.name,
                c.pid,
                c.slice.describe()
            ),
        );
    }
    let close = CancellationToken::new();
    let closing = close.clone();
    let targets: Vec<(Pid, watch::Receiver<Option<Exit>>)> = shards
        .children
        .iter()
        .map(|c| (c.pid, c.exited.clone()))
        .collect();
    // Closing the window: SIGTERM makes each child record observation_end for its live flows,
    // print them and exit; the readers relay those last lines.
    shards.tasks.push(tokio::spawn(async move {
        closing.cancelled().await;
        for (pid, exited) in &targets {
            if exited.borrow().is_none() {
                let _ = kill(*pid, Signal::SIGTERM);
            }
        }
    }));
    Ok((Flows::relayed(progress, close, done), shards))
}

impl Shards {
    fn kill_all(&self) {
        for c in &self.children {
            if c.exited.borrow().is_none() {
                let _ = kill(c.pid, Signal::SIGKILL);
            }
        }
    }

    /// Ends every child (SIGKILL to any still running after the window closed) and names each
    /// one that did not end cleanly: its flows' evidence may be incomplete.
    pub async fn teardown(self, rec: &Recorder) -> Result<(), PlatformError> {
        let mut failed = Vec::new();
        for c in &self.children {
            if c.exited.borrow().is_none() {
                let _ = kill(c.pid, Signal::SIGKILL);
                rec.orchestrator(
                    "client_process_killed",
                    format!(
                        "{} pid {} still running at teardown; SIGKILL sent",
                        c.name, c.pid
                    ),
                );
            }
            let mut exited = c.exited.clone();
            let _ = tokio::time::timeout(Duration::from_secs(5), exited.wait_for(Option::is_some))
                .await;
            let exit = *c.exited.borrow();
            match exit {
                Some(e) if e.clean() => {}
                Some(e) => failed.push(c.failure(&e.describe())),
                None => failed.push(c.failure("did not exit within 5s of SIGKILL")),
            }
        }
        // The readers end with the children's pipes; the rest are done or no longer needed.
        for t in self.tasks {
            t.abort();
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(PlatformError::Clients(failed.join("; ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_hold_exactly_the_ids_of_one_client() {
        let s = slices(30, 7, 3);
        assert_eq!(
            s.iter().map(|s| (s.first_tcp, s.tcp)).collect::<Vec<_>>(),
            vec![(1, 10), (11, 10), (21, 10)]
        );
        assert_eq!(
            s.iter().map(|s| (s.first_udp, s.udp)).collect::<Vec<_>>(),
            vec![(1, 3), (4, 2), (6, 2)]
        );
        let ids = |s: &Slice| {
            let mut c = ClientConfig::new("h", 1, 2);
            (c.tcp_flows, c.udp_flows) = (s.tcp, s.udp);
            (c.first_tcp_flow, c.first_udp_flow) = (s.first_tcp, s.first_udp);
            c.flow_ids()
        };
        let mut all: Vec<String> = s.iter().flat_map(ids).collect();
        let mut one = ClientConfig::new("h", 1, 2);
        (one.tcp_flows, one.udp_flows) = (30, 7);
        let mut expected = one.flow_ids();
        all.sort();
        expected.sort();
        assert_eq!(all, expected);
        assert_eq!(s[1].describe(), "tcp-0011..tcp-0020 + udp-0004..udp-0005");
        assert_eq!(
            slices(0, 2, 2)[0].describe(),
            "no tcp flows + udp-0001..udp-0001"
        );
    }

    #[test]
    fn only_a_window_closed_by_a_signal_or_a_normal_end_is_clean() {
        let e = |code, signal| Exit { code, signal };
        assert!(e(Some(0), None).clean() && e(Some(130), None).clean());
        assert!(!e(Some(2), None).clean());
        assert!(!e(None, Some(9)).clean());
        assert_eq!(e(None, Some(9)).describe(), "was killed by signal 9");
    }
}
