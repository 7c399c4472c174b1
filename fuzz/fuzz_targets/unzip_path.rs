//! The check that keeps a downloaded artifact's entries inside the baseline directory.
//! Property: an accepted name is relative and made of plain components only.
#![no_main]

use std::path::Component;

use drainwatch::github::unzip::inside;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|name: &str| {
    if let Some(p) = inside(name) {
        assert!(p.is_relative(), "{name:?} -> {p:?}");
        assert!(
            p.components().all(|c| matches!(c, Component::Normal(_))),
            "{name:?} -> {p:?}"
        );
    }
});
