//! The per-flow state machine: a fold over one flow's observations.
//!
//! The client edge runs this same machine live to learn when a flow has ended, and the report
//! builder runs it again over `events.jsonl`, so a replay cannot disagree with the live run.
//! The first terminal observation latches; nothing after it changes the record.

use serde::{Deserialize, Serialize};

use super::classify::{self, Mechanism, Op, Outcome};
use super::event::{EventLine, EventName};

/// Transport of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    /// A TCP connection with heartbeats.
    Tcp,
    /// A connected UDP socket with ping/ack.
    Udp,
}

impl Proto {
    /// The name written in reports and flow ids.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tcp => "tcp",
            Self::Udp => "udp",
        }
    }

    /// The protocol a flow id names (`tcp-0001`), if any.
    pub fn of_flow_id(id: &str) -> Option<Self> {
        if id.starts_with("tcp-") {
            Some(Self::Tcp)
        } else if id.starts_with("udp-") {
            Some(Self::Udp)
        } else {
            None
        }
    }
}

/// The id of the `n`th flow (1-based) of a protocol: `tcp-0001`.
pub fn flow_id(proto: Proto, n: u32) -> String {
    format!("{}-{n:04}", proto.as_str())
}

/// Where a flow sits in a report: by protocol, then by number, so `tcp-10000` (ids get a fifth
/// digit past 9,999 flows of a protocol) follows `tcp-9999` instead of sorting as a string
/// between `tcp-1000` and `tcp-1001`. The id itself breaks any tie.
pub fn flow_order(proto: Proto, id: &str) -> (Proto, u64, String) {
    let n = id
        .split_once('-')
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(u64::MAX);
    (proto, n, id.to_string())
}

/// One thing the client saw on a flow.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    /// The dial succeeded.
    Connected,
    /// The dial gave up.
    DialFailed(String),
    /// A heartbeat (TCP) or ack (UDP).
    Data {
        /// Sequence number carried by the reply.
        seq: Option<u64>,
        /// Instance that answered.
        instance: Option<String>,
    },
    /// The server's drain announcement.
    Bye {
        /// Sequence number of the announcement.
        seq: Option<u64>,
    },
    /// A silence longer than the gap threshold (never terminal).
    Gap,
    /// A line the client did not understand (never terminal).
    Unrecognised,
    /// The server closed its side (FIN).
    Eof,
    /// A socket error.
    SocketError {
        /// Which operation failed.
        op: Op,
        /// Symbolic errno.
        errno: Option<String>,
        /// The OS message.
        message: Option<String>,
    },
    /// Too many unanswered UDP datagrams.
    Silence {
        /// How many were unanswered.
        unanswered: u64,
    },
    /// No bytes for the whole flow timeout.
    ReadTimeout(Option<String>),
    /// drainwatch closed the flow at the end of the window.
    ObservationEnd,
    /// An event name this build does not know: a harness bug, never guessed at.
    Unknown(String),
}

impl Observation {
    /// Reads a client event line; `None` when the line is not a flow observation.
    pub fn from_line(line: &EventLine) -> Option<Self> {
        let detail = || line.detail.clone();
        Some(match &line.event {
            EventName::FlowConnected => Self::Connected,
            EventName::FlowDialFailed => Self::DialFailed(detail().unwrap_or_default()),
            EventName::FlowData => Self::Data {
                seq: line.seq,
                instance: line.instance.clone(),
            },
            EventName::FlowBye => Self::Bye { seq: line.seq },
            EventName::FlowGap => Self::Gap,
            EventName::FlowUnrecognised => Self::Unrecognised,
            EventName::FlowEof => Self::Eof,
            EventName::FlowSocketError => Self::SocketError {
                op: line.op.unwrap_or(Op::Read),
                errno: line.errno.clone(),
                message: detail(),
            },
            EventName::FlowSilence => Self::Silence {
                unanswered: line.seq.unwrap_or(0),
            },
            EventName::FlowReadTimeout => Self::ReadTimeout(detail()),
            EventName::FlowObservationEnd => Self::ObservationEnd,
            EventName::FlowClockSample | EventName::FlowSent => return None,
            EventName::Unknown(other) if other.as_str().starts_with("flow_") => {
                Self::Unknown(other.as_str().to_string())
            }
            _ => return None,
        })
    }
}

