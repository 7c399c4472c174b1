//! Go v0.1 compatibility of the event-line format: the Go probe's stdout parses as our event
//! lines, field for field, without losing the fields the timeline needs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

use drainwatch::evidence::event::{EventLine, EventName};

#[test]
fn go_probe_stdout_parses_line_for_line() {
    let text = include_str!("fixtures/go-v0.1/probe-drain.jsonl");
    let mut names = Vec::new();
    for raw in text.lines() {
        let l = EventLine::parse(raw).unwrap().unwrap();
        assert_eq!(l.v, 0, "Go lines carry no version");
        assert!(l.wall.is_some() && l.mono_ms.is_some());
        names.push(l.event);
    }
    assert!(!names.is_empty());
    // Every name the Go probe writes is one this build's registry knows.
    let unknown: Vec<_> = names.iter().filter(|n| !n.is_known()).collect();
    assert!(
        unknown.is_empty(),
        "Go names this build does not know: {unknown:?}"
    );
    for expected in [
        EventName::ProbeStarted,
        EventName::Listening,
        EventName::SigtermReceived,
        EventName::DrainDeadlineReached,
        EventName::Exiting,
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
}
