//! One file per subcommand; each turns parsed flags into a run and an exit code.

pub mod attach;
pub mod ci;
pub mod ci_baseline;
pub mod cleanup;
pub mod client;
pub mod compare;
pub mod manifests;
mod manual;
pub mod probe;
pub mod rbac;
pub mod report;
pub mod run;

use anyhow::{Context, Result};
use drainwatch::console;
use tokio_util::sync::CancellationToken;

/// Exit code: a policy threshold was missed (a real disruption).
pub const EXIT_POLICY: u8 = 1;
/// Exit code: the tool or the infrastructure failed; no report.
pub const EXIT_TOOL: u8 = 2;
/// Exit code: interrupted; the partial report is marked aborted.
pub const EXIT_INTERRUPTED: u8 = 130;

/// The multi-threaded runtime every subcommand uses.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("failed to start the async runtime")
}

/// SIGINT or SIGTERM cancels the token; the run then cleans up and keeps partial evidence.
pub fn interrupt_on_signals() -> Result<CancellationToken> {
    use tokio::signal::unix::{SignalKind, signal};
    let token = CancellationToken::new();
    let mut int =
        signal(SignalKind::interrupt()).context("failed to install the SIGINT handler")?;
    let mut term =
        signal(SignalKind::terminate()).context("failed to install the SIGTERM handler")?;
    let t = token.clone();
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        };
        console::warning!(
            "drainwatch: {name} received: closing the trial, cleaning up, keeping the evidence so far"
        );
        t.cancel();
    });
    Ok(token)
}