/// The end of a flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terminal {
    /// When, on the recorder's clock; `None` for a window close (survived has no end time).
    pub at_ns: Option<i64>,
    /// The outcome.
    pub outcome: Outcome,
    /// The mechanism.
    pub mechanism: Mechanism,
    /// Human detail, Go-compatible text.
    pub detail: String,
}

/// Both ends of a re-homing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rehome {
    /// The instance that answered first.
    pub from: String,
    /// The instance that answered later.
    pub to: String,
    /// Last reply from `from`.
    pub last_original_ns: Option<i64>,
    /// First reply from `to`.
    pub first_new_ns: i64,
}

/// What a step did to the record, so the recorder can coalesce routine data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The flow was already terminal: nothing changed.
    Ignored,
    /// Only `last_seq` / `last_data` moved.
    Absorbed,
    /// Something a report shows changed.
    Changed,
    /// This observation ended the flow.
    Terminal,
}

/// The record of one flow.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowState {
    /// `tcp-0001`.
    pub id: String,
    /// Transport.
    pub proto: Proto,
    /// Whether any observation arrived.
    pub observed: bool,
    /// First successful dial.
    pub connected_ns: Option<i64>,
    /// Highest sequence number seen from the original instance (or the bye's).
    pub last_seq: Option<u64>,
    /// Last reply or announcement from the original instance.
    pub last_data_ns: Option<i64>,
    /// The first instance that answered.
    pub instance: Option<String>,
    /// When the `bye` arrived.
    pub announced_ns: Option<i64>,
    /// Why the dial gave up.
    pub dial_error: Option<String>,
    /// An unknown observation before the terminal one.
    pub unknown: Option<String>,
    /// The terminal, once latched.
    pub terminal: Option<Terminal>,
    /// Both ends of a re-homing.
    pub rehome: Option<Rehome>,
    /// Gaps seen (non-terminal).
    pub gaps: u32,
}

impl FlowState {
    /// An unobserved flow.
    pub fn new(id: impl Into<String>, proto: Proto) -> Self {
        Self {
            id: id.into(),
            proto,
            observed: false,
            connected_ns: None,
            last_seq: None,
            last_data_ns: None,
            instance: None,
            announced_ns: None,
            dial_error: None,
            unknown: None,
            terminal: None,
            rehome: None,
            gaps: 0,
        }
    }

    /// Whether a terminal observation has latched.
    pub fn is_terminal(&self) -> bool {
        self.terminal.is_some()
    }

    fn end(&mut self, at: Option<i64>, outcome: Outcome, mechanism: Mechanism, detail: String) {
        self.terminal = Some(Terminal {
            at_ns: at,
            outcome,
            mechanism,
            detail,
        });
    }

    /// Folds one observation made at `at_ns`.
    pub fn step(&mut self, at_ns: i64, obs: &Observation) -> Step {
        if self.terminal.is_some() {
            return Step::Ignored;
        }
        self.observed = true;
        if self.unknown.is_some() {
            // The record is already not-measured; later observations cannot rescue it.
            return Step::Ignored;
        }
        match obs {
            Observation::Connected => {
                self.connected_ns.get_or_insert(at_ns);
                Step::Changed
            }
            Observation::DialFailed(why) => {
                self.dial_error = Some(why.clone());
                Step::Changed
            }
            Observation::Data { seq, instance } => self.data(at_ns, *seq, instance.as_deref()),
            Observation::Bye { seq } => {
                if let Some(s) = seq {
                    self.last_seq = Some(*s);
                }
                self.announced_ns.get_or_insert(at_ns);
                self.last_data_ns = Some(at_ns);
                Step::Changed
            }
            Observation::Gap => {
                self.gaps += 1;
                Step::Changed
            }
            Observation::Unrecognised => Step::Changed,
            Observation::Unknown(kind) => {
                self.unknown = Some(kind.clone());
                Step::Changed
            }
            Observation::Eof => {
                let (outcome, m, d) = self.eof();
                self.latch(Some(at_ns), outcome, m, d)
            }
            Observation::SocketError { op, errno, message } => {
                let (m, d) = classify::socket_error(*op, errno.as_deref(), message.as_deref());
                self.latch(Some(at_ns), Outcome::Severed, m, d)
            }
            Observation::Silence { unanswered } => {
                let d = format!("udp-silence-{unanswered}-datagrams");
                self.latch(Some(at_ns), Outcome::Severed, Mechanism::UdpSilence, d)
            }
            Observation::ReadTimeout(detail) => {
                let d = detail
                    .clone()
                    .unwrap_or_else(|| "no bytes received within the flow timeout".into());
                self.latch(Some(at_ns), Outcome::ReadTimeout, Mechanism::ReadTimeout, d)
            }
            Observation::ObservationEnd => self.latch(
                None,
                Outcome::SurvivedObservationWindow,
                Mechanism::ObservationEnd,
                "flow was still alive when the observation window closed".into(),
            ),
        }
    }

