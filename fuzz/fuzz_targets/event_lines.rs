//! The `event_lines` fuzz target. Its property lives in `fuzz/props/event_lines.rs`, which
//! `tests/fuzz_corpora.rs` also runs every committed seed of `fuzz/corpus/event_lines/` through on
//! stable, so the fuzzer and `make test` check one property.
#![no_main]

#[path = "../props/event_lines.rs"]
mod props;

use libfuzzer_sys::{Corpus, fuzz_target};

fuzz_target!(|data: &[u8]| -> Corpus {
    if props::check(data) {
        Corpus::Keep
    } else {
        Corpus::Reject
    }
});
