//! The property of the `unzip_path` fuzz target, shared with `tests/fuzz_corpora.rs` (which
//! replays the committed seeds on stable): the check that keeps a downloaded artifact's entries
//! inside the baseline directory. An accepted name is relative and made of plain components only.
//!
//! The name is decoded from the bytes as libFuzzer's `fuzz_target!(|name: &str| …)` decodes it
//! (`arbitrary`, the longest valid UTF-8 prefix), so a seed means the same name in both.

use std::path::Component;

use arbitrary::{Arbitrary, Unstructured};
use drainwatch::github::unzip::inside;

/// Whether the bytes made an input of this target: `false` (nothing checked) where they cannot,
/// and the fuzz target then tells libFuzzer to reject them.
pub fn check(data: &[u8]) -> bool {
    if data.len() < <&str as Arbitrary>::size_hint(0).0 {
        return false;
    }
    let Ok(name) = <&str as Arbitrary>::arbitrary_take_rest(Unstructured::new(data)) else {
        return false;
    };
    if let Some(p) = inside(name) {
        assert!(p.is_relative(), "{name:?} -> {p:?}");
        assert!(
            p.components().all(|c| matches!(c, Component::Normal(_))),
            "{name:?} -> {p:?}"
        );
    }
    true
}
