//! Event lines that arrive over a pod's log: the probe's, and a client pod's, which are relayed
//! into the trial with their emitter's times kept and their receive time stamped.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::evidence::event::{EventLine, EventName, Source};
use crate::net::follow::LineTracker;
use crate::platform::flows::AttachProgress;
use crate::recorder::Recorder;

/// Drops lines already received when a log stream is reopened from the start.
#[derive(Debug, Default)]
pub struct Dedupe {
    last: Option<u64>,
}

impl Dedupe {
    /// Whether a line with counter `line` is new; lines without a counter always are.
    pub fn fresh(&mut self, line: Option<u64>) -> bool {
        match (line, self.last) {
            (Some(n), Some(last)) if n <= last => false,
            (Some(n), _) => {
                self.last = Some(n);
                true
            }
            (None, _) => true,
        }
    }
}

/// Handles the probe's log lines: source probe, receive time in `at_ns`, the emitter's own
/// fields untouched (its boot id and monotonic time let the core place it exactly on one
/// kernel). Sets `started` on `probe_started`.
pub fn probe_lines(rec: Recorder, started: watch::Sender<bool>) -> impl FnMut(&str, i64) + Send {
    let mut dedupe = Dedupe::default();
    move |text, at| {
        let line = match EventLine::parse(text) {
            Ok(Some(mut l)) => {
                if !dedupe.fresh(l.line) {
                    return;
                }
                l.source = Some(Source::Probe);
                l.at_ns = Some(at);
                if l.event == EventName::ProbeStarted {
                    let _ = started.send(true);
                }
                l
            }
            Ok(None) => return,
            Err(_) => EventLine::new(Source::Probe, EventName::UnparseableLine, at)
                .detail(text.chars().take(120).collect::<String>()),
        };
        rec.send(line);
    }
}

/// What the client pod's stream has shown so far.
#[derive(Debug, Clone, Default)]
pub struct ClientStream {
    /// The client's kernel boot id, from its `trial_started` header.
    pub boot_id: Option<String>,
    /// The header line arrived: the client is running and streaming.
    pub started: bool,
    /// An attach client's counts so far.
    pub attach: AttachProgress,
}

/// A shard's node, read as its dial lines arrive, so the data plane is seen per node (None:
/// one client, whose node its `client_pod_running` line says).
pub type NodeStamp = Option<Box<dyn Fn() -> Option<String> + Send>>;

/// Counts one attach client line; whether it changed a count (other lines leave them alone).
fn count_attach(a: &mut AttachProgress, l: &EventLine) -> bool {
    match l.event {
        EventName::AttachConnOpened => a.opened += 1,
        EventName::AttachConnOpenFailed if l.seq.is_none_or(|s| s <= 1) => a.open_failed += 1,
        EventName::AttachDial if l.result.as_deref() == Some("served") => a.served += 1,
        EventName::AttachDial => {
            a.dial_failed += 1;
            let result = l.result.as_deref().unwrap_or("failed");
            a.last_dial_failure = Some(match l.status {
                Some(s) => format!("{result}, status {s}"),
                None => result.to_string(),
            });
        }
        _ => return false,
    }
    true
}

/// A header line this build cannot read in full (a client image of another build may carry a
/// configuration this one would not accept): only its boot id matters to the relay.
#[derive(serde::Deserialize)]
struct LooseHeader {
    event: String,
    header: Option<LooseBoot>,
}

#[derive(serde::Deserialize)]
struct LooseBoot {
    boot_id: Option<String>,
}

/// The boot id of a `trial_started` line read loosely; None for any other line.
fn loose_boot_id(text: &str) -> Option<Option<String>> {
    let h: LooseHeader = serde_json::from_str(text.trim()).ok()?;
    (h.event == EventName::TrialStarted.as_str()).then(|| h.header.and_then(|b| b.boot_id))
}

