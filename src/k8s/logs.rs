//! Following a container's log (pods/log with follow), line by line, stamped with the local
//! receive time. A stream that ends while the container still runs (a cut connection) is
//! reopened from the start; the caller drops lines it already has by their `line` counter.

use std::time::Duration;

use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::LogParams;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::watch::PodsView;
use crate::evidence::event::EventName;
use crate::host;
use crate::recorder::Recorder;

/// Reopen attempts before the follower gives up on a container that keeps running.
const MAX_REOPENS: u32 = 50;

/// A running follower.
pub struct Follower {
    /// The task.
    pub task: JoinHandle<()>,
    /// True once the follower has stopped (the container ended, or it was cancelled).
    pub done: watch::Receiver<bool>,
}

/// Where a followed log starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum From {
    /// The container's first line (drainwatch's own pods: every line is the trial's), and
    /// again from the first after a reopen (the caller drops lines it has).
    Start,
    /// Lines written from now on (a controller that ran before the trial, whose older lines
    /// are other runs'); a reopen also starts from then, so lines in the gap are lost, never
    /// doubled.
    Now,
}

/// Follows `container` of `pod`, calling `on_line(text, received_at_ns)` per line, until the
/// stream ends and the pod watch shows the container ended (`ended`), or `cancel` fires.
#[allow(clippy::too_many_arguments)]
pub fn follow(
    api: Api<Pod>,
    (pod, from): (String, From),
    container: &'static str,
    rec: Recorder,
    mut on_line: impl FnMut(&str, i64) + Send + 'static,
    mut pods: watch::Receiver<PodsView>,
    ended: impl Fn(&PodsView) -> bool + Send + Sync + 'static,
    cancel: CancellationToken,
) -> Follower {
    let (done_tx, done) = watch::channel(false);
    let task = tokio::spawn(async move {
        let params = LogParams {
            container: Some(container.to_string()),
            follow: true,
            tail_lines: (from == From::Now).then_some(0),
            ..LogParams::default()
        };
        let mut s = Streams::new(pod, container, rec);
        loop {
            let stream = tokio::select! {
                () = cancel.cancelled() => break,
                r = api.log_stream(&s.pod, &params) => r,
            };
            match stream {
                Ok(reader) => {
                    s.opened();
                    read_lines(reader, &mut on_line, &cancel).await;
                }
                // Not started yet (ContainerCreating) or briefly unreachable: try again.
                Err(_) if !s.opened_once => {}
                Err(e) => s.failed(&e),
            }
            if cancel.is_cancelled() || s.container_ended(&mut pods, &ended).await || !s.reopen() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(if s.opened_once { 200 } else { 250 })).await;
        }
        let _ = done_tx.send(true);
    });
    Follower { task, done }
}

/// The successive log streams of one container, and what the trial is told about them: each
/// interruption once, the first failed reopen of a run of them once (its error), the rest
/// counted and said when the stream resumes or is given up, so a log that cannot be reached
/// (its node's kubelet down) is not a line every two seconds.
struct Streams {
    pod: String,
    container: &'static str,
    rec: Recorder,
    reopens: u32,
    opened_once: bool,
    /// The last attempt opened a stream (so its end is an interruption to report).
    streaming: bool,
    /// Reopen attempts that failed in a row since the last open.
    failing: u32,
}

impl Streams {
    fn new(pod: String, container: &'static str, rec: Recorder) -> Self {
        Self {
            pod,
            container,
            rec,
            reopens: 0,
            opened_once: false,
            streaming: false,
            failing: 0,
        }
    }

    /// A stream opened: the first, or a resumption.
    fn opened(&mut self) {
        let (pod, container) = (&self.pod, self.container);
        if self.opened_once {
            let after = match self.failing {
                0 => String::new(),
                n => format!(", after {n} failed reopens"),
            };
            self.rec.orchestrator(
                EventName::LogStreamResumed,
                format!("reopened the log of {pod}/{container} (attempt {}{after}); lines already received are skipped", self.reopens),
            );
        } else {
            self.opened_once = true;
            self.rec.orchestrator(
                EventName::LogStreamOpened,
                format!("following container {container} of pod {pod}"),
            );
        }
        self.streaming = true;
        self.failing = 0;
    }

    /// A reopen failed: the first of a run is recorded with its error, the others counted.
    fn failed(&mut self, e: &dyn std::fmt::Display) {
        self.streaming = false;
        self.failing += 1;
        if self.failing == 1 {
            self.rec.orchestrator(
                EventName::LogStreamError,
                format!(
                    "reopening the log of {}/{} failed: {e}; retrying, further failures are counted (said when it reopens or is given up)",
                    self.pod, self.container
                ),
            );
        }
    }

    /// Whether the container ended: the log usually ends a moment before the watch reports
    /// the container's exit, so the watch gets 2 s to say so.
    async fn container_ended(
        &self,
        pods: &mut watch::Receiver<PodsView>,
        ended: &impl Fn(&PodsView) -> bool,
    ) -> bool {
        self.opened_once
            && tokio::time::timeout(Duration::from_secs(2), pods.wait_for(|v| ended(v)))
                .await
                .is_ok_and(|r| r.is_ok())
    }

    /// Counts a reopen; false when the follower gives up on a container whose log keeps
    /// ending while it runs, or cannot be reopened.
    fn reopen(&mut self) -> bool {
        let (pod, container) = (&self.pod, self.container);
        self.reopens += 1;
        if self.reopens > MAX_REOPENS && self.opened_once {
            self.rec.orchestrator(
                EventName::LogStreamAbandoned,
                format!("the log of {pod}/{container} kept ending while the container ran, or could not be reopened ({} failed in a row); gave up after {MAX_REOPENS} reopens", self.failing),
            );
            return false;
        }
        if self.opened_once && self.streaming {
            self.streaming = false;
            self.rec.orchestrator(
                EventName::LogStreamInterrupted,
                format!("the log stream of {pod}/{container} ended while the container still runs; reopening"),
            );
        }
        true
    }
}

/// Hands every line of one stream to `on_line` until it ends, breaks, or `cancel` fires.
async fn read_lines(
    reader: impl futures::AsyncBufRead + Unpin,
    on_line: &mut impl FnMut(&str, i64),
    cancel: &CancellationToken,
) {
    let mut lines = reader.lines();
    loop {
        let next = tokio::select! {
            () = cancel.cancelled() => None,
            l = lines.next() => l,
        };
        match next {
            Some(Ok(text)) => on_line(&text, host::mono_ns()),
            Some(Err(_)) | None => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_log_is_said_once_and_counted_not_logged_per_attempt() {
        let (rec, mut rx) = Recorder::new();
        let mut s = Streams::new("p".into(), "probe", rec);
        s.opened();
        // The stream ends (the kubelet stops), then 5 reopens fail, then one succeeds.
        assert!(s.reopen());
        for _ in 0..5 {
            s.failed(&"connection refused");
            assert!(s.reopen());
        }
        s.opened();
        let mut got = Vec::new();
        while let Ok(l) = rx.try_recv() {
            got.push((l.event, l.detail.unwrap_or_default()));
        }
        let names: Vec<&EventName> = got.iter().map(|(e, _)| e).collect();
        assert_eq!(
            names,
            [
                &EventName::LogStreamOpened,
                &EventName::LogStreamInterrupted,
                &EventName::LogStreamError,
                &EventName::LogStreamResumed,
            ]
        );
        assert!(got[2].1.contains("connection refused"), "{}", got[2].1);
        assert!(got[3].1.contains("after 5 failed reopens"), "{}", got[3].1);
    }
}
