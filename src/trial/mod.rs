//! The trial loop, written once for every platform: record the environment, start the
//! workload, preflight, settle, trigger at t=0, observe, close the window, report.

mod attach;
mod lost;
mod measure;
pub mod output;
mod replay;
mod stream;
pub use replay::{ReplayError, replay};
use stream::Collected;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::console;
use crate::evidence::assemble::{AssembleError, build_report};
use crate::evidence::environment::Environment;
use crate::evidence::event::EventName;
use crate::evidence::event::{EventLine, Source, TrialHeader};
use crate::evidence::plan::TrialConfig;
use crate::evidence::report::{RunSummary, SCHEMA_VERSION, TrialSummary, disagreements};
use crate::evidence::trigger::Triggered;
use crate::evidence::{html, table};
use crate::host;
use crate::net::ClientConfig;
use crate::platform::{Flows, Platform, PlatformError};
use crate::preflight;
use crate::recorder::Recorder;
use crate::recorder::journal::{self, Journal};
use output::OutputError;

/// How a run ended when no error stopped it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome {
    /// Every trial completed and its report was written.
    Completed,
    /// A signal interrupted a trial; its partial report (status aborted) was written.
    Interrupted,
}

/// Tool or infrastructure failures: no report for the failing trial (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    /// The platform failed.
    #[error(transparent)]
    Platform(#[from] PlatformError),
    /// A file could not be written.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// The events did not make a report.
    #[error("failed to assemble the report")]
    Assemble(#[source] AssembleError),
    /// Host facts unavailable.
    #[error(transparent)]
    Host(#[from] host::HostError),
    /// The client was lost in the middle of the trial (its pod deleted): a harness fault. The
    /// trial's report (status aborted, the flows it stopped watching not-measured) was written.
    #[error(
        "the client was lost mid-trial ({why}); the evidence until then is kept: {} (status aborted)",
        report.display()
    )]
    ClientLost {
        /// Why.
        why: String,
        /// The report written.
        report: PathBuf,
    },
    /// A trial failed; earlier trials keep their reports.
    #[error("{trial} aborted")]
    Trial {
        /// Which trial.
        trial: String,
        /// Why.
        #[source]
        source: Box<TrialError>,
    },
}

/// What a run needs beyond the trial configuration.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Trials in the run.
    pub repeat: u32,
    /// Output directory.
    pub out: PathBuf,
    /// Set by a signal handler to interrupt the run.
    pub interrupt: CancellationToken,
}

