//! The first pass over a trial's client lines: each attach event tallied into its
//! connection, request or dial counts, and every observation that can fail kept for the
//! failure window and the attribution that follow.

use std::collections::BTreeMap;

use super::names;
use super::section::{ConnOutcome, DialCounts, FailureKind, FailureMechanism, RequestCounts};
use crate::event::EventName;
use crate::event::{EventLine, Source};

/// One connection generation of a flow, as its events saw it.
#[derive(Default)]
pub(super) struct Conn {
    pub(super) opened_ns: Option<i64>,
    pub(super) end: Option<(i64, ConnOutcome, Option<String>)>,
    /// The WebSocket close frame that ended it: code and reason, as sent.
    pub(super) close: Option<(u16, String)>,
    /// HTTP/2: the server's GOAWAY: when the first arrived, and the last one's last stream
    /// id and error code name.
    pub(super) goaway: Option<GoAway>,
}

/// What the GOAWAY frames of one connection said.
pub(super) struct GoAway {
    pub(super) first_ns: i64,
    pub(super) last_stream_id: Option<u32>,
    pub(super) code: Option<String>,
}

/// A failure before attribution.
pub(super) struct Failed<'a> {
    pub(super) at: i64,
    pub(super) kind: FailureKind,
    pub(super) line: &'a EventLine,
    pub(super) mechanism: FailureMechanism,
}

/// A recorded result as its failure mechanism; one the client did not name is an error.
pub(super) fn mechanism_of(result: Option<&str>) -> FailureMechanism {
    result
        .and_then(FailureMechanism::parse)
        .unwrap_or(FailureMechanism::Error)
}

fn mechanism(l: &EventLine) -> FailureMechanism {
    mechanism_of(l.result.as_deref())
}

/// The direct prober's dials (`attach_direct_dial`), counted as the arm's dials are; `None`
/// when it made none. Its failures are not the arm's: they are counted, not attributed.
pub(super) fn direct_dials(lines: &[EventLine]) -> Option<DialCounts> {
    let mut c = DialCounts::default();
    for l in lines
        .iter()
        .filter(|l| l.event == EventName::AttachDirectDial)
    {
        c.total += 1;
        if l.result.as_deref() == Some(names::SERVED) {
            c.served += 1;
            if let Some(i) = &l.instance {
                *c.served_by_instance.entry(i.clone()).or_default() += 1;
            }
        } else {
            c.failed += 1;
            *c.failed_by_result.entry(mechanism(l)).or_default() += 1;
        }
    }
    (c.total > 0).then_some(c)
}

/// What the client's lines add up to, before attribution.
pub(super) struct Tally<'a> {
    held_arm: bool,
    pub(super) conns: BTreeMap<(String, u64), Conn>,
    pub(super) reopened: u32,
    pub(super) requests: RequestCounts,
    pub(super) latencies: Vec<i64>,
    pub(super) dials: DialCounts,
    pub(super) failed: Vec<Failed<'a>>,
    /// (time, failed?) of every observation that can fail, for the failure window.
    pub(super) outcomes: Vec<(i64, bool)>,
    pub(super) window_start: Option<i64>,
    pub(super) window_end: Option<i64>,
}

impl<'a> Tally<'a> {
    /// Tallies every client line that has a time.
    pub(super) fn fold(lines: &'a [EventLine], held_arm: bool) -> Self {
        let mut t = Self::new(held_arm);
        for l in lines.iter().filter(|l| l.source == Some(Source::Client)) {
            if let Some(at) = l.at_ns {
                t.observe(l, at);
            }
        }
        t
    }

    fn new(held_arm: bool) -> Self {
        Self {
            held_arm,
            conns: BTreeMap::new(),
            reopened: 0,
            requests: RequestCounts {
                total: 0,
                ok: 0,
                failed: 0,
                failed_by_mechanism: BTreeMap::new(),
                latency_p50_ms: None,
                latency_p99_ms: None,
                latency_max_ms: None,
            },
            latencies: Vec::new(),
            dials: DialCounts {
                total: 0,
                served: 0,
                failed: 0,
                failed_by_result: BTreeMap::new(),
                served_by_instance: BTreeMap::new(),
            },
            failed: Vec::new(),
            outcomes: Vec::new(),
            window_start: None,
            window_end: None,
        }
    }

