//! The trial's event intake: every source sends event lines here, stamped on the
//! orchestrator's monotonic clock, in the order they were received.

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::evidence::event::{EventLine, EventName, Source};
use crate::evidence::settings::TerminationSettings;
use crate::evidence::timeline::format_wall_ns;
use crate::host;

/// Where event lines go.
pub type Sink = UnboundedSender<EventLine>;

/// A cloneable handle for sending event lines into the trial.
#[derive(Clone)]
pub struct Recorder {
    sink: Sink,
}

impl Recorder {
    /// A recorder and the receiving end the collector drains.
    pub fn new() -> (Self, UnboundedReceiver<EventLine>) {
        let (sink, rx) = unbounded_channel();
        (Self { sink }, rx)
    }

    /// The raw sink, for the client's flows.
    pub fn sink(&self) -> Sink {
        self.sink.clone()
    }

    /// Records an orchestrator event now; returns its time.
    pub fn orchestrator(&self, event: EventName, detail: impl Into<Option<String>>) -> i64 {
        let at = host::mono_ns();
        let mut l = EventLine::new(Source::Orchestrator, event, at);
        l.detail = detail.into();
        l.wall = Some(format_wall_ns(host::wall_ns()));
        let _ = self.sink.send(l);
        at
    }

    /// Records the workload's termination settings (`termination_settings_recorded`), with
    /// their one-line description as the detail.
    pub fn termination_settings(&self, settings: TerminationSettings) {
        let at = host::mono_ns();
        let mut l = EventLine::new(
            Source::Orchestrator,
            EventName::TerminationSettingsRecorded,
            at,
        );
        l.detail = Some(settings.describe());
        l.wall = Some(format_wall_ns(host::wall_ns()));
        l.termination_settings = Some(Box::new(settings));
        let _ = self.sink.send(l);
    }

    /// Records a line as it is (its `at_ns` must be set by the caller).
    pub fn send(&self, line: EventLine) {
        let _ = self.sink.send(line);
    }
}
