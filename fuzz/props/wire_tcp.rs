//! The property of the `wire_tcp` fuzz target, shared with `tests/fuzz_corpora.rs` (which
//! replays the committed seeds on stable): the client's parser of the probe's TCP lines (`hb`,
//! `bye`) and of anything else a probe, or whatever answers on its port, sends. No panic; an
//! unrecognised line is a slice of the input; the record's excerpt is bounded; what parses
//! renders back to the same line.

use drainwatch::wire::{self, ProbeLine};

/// A field the encoders can carry: no space, no line end, not empty.
fn token(s: &str) -> bool {
    !s.is_empty() && !s.contains([' ', '\r', '\n'])
}

/// Whether the bytes made an input of this target: `false` (nothing checked) where they cannot,
/// and the fuzz target then tells libFuzzer to reject them.
pub fn check(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    for line in text.split('\n') {
        let parsed = wire::parse_probe_line(line);
        let _ = wire::heartbeat_scheduled_field(line);
        match parsed {
            ProbeLine::Heartbeat {
                seq,
                unix_ns: Some(ns),
                instance,
            } if token(instance) => {
                assert_eq!(
                    wire::parse_probe_line(&wire::heartbeat(seq, ns, instance)),
                    parsed
                );
            }
            ProbeLine::Bye {
                seq: Some(seq),
                reason,
            } if token(reason) => {
                assert_eq!(wire::parse_probe_line(&wire::bye(seq, reason)), parsed);
            }
            ProbeLine::Unrecognised(l) => {
                assert!(line.contains(l), "an unrecognised line is the input's");
                let e = wire::excerpt(l);
                // The prefix, 64 characters, the ellipsis.
                assert!(e.chars().count() <= 28 + 64 + 3, "excerpt unbounded: {e:?}");
            }
            _ => {}
        }
    }
    true
}
