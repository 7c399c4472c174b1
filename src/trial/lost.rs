//! The trial's client lost under it (a client pod deleted): the waits of the observation race
//! it, and the window it cuts short is closed by name.

use std::future::Future;

use super::{Phase, close_window};
use crate::console;
use crate::platform::Flows;
use crate::recorder::Recorder;

/// Races `f` against the loss of the trial's client: `Err(why)` when the client was lost
/// first.
pub(super) async fn or_lost<T>(
    client_slot: &Option<Flows>,
    f: impl Future<Output = T>,
) -> Result<T, String> {
    let lost = async {
        match client_slot {
            Some(c) => c.lost().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        why = lost => Err(why),
        v = f => Ok(v),
    }
}

/// The end of a window the client's loss cut short: said on stderr, the client's last lines
/// collected, the window closed early by name.
pub(super) async fn lost_window(client_slot: &Option<Flows>, rec: &Recorder, why: String) -> Phase {
    console::warning!("drainwatch: the client was lost: {why}; closing the window");
    close_window(
        client_slot,
        rec,
        format!(
            "closed early: the client was lost ({why}); flows it had not seen end are not-measured"
        ),
    )
    .await;
    Phase::Lost(why)
}
