//! The policy parser (TOML policy text → typed policy). Properties: no panic; every threshold of
//! a policy that parses renders to a sentence that parses back to itself.
#![no_main]

use drainwatch::evidence::policy::{Policy, threshold};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(p) = Policy::parse(text) else {
        return;
    };
    assert!(!p.arms.is_empty(), "a policy without arms parsed");
    for arm in &p.arms {
        for t in &arm.thresholds {
            let s = t.to_string();
            assert_eq!(threshold::parse(&s).as_ref(), Ok(t), "{s:?}");
        }
    }
});
