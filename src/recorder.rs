//! The trial's event intake: every source sends event lines here, stamped on the
//! orchestrator's monotonic clock, in the order they were received.

pub mod journal;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::console;
use crate::evidence::event::{EventLine, EventName, Source};
use crate::evidence::journal::Change;
use crate::evidence::settings::TerminationSettings;
use crate::evidence::timeline::format_wall_ns;
use crate::host;
use journal::{Journal, JournalError, Seq};

/// Where event lines go.
pub type Sink = UnboundedSender<EventLine>;

/// A cloneable handle for sending event lines into the trial, and for recording in the
/// run's restore journal what the trial changes.
#[derive(Clone)]
pub struct Recorder {
    sink: Sink,
    /// The run's journal and the trial's id; None where nothing is changed (the client).
    journal: Option<(Journal, String)>,
}

impl Recorder {
    /// A recorder and the receiving end the collector drains.
    pub fn new() -> (Self, UnboundedReceiver<EventLine>) {
        let (sink, rx) = unbounded_channel();
        (
            Self {
                sink,
                journal: None,
            },
            rx,
        )
    }

    /// The same recorder, recording trial `trial`'s changes in `journal`.
    #[must_use]
    pub fn with_journal(mut self, journal: Journal, trial: &str) -> Self {
        self.journal = Some((journal, trial.to_string()));
        self
    }

    /// Records `change` in the run's journal before it is made; an error means it must not
    /// be made. None: this recorder has no journal (nothing it serves changes the world).
    pub fn made(&self, change: Change) -> Result<Option<Seq>, JournalError> {
        match &self.journal {
            Some((j, trial)) => j.made(trial, change).map(Some),
            None => Ok(None),
        }
    }

    /// Records that change `seq` was restored. The restore is done whatever this returns, so
    /// a failure is said on stderr, not returned: cleanup would find it restored already.
    pub fn restored(&self, seq: Option<Seq>, how: &str) {
        if let (Some((j, _)), Some(seq)) = (&self.journal, seq)
            && let Err(e) = j.restored(seq, how)
        {
            console::warning!(
                "drainwatch: WARNING: {}",
                crate::evidence::format::chain(&e)
            );
        }
    }

    /// Records that the pending change equal to `change` was restored (see [`Self::restored`]).
    pub fn restored_change(&self, change: &Change, how: &str) {
        if let Some((j, _)) = &self.journal
            && let Err(e) = j.restored_change(change, how)
        {
            console::warning!(
                "drainwatch: WARNING: {}",
                crate::evidence::format::chain(&e)
            );
        }
    }

    /// The raw sink, for the client's flows.
    pub fn sink(&self) -> Sink {
        self.sink.clone()
    }

    /// Records an orchestrator event now; returns its time.
    pub fn orchestrator(&self, event: EventName, detail: impl Into<Option<String>>) -> i64 {
        self.on_node(event, detail, None)
    }

    /// Records an orchestrator event now with the node it concerns (a client pod's, when
    /// known); returns its time.
    pub fn on_node(
        &self,
        event: EventName,
        detail: impl Into<Option<String>>,
        node: Option<String>,
    ) -> i64 {
        let (mut l, at) = Self::now(event);
        l.detail = detail.into();
        l.node = node;
        self.send(l);
        at
    }

    /// Records `client_lost` now: the whole client's (`shard` None) or one shard's (from 1), on
    /// the node it ran on when known.
    pub fn client_lost(&self, shard: Option<u32>, why: String, node: Option<String>) {
        let (mut l, _) = Self::now(EventName::ClientLost);
        l.detail = Some(why);
        l.node = node;
        l.shard = shard;
        self.send(l);
    }

    /// An orchestrator line of `event` at this instant, with its wall time; and that instant.
    fn now(event: EventName) -> (EventLine, i64) {
        let at = host::mono_ns();
        let mut l = EventLine::new(Source::Orchestrator, event, at);
        l.wall = Some(format_wall_ns(host::wall_ns()));
        (l, at)
    }

    /// Records the workload's termination settings (`termination_settings_recorded`), with
    /// their one-line description as the detail.
    pub fn termination_settings(&self, settings: TerminationSettings) {
        let (mut l, _) = Self::now(EventName::TerminationSettingsRecorded);
        l.detail = Some(settings.describe());
        l.termination_settings = Some(Box::new(settings));
        self.send(l);
    }

    /// Records a line as it is (its `at_ns` must be set by the caller).
    pub fn send(&self, line: EventLine) {
        let _ = self.sink.send(line);
    }
}