enum Phase {
    Done,
    Interrupted(&'static str),
    /// The client was lost under the trial (why): the window closed early.
    Lost(String),
}

/// How a trial ended, for its caller: whole, interrupted, or with its client lost.
enum Ended {
    Done,
    Interrupted,
    Lost(String),
}

/// Issues the trigger and records what the API answered. A refusal (a PDB forbidding the
/// eviction) terminates nothing, so there is nothing to observe: the window is closed at once
/// with `refused` as its reason, and `false` tells the caller the trial ends here.
async fn issue_trigger<P: Platform>(
    platform: &mut P,
    cfg: &TrialConfig,
    rec: &Recorder,
    client_slot: &Option<Flows>,
    issued: String,
    refused: &str,
) -> Result<bool, TrialError> {
    rec.orchestrator(EventName::TriggerIssued, issued);
    match platform.trigger(cfg, rec).await? {
        Triggered::Issued(result) => {
            rec.orchestrator(EventName::TriggerApiReturned, result);
            console::progress!("trigger: {} issued", cfg.trigger);
            Ok(true)
        }
        Triggered::Blocked(why) => {
            rec.orchestrator(EventName::TriggerApiReturned, why.clone());
            rec.orchestrator(EventName::TrialBlockedByPdb, why.clone());
            console::warning!("trigger: {} refused: {why}", cfg.trigger);
            if let Some(c) = client_slot.as_ref() {
                c.close().await;
            }
            rec.orchestrator(EventName::ObservationWindowClosed, refused.to_string());
            Ok(false)
        }
    }
}

async fn or_interrupt<T>(interrupt: &CancellationToken, f: impl Future<Output = T>) -> Option<T> {
    tokio::select! {
        biased;
        () = interrupt.cancelled() => None,
        v = f => Some(v),
    }
}

fn client_config(cfg: &TrialConfig, host: String, tcp_port: u16, udp_port: u16) -> ClientConfig {
    let mut c = ClientConfig::new(host, tcp_port, udp_port);
    c.tcp_flows = cfg.tcp_flows;
    c.udp_flows = cfg.udp_flows;
    c.interval = Duration::from_millis(cfg.interval_ms);
    c.flow_timeout = Duration::from_secs_f64(cfg.flow_timeout_seconds);
    c.udp_silence_datagrams = cfg.udp_silence_datagrams;
    c.clock_extension = true;
    c
}

/// The warning of `run --target --tls --insecure-skip-verify`, on stderr and in the report's
/// environment warnings.
pub const INSECURE_TLS_WARNING: &str = "--insecure-skip-verify: the attach client does NOT verify the server's TLS certificate; the server's identity was not checked";

fn insecure_tls(cfg: &TrialConfig) -> bool {
    cfg.kubernetes
        .as_ref()
        .and_then(|k| k.attach.as_ref())
        .and_then(|a| a.tls.as_ref())
        .is_some_and(|t| t.insecure_skip_verify)
}

/// A run in progress: the environment recorded once, the trials written so far. What
/// [`run`] loops over, and what the policy gate's retry loop (`gate::arms`) drives one attempt at
/// a time.
pub struct Session {
    out: PathBuf,
    env: Environment,
    boot_id: String,
    trials: Vec<TrialSummary>,
    /// The reports written so far, for the run's report.html.
    reports: Vec<(String, crate::evidence::report::Report)>,
    /// The run's restore journal (`recorder::journal`).
    journal: Journal,
}

/// One attempt as written: its report and whether a signal interrupted it.
pub struct Attempt {
    /// The report written.
    pub report: crate::evidence::report::Report,
    /// A signal interrupted it (its partial report, status aborted, was written).
    pub interrupted: bool,
}

impl Session {
    /// Checks `out`, records the environment and prepares the platform for `cfg`.
    pub async fn open<P: Platform>(
        platform: &mut P,
        cfg: &TrialConfig,
        out: &Path,
    ) -> Result<Self, TrialError> {
        output::check_writable(out)?;
        let mut env = platform.environment().await?;
        if insecure_tls(cfg) {
            env.warnings.push(INSECURE_TLS_WARNING.to_string());
        }
        platform.prepare(cfg).await?;
        let boot_id = host::boot_id()?;
        for w in &env.warnings {
            console::warning!("drainwatch: WARNING: {w}");
        }
        let run = env.run_id.clone().unwrap_or_else(host::run_id);
        let journal = Journal::new(
            &journal::state_dir(),
            journal::opened(&run, cfg.platform, out),
        );
        Ok(Self {
            journal,
            out: out.to_path_buf(),
            env,
            boot_id,
            trials: Vec::new(),
            reports: Vec::new(),
        })
    }

    /// Runs trial `id` and writes it to `out/<rel>` (`None`: `out` itself, a one-trial run);
    /// `heading` is the line printed before it.
    pub async fn trial<P: Platform>(
        &mut self,
        platform: &mut P,
        cfg: &TrialConfig,
        id: &str,
        rel: Option<&str>,
        heading: &str,
        interrupt: &CancellationToken,
    ) -> Result<Attempt, TrialError> {
        let dir = rel.map_or_else(|| self.out.clone(), |r| self.out.join(r));
        console::progress!(
            "\n=== {heading}: platform={} behavior={} trigger={} grace={}s ===",
            cfg.platform.as_str(),
            cfg.drain_behavior.map_or("-", |b| b.as_str()),
            cfg.trigger,
            cfg.grace_period_seconds
        );
        let failed = |e| TrialError::Trial {
            trial: id.to_string(),
            source: Box::new(e),
        };
        output::check_writable(&dir).map_err(|e| failed(e.into()))?;
        let trial = Trial {
            id,
            journal: &self.journal,
            dir: &dir,
            env: &self.env,
            boot_id: &self.boot_id,
        };
        let result = one_trial(platform, cfg, &trial, interrupt).await;
        self.finish_journal();
        let (lines, ended) = result.map_err(failed)?;
        let report = build_report(&lines).map_err(TrialError::Assemble)?;
        output::write_report(&dir, &report).map_err(|e| failed(e.into()))?;
        print!("\n{}", table::render(&report));
        console::result!("report written to {}", dir.join("report.json").display());
        let interrupted = match ended {
            Ended::Done => false,
            Ended::Interrupted => true,
            // A harness fault: the report is written, the run ends with the error (exit 2).
            Ended::Lost(why) => {
                return Err(failed(TrialError::ClientLost {
                    why,
                    report: dir.join("report.json"),
                }));
            }
        };
        let rel = rel.map_or_else(|| "report.json".to_string(), |r| format!("{r}/report.json"));
        self.trials.push(TrialSummary::of(&report, rel));
        self.reports.push((id.to_string(), report.clone()));
        Ok(Attempt {
            report,
            interrupted,
        })
    }

