//! The property of the `event_lines` fuzz target, shared with `tests/fuzz_corpora.rs` (which
//! replays the committed seeds on stable): the event-line parser of `events.jsonl` replay
//! (`drainwatch report`) and the assembly of a report from whatever parsed. No panic; a parsed
//! line serialises and parses back to itself; assembly of any parsed lines returns a report or a
//! named error.

use drainwatch::evidence::assemble::build_report;
use drainwatch::evidence::event::EventLine;

/// Whether the bytes made an input of this target: `false` (nothing checked) where they cannot,
/// and the fuzz target then tells libFuzzer to reject them.
pub fn check(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let mut lines = Vec::new();
    for raw in text.lines() {
        match EventLine::parse(raw) {
            Ok(Some(l)) => {
                let back = EventLine::parse(&l.to_json());
                assert!(
                    matches!(&back, Ok(Some(b)) if *b == l),
                    "round trip: {l:?} -> {back:?}"
                );
                lines.push(l);
            }
            Ok(None) => {}
            // A named error is the right answer; replay stops there.
            Err(_) => return true,
        }
    }
    let _ = build_report(&lines);
    true
}
