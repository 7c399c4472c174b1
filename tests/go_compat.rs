//! Go v0.1 compatibility of the event-line format: the Go probe's stdout parses as our event
//! lines, field for field, without losing the fields the timeline needs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

use drainwatch::evidence::event::EventLine;

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
    for expected in [
        "probe_started",
        "listening",
        "sigterm_received",
        "drain_deadline_reached",
        "exiting",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
}
