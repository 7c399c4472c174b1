//! The event-line parser of `events.jsonl` replay (`drainwatch report`) and the assembly of a
//! report from whatever parsed. Properties: no panic; a parsed line serialises and parses back
//! to itself; assembly of any parsed lines returns a report or a named error.
#![no_main]

use drainwatch::evidence::assemble::build_report;
use drainwatch::evidence::event::EventLine;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
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
            Err(_) => return,
        }
    }
    let _ = build_report(&lines);
});
