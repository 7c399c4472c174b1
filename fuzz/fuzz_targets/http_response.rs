//! The `http_response` fuzz target. Its property lives in `fuzz/props/http_response.rs`, which
//! `tests/fuzz_corpora.rs` also runs every committed seed of `fuzz/corpus/http_response/` through on
//! stable, so the fuzzer and `make test` check one property.
#![no_main]

#[path = "../props/http_response.rs"]
mod props;

use libfuzzer_sys::{Corpus, fuzz_target};

fuzz_target!(|data: &[u8]| -> Corpus {
    if props::check(data) {
        Corpus::Keep
    } else {
        Corpus::Reject
    }
});
