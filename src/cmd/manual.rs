//! What `drainwatch client` and `drainwatch client --attach` share: a manual run's recorder,
//! opened with its `trial_started` header, and its end, where the lines become a report.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};

use drainwatch::evidence::event::{EventLine, EventName, Source, TrialHeader};
use drainwatch::evidence::plan::TrialConfig;
use drainwatch::evidence::{assemble, html, table};
use drainwatch::host;
use drainwatch::platform::Platform as _;
use drainwatch::platform::local::LocalPlatform;
use drainwatch::recorder::Recorder;
use drainwatch::trial::output;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

use super::EXIT_INTERRUPTED;
use drainwatch::console;

/// The recorder of a manual client run, its `trial_started` header already sent: this
/// machine's environment and `cfg`.
pub(super) async fn manual_recorder(
    cfg: TrialConfig,
) -> Result<(Recorder, UnboundedReceiver<EventLine>)> {
    let mut local = LocalPlatform::new(std::path::PathBuf::new(), 1, Duration::ZERO);
    let env = local.environment().await?;
    let (rec, rx) = Recorder::new();
    let mut header = EventLine::new(
        Source::Orchestrator,
        EventName::TrialStarted,
        host::mono_ns(),
    );
    header.header = Some(Box::new(TrialHeader {
        trial_id: "client-manual".into(),
        drainwatch_version: host::VERSION.into(),
        git_commit: host::GIT_COMMIT.into(),
        config: cfg,
        environment: env,
        boot_id: host::boot_id()?,
        streamed: false,
    }));
    rec.send(header);
    Ok((rec, rx))
}

/// How a manual run ends.
pub(super) struct Ending<'a> {
    /// A signal stopped the run: it is recorded as aborted.
    pub interrupted: bool,
    /// Print the report's table on stdout (stdout does not carry the event lines).
    pub print_table: bool,
    /// `--out`.
    pub out: Option<&'a Path>,
    /// What the written records are, for the message that names their path.
    pub records: &'a str,
}

/// Closes the recorder, waits for the collected lines, and turns them into the report: printed,
/// written under `--out`, or both; the exit code says whether a signal stopped the run.
pub(super) async fn finish(
    rec: Recorder,
    collector: JoinHandle<Vec<EventLine>>,
    end: Ending<'_>,
) -> Result<u8> {
    if end.interrupted {
        rec.orchestrator(
            EventName::TrialAborted,
            "interrupted by a signal".to_string(),
        );
    }
    drop(rec);
    let lines = collector.await.context("the event collector failed")?;
    let report = assemble::build_report(&lines)?;
    if end.print_table {
        print!("{}", table::render(&report));
    }
    if let Some(dir) = end.out {
        output::write_trial(dir, &report, &lines)?;
        output::write_atomic(
            &dir.join(html::HTML_FILE),
            html::trial_page(&report).as_bytes(),
        )?;
        console::result!(
            "{} written to {} (and {})",
            end.records,
            dir.join("report.json").display(),
            html::HTML_FILE
        );
    }
    Ok(if end.interrupted { EXIT_INTERRUPTED } else { 0 })
}