    /// Latches the terminal.
    fn latch(
        &mut self,
        at: Option<i64>,
        outcome: Outcome,
        mechanism: Mechanism,
        detail: String,
    ) -> Step {
        self.end(at, outcome, mechanism, detail);
        Step::Terminal
    }

    /// What the server's FIN means: on TCP it depends on whether a drain was announced first.
    fn eof(&self) -> (Outcome, Mechanism, String) {
        match (self.proto, self.announced_ns) {
            (Proto::Udp, _) => {
                let (m, d) = classify::socket_error(Op::Read, Some("EOF_UDP"), None);
                (Outcome::Severed, m, d)
            }
            (Proto::Tcp, Some(_)) => (
                Outcome::DrainedCleanClose,
                Mechanism::FinAfterAnnouncement,
                "fin after drain announcement".into(),
            ),
            (Proto::Tcp, None) => (
                Outcome::Severed,
                Mechanism::FinUnannounced,
                "eof-without-drain-announcement".into(),
            ),
        }
    }

    fn data(&mut self, at_ns: i64, seq: Option<u64>, instance: Option<&str>) -> Step {
        let instance = instance.filter(|i| !i.is_empty());
        match (&self.instance, instance) {
            (Some(old), Some(new)) if old != new => {
                self.rehome = Some(Rehome {
                    from: old.clone(),
                    to: new.to_string(),
                    last_original_ns: self.last_data_ns,
                    first_new_ns: at_ns,
                });
                let detail = format!("answered by probe instance {new}, was {old}");
                self.end(Some(at_ns), Outcome::Severed, Mechanism::Rehomed, detail);
                Step::Terminal
            }
            (None, Some(new)) => {
                self.instance = Some(new.to_string());
                self.bump(at_ns, seq);
                Step::Changed
            }
            _ => {
                self.bump(at_ns, seq);
                Step::Absorbed
            }
        }
    }

    fn bump(&mut self, at_ns: i64, seq: Option<u64>) {
        if let Some(s) = seq {
            // UDP acks may be reordered: keep the highest.
            self.last_seq = Some(self.last_seq.map_or(s, |l| l.max(s)));
        }
        self.last_data_ns = Some(at_ns);
    }

    /// The outcome, mechanism, end time and detail this record licenses.
    pub fn verdict(&self) -> Terminal {
        let not_measured = |detail: String| Terminal {
            at_ns: None,
            outcome: Outcome::NotMeasured,
            mechanism: Mechanism::None,
            detail,
        };
        if let Some(kind) = &self.unknown {
            return not_measured(format!("unknown flow event kind {kind:?}"));
        }
        if let Some(t) = &self.terminal {
            return t.clone();
        }
        if !self.observed {
            return not_measured("no observations were recorded for this flow".into());
        }
        if self.connected_ns.is_none() {
            if let Some(why) = &self.dial_error {
                return not_measured(format!("never connected: {why}"));
            }
        }
        not_measured("flow was still open and the observation window was never closed".into())
    }
}

#[cfg(test)]
mod tests;
