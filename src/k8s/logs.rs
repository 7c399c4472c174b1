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

/// Follows `container` of `pod`, calling `on_line(text, received_at_ns)` per line, until the
/// stream ends and the pod watch shows the container ended (`ended`), or `cancel` fires.
#[allow(clippy::too_many_arguments)]
pub fn follow(
    api: Api<Pod>,
    pod: String,
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
            ..LogParams::default()
        };
        let mut s = Streams {
            pod,
            container,
            rec,
            reopens: 0,
            opened_once: false,
        };
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

/// The successive log streams of one container, and what the trial is told about them.
struct Streams {
    pod: String,
    container: &'static str,
    rec: Recorder,
    reopens: u32,
    opened_once: bool,
}

impl Streams {
    /// A stream opened: the first, or a resumption.
    fn opened(&mut self) {
        let (pod, container) = (&self.pod, self.container);
        if self.opened_once {
            self.rec.orchestrator(
                EventName::LogStreamResumed,
                format!("reopened the log of {pod}/{container} (attempt {}); lines already received are skipped", self.reopens),
            );
        } else {
            self.opened_once = true;
            self.rec.orchestrator(
                EventName::LogStreamOpened,
                format!("following container {container} of pod {pod}"),
            );
        }
    }

    /// Reopening a stream that had opened before failed.
    fn failed(&self, e: &kube::Error) {
        self.rec.orchestrator(
            EventName::LogStreamError,
            format!(
                "reopening the log of {}/{} failed: {e}",
                self.pod, self.container
            ),
        );
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
    /// ending while it runs.
    fn reopen(&mut self) -> bool {
        let (pod, container) = (&self.pod, self.container);
        self.reopens += 1;
        if self.reopens > MAX_REOPENS && self.opened_once {
            self.rec.orchestrator(
                EventName::LogStreamAbandoned,
                format!("the log of {pod}/{container} kept ending while the container ran; gave up after {MAX_REOPENS} reopens"),
            );
            return false;
        }
        if self.opened_once {
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
