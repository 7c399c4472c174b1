//! The `unzip_path` fuzz target. Its property lives in `fuzz/props/unzip_path.rs`, which
//! `tests/fuzz_corpora.rs` also runs every committed seed of `fuzz/corpus/unzip_path/` through on
//! stable, so the fuzzer and `make test` check one property.
#![no_main]

#[path = "../props/unzip_path.rs"]
mod props;

use libfuzzer_sys::{Corpus, fuzz_target};

fuzz_target!(|data: &[u8]| -> Corpus {
    if props::check(data) {
        Corpus::Keep
    } else {
        Corpus::Reject
    }
});
