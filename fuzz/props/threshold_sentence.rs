//! The property of the `threshold_sentence` fuzz target, shared with `tests/fuzz_corpora.rs`
//! (which replays the committed seeds on stable): one threshold sentence (`p99-gap < 1.5s`,
//! `no refused`, …) and a quorum (`3/5`), the grammar inside a policy's strings and of
//! `--threshold`. No panic; a sentence that parses renders to one that parses back to the same
//! threshold.

use drainwatch::evidence::policy::{combine, threshold};

/// Whether the bytes made an input of this target: `false` (nothing checked) where they cannot,
/// and the fuzz target then tells libFuzzer to reject them.
pub fn check(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let _ = combine::parse_quorum(text);
    if let Ok(t) = threshold::parse(text) {
        let s = t.to_string();
        assert_eq!(threshold::parse(&s), Ok(t), "{text:?} rendered as {s:?}");
    }
    true
}