    /// After a trial: a journal with nothing left to restore is removed; one with changes
    /// teardown could not undo stays, and is named with the command that replays it.
    fn finish_journal(&self) {
        let run = self.env.run_id.as_deref().unwrap_or("ID");
        match self.journal.finish() {
            Ok(None) => {}
            Ok(Some(path)) => console::warning!(
                "drainwatch: the restore journal {} holds changes not restored; `drainwatch cleanup --run {run}` replays it",
                path.display()
            ),
            Err(e) => console::warning!(
                "drainwatch: WARNING: {}",
                crate::evidence::format::chain(&e)
            ),
        }
    }

    /// Writes `summary.json` and `report.html` for every trial run; `table` prints the run's
    /// table as well.
    pub fn close(self, table: bool) -> Result<(), TrialError> {
        let page_trials: Vec<html::PageTrial<'_>> = self
            .reports
            .iter()
            .map(|(id, r)| html::PageTrial {
                arm: None,
                id,
                report: Some(r),
            })
            .collect();
        let page = html::run_page(None, &page_trials);
        output::write_atomic(&self.out.join(html::HTML_FILE), page.as_bytes())?;
        console::result!(
            "HTML report written to {}",
            self.out.join(html::HTML_FILE).display()
        );
        let summary = RunSummary {
            schema_version: SCHEMA_VERSION.into(),
            drainwatch_version: host::VERSION.into(),
            git_commit: host::GIT_COMMIT.into(),
            environment: self.env,
            disagreements: disagreements(&self.trials),
            trials: self.trials,
        };
        output::write_summary(&self.out, &summary)?;
        if table {
            print!("\n{}", table::render_run(&summary));
        }
        console::result!(
            "summary written to {}",
            self.out.join("summary.json").display()
        );
        Ok(())
    }
}

/// Runs `opts.repeat` trials on `platform` and writes their reports under `opts.out`.
pub async fn run<P: Platform>(
    platform: &mut P,
    cfg: &TrialConfig,
    opts: &RunOptions,
) -> Result<RunOutcome, TrialError> {
    let mut session = Session::open(platform, cfg, &opts.out).await?;
    let mut outcome = RunOutcome::Completed;
    for i in 1..=opts.repeat {
        let id = format!("trial-{i:03}");
        let rel = (opts.repeat > 1).then_some(id.as_str());
        let heading = format!("{id} ({i} of {})", opts.repeat);
        let a = session
            .trial(platform, cfg, &id, rel, &heading, &opts.interrupt)
            .await?;
        if a.interrupted {
            outcome = RunOutcome::Interrupted;
            break;
        }
    }
    session.close(opts.repeat > 1)?;
    Ok(outcome)
}

/// Which trial, where its files go, and what its header records of the run.
struct Trial<'a> {
    id: &'a str,
    journal: &'a Journal,
    dir: &'a Path,
    env: &'a Environment,
    boot_id: &'a str,
}

