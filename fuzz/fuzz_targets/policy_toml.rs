//! The `policy_toml` fuzz target. Its property lives in `fuzz/props/policy_toml.rs`, which
//! `tests/fuzz_corpora.rs` also runs every committed seed of `fuzz/corpus/policy_toml/` through on
//! stable, so the fuzzer and `make test` check one property.
#![no_main]

#[path = "../props/policy_toml.rs"]
mod props;

use libfuzzer_sys::{Corpus, fuzz_target};

fuzz_target!(|data: &[u8]| -> Corpus {
    if props::check(data) {
        Corpus::Keep
    } else {
        Corpus::Reject
    }
});
