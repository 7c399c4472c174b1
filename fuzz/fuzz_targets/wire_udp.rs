//! The `wire_udp` fuzz target. Its property lives in `fuzz/props/wire_udp.rs`, which
//! `tests/fuzz_corpora.rs` also runs every committed seed of `fuzz/corpus/wire_udp/` through on
//! stable, so the fuzzer and `make test` check one property.
#![no_main]

#[path = "../props/wire_udp.rs"]
mod props;

use libfuzzer_sys::{Corpus, fuzz_target};

fuzz_target!(|data: &[u8]| -> Corpus {
    if props::check(data) {
        Corpus::Keep
    } else {
        Corpus::Reject
    }
});
