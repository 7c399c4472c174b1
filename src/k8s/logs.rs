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
use crate::trial::recorder::Recorder;

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
        let mut reopens = 0u32;
        let mut opened_once = false;
        loop {
            let stream = tokio::select! {
                () = cancel.cancelled() => break,
                s = api.log_stream(&pod, &params) => s,
            };
            match stream {
                Ok(reader) => {
                    if !opened_once {
                        opened_once = true;
                        rec.orchestrator(
                            EventName::LogStreamOpened,
                            format!("following container {container} of pod {pod}"),
                        );
                    } else {
                        rec.orchestrator(
                            EventName::LogStreamResumed,
                            format!("reopened the log of {pod}/{container} (attempt {reopens}); lines already received are skipped"),
                        );
                    }
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
                // Not started yet (ContainerCreating) or briefly unreachable: try again.
                Err(_) if !opened_once => {}
                Err(e) => {
                    rec.orchestrator(
                        EventName::LogStreamError,
                        format!("reopening the log of {pod}/{container} failed: {e}"),
                    );
                }
            }
            if cancel.is_cancelled() {
                break;
            }
            // The log usually ends a moment before the watch reports the container's exit.
            if opened_once
                && tokio::time::timeout(Duration::from_secs(2), pods.wait_for(|v| ended(v)))
                    .await
                    .is_ok_and(|r| r.is_ok())
            {
                break;
            }
            reopens += 1;
            if reopens > MAX_REOPENS && opened_once {
                rec.orchestrator(
                    EventName::LogStreamAbandoned,
                    format!("the log of {pod}/{container} kept ending while the container ran; gave up after {MAX_REOPENS} reopens"),
                );
                break;
            }
            if opened_once {
                rec.orchestrator(
                    EventName::LogStreamInterrupted,
                    format!("the log stream of {pod}/{container} ended while the container still runs; reopening"),
                );
            }
            tokio::time::sleep(Duration::from_millis(if opened_once { 200 } else { 250 })).await;
        }
        let _ = done_tx.send(true);
    });
    Follower { task, done }
}