    fn observe(&mut self, l: &'a EventLine, at: i64) {
        let held_arm = self.held_arm;
        match l.event {
            EventName::AttachWindowStarted => self.window_start = self.window_start.or(Some(at)),
            EventName::AttachWindowEnded => self.window_end = self.window_end.or(Some(at)),
            EventName::AttachConnOpened | EventName::AttachConnReopened => self.opened(l, at),
            // On HTTP arms a failed (re)open is the failed request recorded beside it, not a
            // connection; on held arms (TCP, WebSocket) a flow that did not connect is a
            // connection not measured, and a failure.
            EventName::AttachConnOpenFailed if held_arm => self.open_failed(l, at),
            EventName::AttachConnClosedGraceful
            | EventName::AttachConnSevered
            | EventName::AttachConnObservationEnd => {
                self.ended(l, at);
            }
            EventName::AttachRequest => self.request(l, at),
            EventName::AttachDial => self.dial(l, at),
            EventName::AttachGoaway => self.goaway(l, at),
            _ => {}
        }
    }

    fn conn(&mut self, l: &EventLine) -> &mut Conn {
        let flow = l.flow_id.clone().unwrap_or_default();
        let generation = l.seq.unwrap_or(1);
        self.conns.entry((flow, generation)).or_default()
    }

    fn succeeded(&mut self, at: i64) {
        self.outcomes.push((at, false));
    }

    fn fail(&mut self, at: i64, kind: FailureKind, line: &'a EventLine, m: FailureMechanism) {
        self.failed.push(Failed {
            at,
            kind,
            line,
            mechanism: m,
        });
        self.outcomes.push((at, true));
    }

    fn opened(&mut self, l: &EventLine, at: i64) {
        if l.event == EventName::AttachConnReopened {
            self.reopened += 1;
        }
        let c = self.conn(l);
        c.opened_ns = c.opened_ns.or(Some(at));
        if self.held_arm {
            self.succeeded(at);
        }
    }

    fn open_failed(&mut self, l: &'a EventLine, at: i64) {
        let c = self.conn(l);
        if c.end.is_none() {
            c.end = Some((at, ConnOutcome::NotMeasured, l.result.clone()));
        }
        self.fail(at, FailureKind::Connection, l, mechanism(l));
    }

    fn ended(&mut self, l: &'a EventLine, at: i64) {
        let outcome = match l.event {
            EventName::AttachConnClosedGraceful => ConnOutcome::GracefulClose,
            EventName::AttachConnSevered => ConnOutcome::Severed,
            _ => ConnOutcome::SurvivedObservationWindow,
        };
        let c = self.conn(l);
        if c.end.is_some() {
            return;
        }
        c.end = Some((at, outcome, l.result.clone()));
        c.close = l
            .close_code
            .map(|code| (code, l.detail.clone().unwrap_or_default()));
        if outcome == ConnOutcome::Severed && self.held_arm {
            self.fail(at, FailureKind::Connection, l, mechanism(l));
        }
    }

    fn goaway(&mut self, l: &EventLine, at: i64) {
        let c = self.conn(l);
        let g = c.goaway.get_or_insert(GoAway {
            first_ns: at,
            last_stream_id: None,
            code: None,
        });
        g.first_ns = g.first_ns.min(at);
        // A later GOAWAY may only lower the last stream id (RFC 9113 §6.8): the last one
        // received says what the server processed.
        g.last_stream_id = l.last_stream_id.or(g.last_stream_id);
        g.code = l.h2_code.clone().or(g.code.take());
    }

    fn request(&mut self, l: &'a EventLine, at: i64) {
        self.requests.total += 1;
        if l.result.as_deref() == Some(names::OK) {
            self.requests.ok += 1;
            self.latencies.extend(l.latency_ns);
            self.succeeded(at);
        } else {
            let m = mechanism(l);
            self.requests.failed += 1;
            *self.requests.failed_by_mechanism.entry(m).or_default() += 1;
            self.fail(at, FailureKind::Request, l, m);
        }
    }

    fn dial(&mut self, l: &'a EventLine, at: i64) {
        self.dials.total += 1;
        if l.result.as_deref() == Some(names::SERVED) {
            self.dials.served += 1;
            if let Some(i) = &l.instance {
                *self.dials.served_by_instance.entry(i.clone()).or_default() += 1;
            }
            self.succeeded(at);
        } else {
            let m = mechanism(l);
            self.dials.failed += 1;
            *self.dials.failed_by_result.entry(m).or_default() += 1;
            self.fail(at, FailureKind::Dial, l, m);
        }
    }
}
