//! One threshold sentence (`p99-gap < 1.5s`, `no refused`, …) and a quorum (`3/5`), the
//! grammar inside a policy's strings and of `--threshold`. Properties: no panic; a sentence
//! that parses renders to one that parses back to the same threshold.
#![no_main]

use drainwatch::evidence::policy::{combine, threshold};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = combine::parse_quorum(text);
    if let Ok(t) = threshold::parse(text) {
        let s = t.to_string();
        assert_eq!(threshold::parse(&s), Ok(t), "{text:?} rendered as {s:?}");
    }
});
