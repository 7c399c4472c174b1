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

/// Running flows: their progress, and the close of the observation window.
pub struct Flows {
    /// Where each flow stands.
    pub progress: Arc<Progress>,
    inner: Inner,
}

impl Flows {
    /// Flows dialled by this process.
    pub fn in_process(client: ClientHandle) -> Self {
        Self {
            progress: client.progress.clone(),
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
            inner: Inner::Relayed { close, done },
        }
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
