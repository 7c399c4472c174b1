//! The flows of one trial, wherever the client runs: in this process, or elsewhere (a client
//! pod) with its events relayed. The trial loop sees only progress and a way to close.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::net::ClientHandle;
use crate::net::progress::Progress;

enum Inner {
    InProcess(ClientHandle),
    Relayed {
        close: CancellationToken,
        done: watch::Receiver<bool>,
    },
}

/// How far an attach client (held connections and the new-connection prober) has come.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AttachProgress {
    /// Held connections opened for the first time (`attach_conn_opened`).
    pub opened: u32,
    /// Held connections whose first dial failed (`attach_conn_open_failed` before opening).
    pub open_failed: u32,
    /// Prober dials served (`attach_dial` with result `served`).
    pub served: u32,
    /// Prober dials that failed.
    pub dial_failed: u32,
    /// How the last failed dial failed (its result, and the status a response carried: `status
    /// 404` through an ingress with no rule for the Host), for the preflight's failure.
    pub last_dial_failure: Option<String>,
}

/// Running flows: their progress, and the close of the observation window.
pub struct Flows {
    /// Where each flow stands.
    pub progress: Arc<Progress>,
    /// An attach client's counts (None for probe flows).
    pub attach: Option<watch::Receiver<AttachProgress>>,
    /// A client elsewhere that can be lost under the trial: why, once it was (see
    /// [`Flows::lost`]); None for flows of this process.
    lost: Option<watch::Receiver<Option<String>>>,
    inner: Inner,
}

impl Flows {
    /// Flows dialled by this process.
    pub fn in_process(client: ClientHandle) -> Self {
        Self {
            progress: client.progress.clone(),
            attach: None,
            lost: None,
            inner: Inner::InProcess(client),
        }
    }

    /// Flows run elsewhere: `close` asks the remote client to close its window, and `done`
    /// turns true once its last event has been relayed.
    pub fn relayed(
        progress: Arc<Progress>,
        close: CancellationToken,
        done: watch::Receiver<bool>,
    ) -> Self {
        Self {
            progress,
            attach: None,
            lost: None,
            inner: Inner::Relayed { close, done },
        }
    }

    /// These flows are an attach client's, whose counts `attach` follows.
    pub fn with_attach(mut self, attach: watch::Receiver<AttachProgress>) -> Self {
        self.attach = Some(attach);
        self
    }

    /// These flows' client can be lost under the trial (its pod deleted): `lost` turns to
    /// `Some(why)` when it ended before [`Flows::close`] asked it to.
    pub fn with_loss(mut self, lost: watch::Receiver<Option<String>>) -> Self {
        self.lost = Some(lost);
        self
    }

    /// Why the client was lost, once it is; pending for ever while it is not (and for a client
    /// that cannot be lost), so it is raced against the trial's other waits.
    pub async fn lost(&self) -> String {
        let Some(lost) = &self.lost else {
            return std::future::pending().await;
        };
        let mut lost = lost.clone();
        let why = match lost.wait_for(Option::is_some).await {
            Ok(v) => v.clone(),
            // The watcher is gone without seeing a loss: none will be seen.
            Err(_) => None,
        };
        match why {
            Some(why) => why,
            None => std::future::pending().await,
        }
    }

    /// Why the client was lost, if it has been by now.
    pub fn lost_now(&self) -> Option<String> {
        self.lost.as_ref().and_then(|l| l.borrow().clone())
    }

    /// Closes the observation window: every live flow records `observation_end`. Idempotent.
    /// A relayed client gets 30 s to deliver its last lines; a flow whose end never arrives
    /// stays without a terminal event and is reported as such.
    pub async fn close(&self) {
        match &self.inner {
            Inner::InProcess(c) => c.close().await,
            Inner::Relayed { close, done } => {
                close.cancel();
                let mut done = done.clone();
                let _ = tokio::time::timeout(Duration::from_secs(30), done.wait_for(|d| *d)).await;
            }
        }
    }
}