/// Handles the client pod's log: its header gives its boot id; its client lines are relayed
/// with `at_ns` = receive time, `mono_ns` = the client's own clock and `boot_id` = its kernel,
/// which is what the core needs to place them; its own orchestrator lines are dropped (the
/// orchestrator here is the one that counts).
pub fn client_lines(
    rec: Recorder,
    tracker: Arc<Mutex<LineTracker>>,
    state: watch::Sender<ClientStream>,
    node: NodeStamp,
) -> impl FnMut(&str, i64) + Send {
    let mut dedupe = Dedupe::default();
    move |text, at| {
        let started = |boot: Option<String>| {
            state.send_modify(|s| {
                s.boot_id = boot;
                s.started = true;
            });
        };
        // Each line is parsed once; only a header this build cannot read is read again, loosely.
        let mut l = match EventLine::parse(text) {
            Ok(Some(l)) => l,
            Ok(None) => return,
            Err(_) => {
                if let Some(boot) = loose_boot_id(text) {
                    started(boot);
                }
                return;
            }
        };
        if l.event == EventName::TrialStarted {
            started(l.header.as_ref().map(|h| h.boot_id.clone()));
            return;
        }
        if !dedupe.fresh(l.line) || l.source != Some(Source::Client) {
            return;
        }
        state.send_if_modified(|s| count_attach(&mut s.attach, &l));
        // mono_ns is the client's clock reading; a line without one keeps its own at_ns.
        l.mono_ns = l.mono_ns.or(l.at_ns);
        l.at_ns = Some(at);
        l.line = None;
        l.boot_id = Some(
            state
                .borrow()
                .boot_id
                .clone()
                .unwrap_or_else(|| "unknown".into()),
        );
        if matches!(l.event, EventName::AttachDial | EventName::AttachDirectDial) {
            if let Some(node) = &node {
                l.node = node();
            }
        }
        if let Ok(mut t) = tracker.lock() {
            t.observe(&l);
        }
        rec.send(l);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::event::TrialHeader;

    #[test]
    fn reopened_streams_do_not_duplicate_lines() {
        let mut d = Dedupe::default();
        assert!(d.fresh(Some(1)) && d.fresh(Some(2)));
        assert!(!d.fresh(Some(1)) && !d.fresh(Some(2)));
        assert!(d.fresh(None) && d.fresh(Some(3)));
    }

    #[test]
    fn attach_lines_are_counted_once() {
        let (rec, _rx) = Recorder::new();
        let tracker = Arc::new(Mutex::new(LineTracker::new(vec![])));
        let (tx, state) = watch::channel(ClientStream::default());
        let mut handle = client_lines(rec, tracker, tx, None);
        let line = |n: u64, event: EventName, result: Option<&str>| {
            let mut l = EventLine::new(Source::Client, event, 1).flow("x");
            l.line = Some(n);
            l.seq = Some(1);
            let mut v = serde_json::to_value(&l).unwrap();
            if let Some(r) = result {
                v["result"] = serde_json::json!(r);
            }
            v.to_string()
        };
        handle(&line(1, EventName::AttachConnOpened, None), 2);
        handle(&line(1, EventName::AttachConnOpened, None), 3);
        handle(&line(2, EventName::AttachDial, Some("served")), 4);
        handle(&line(3, EventName::AttachDial, Some("refused")), 5);
        handle(&line(4, EventName::AttachRequest, Some("ok")), 6);
        assert_eq!(
            state.borrow().attach,
            AttachProgress {
                opened: 1,
                open_failed: 0,
                served: 1,
                dial_failed: 1,
                last_dial_failure: Some("refused".into()),
            },
            "a reopened stream's repeated line is not counted twice"
        );
    }

    #[test]
    fn a_header_of_another_build_still_gives_its_boot_id() {
        let (rec, _rx) = Recorder::new();
        let tracker = Arc::new(Mutex::new(LineTracker::new(vec![])));
        let (tx, state) = watch::channel(ClientStream::default());
        let mut handle = client_lines(rec, tracker, tx, None);
        let mut header = crate::evidence::assemble::fixtures::header(1, 0);
        if let Some(h) = header.header.as_mut() {
            h.boot_id = "other-build".into();
        }
        let mut v = serde_json::to_value(&header).unwrap();
        v["header"]["config"]["a_future_knob"] = serde_json::json!(1);
        let text = v.to_string();
        assert!(
            EventLine::parse(&text).is_err(),
            "this build refuses the configuration"
        );
        handle(&text, 5);
        let s = state.borrow();
        assert!(s.started);
        assert_eq!(s.boot_id.as_deref(), Some("other-build"));
    }

    #[test]
    fn client_lines_are_relayed_with_their_clock() {
        let (rec, mut rx) = Recorder::new();
        let tracker = Arc::new(Mutex::new(LineTracker::new(vec!["tcp-0001".into()])));
        let (tx, state) = watch::channel(ClientStream::default());
        let mut handle = client_lines(rec, tracker.clone(), tx, None);
        let mut header = EventLine::new(Source::Orchestrator, EventName::TrialStarted, 1);
        let h = crate::evidence::assemble::fixtures::header(1, 0)
            .header
            .unwrap();
        header.header = Some(Box::new(TrialHeader {
            boot_id: "client-boot".into(),
            streamed: false,
            ..*h
        }));
        handle(&header.to_json(), 5);
        assert!(state.borrow().started);
        let mut c = EventLine::new(Source::Client, EventName::FlowConnected, 700).flow("tcp-0001");
        c.mono_ns = Some(700);
        c.line = Some(2);
        handle(&c.to_json(), 9_000);
        handle(&c.to_json(), 9_100);
        handle(
            &EventLine::new(Source::Orchestrator, EventName::TrialAborted, 800).to_json(),
            9_200,
        );
        let got = rx.try_recv().unwrap();
        assert_eq!((got.at_ns, got.mono_ns), (Some(9_000), Some(700)));
        assert_eq!(got.boot_id.as_deref(), Some("client-boot"));
        assert!(
            rx.try_recv().is_err(),
            "duplicates and orchestrator lines are dropped"
        );
        let p = tracker.lock().unwrap().progress();
        assert_eq!(p.snapshot().dialing, 0);
    }
}