/// One trial; returns its event lines (streamed to `dir/events.jsonl` as they came) and
/// how it ended.
async fn one_trial<P: Platform>(
    platform: &mut P,
    cfg: &TrialConfig,
    trial: &Trial<'_>,
    interrupt: &CancellationToken,
) -> Result<(Vec<EventLine>, Ended), TrialError> {
    let Trial {
        id,
        journal,
        dir,
        env,
        boot_id,
    } = *trial;
    let cfg = &platform.trial_config(cfg, id);
    let (rec, rx) = Recorder::new();
    let rec = rec.with_journal(journal.clone(), id);
    // A failed write to events.jsonl stops the trial as a signal would (`stop`); the
    // interrupt of the run is not touched, so the error, not 130, is the outcome.
    let stop = interrupt.child_token();
    let finish = CancellationToken::new();
    let collector = stream::start(dir, rx, stop.clone(), finish.clone())?;
    let mut header = EventLine::new(
        Source::Orchestrator,
        EventName::TrialStarted,
        host::mono_ns(),
    );
    header.header = Some(Box::new(TrialHeader {
        trial_id: id.to_string(),
        drainwatch_version: host::VERSION.into(),
        git_commit: host::GIT_COMMIT.into(),
        config: cfg.clone(),
        environment: env.clone(),
        boot_id: boot_id.to_string(),
        streamed: true,
    }));
    rec.send(header);

    let mut client: Option<Flows> = None;
    let result = measure::measure(platform, cfg, id, &rec, &stop, &mut client).await;
    if let Some(c) = &client {
        // Survivors get observation_end now if the window did not close normally.
        c.close().await;
    }
    let phase = match result {
        Ok(p) => p,
        Err(e) => {
            let _ = platform.teardown(&rec).await;
            // A failed write that stopped the trial is the cause of whatever error followed:
            // the recording stays, cut back to whole lines, and replays as cut off.
            finish.cancel();
            if let Ok(Collected { cut: Some(cut), .. }) = collector.await {
                return Err(cut.into());
            }
            // Any other error is a broken harness (a failed preflight check, a descriptor
            // budget, the platform): it leaves nothing in --out, the error names the step,
            // as before events were streamed. Only a run killed outright (SIGKILL), which
            // cannot clean up, leaves its streamed lines; they replay as aborted.
            let _ = std::fs::remove_file(dir.join("events.jsonl"));
            return Err(e);
        }
    };
    let cut = stop.is_cancelled() && !interrupt.is_cancelled();
    match &phase {
        Phase::Interrupted(during) => {
            let why = if cut {
                "stopped because events.jsonl could not be written"
            } else {
                "interrupted by a signal"
            };
            rec.orchestrator(
                EventName::TrialAborted,
                format!("{why} during {during}; the evidence so far is kept"),
            );
        }
        Phase::Lost(why) => {
            rec.orchestrator(
                EventName::TrialAborted,
                format!(
                    "the client was lost during observation ({why}); the window closed then, the flows it had not seen end are not-measured, and the evidence so far is kept"
                ),
            );
        }
        Phase::Done => {}
    }
    let torn = platform.teardown(&rec).await;
    rec.orchestrator(
        EventName::TrialEnded,
        "teardown done; every event of the trial is above this line".to_string(),
    );
    drop(rec);
    finish.cancel();
    let collected = collector.await.map_err(|e| OutputError::Write {
        path: dir.join("events.jsonl"),
        source: std::io::Error::other(e),
    })?;
    if let Some(e) = collected.cut {
        torn?;
        return Err(e.into());
    }
    torn?;
    let ended = match phase {
        Phase::Done => Ended::Done,
        Phase::Interrupted(_) => Ended::Interrupted,
        Phase::Lost(why) => Ended::Lost(why),
    };
    Ok((collected.lines, ended))
}

impl preflight::Failure {
    fn into_trial(self) -> TrialError {
        TrialError::Platform(PlatformError::Preflight(self))
    }
}

/// Closes the observation window: the client stops and the window's end is recorded.
async fn close_window(client_slot: &Option<Flows>, rec: &Recorder, detail: String) {
    if let Some(c) = client_slot.as_ref() {
        c.close().await;
    }
    rec.orchestrator(EventName::ObservationWindowClosed, detail);
}
