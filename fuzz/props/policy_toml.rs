//! The property of the `policy_toml` fuzz target, shared with `tests/fuzz_corpora.rs` (which
//! replays the committed seeds on stable): the policy parser (TOML policy text → typed policy).
//! No panic; every threshold of a policy that parses renders to a sentence that parses back to
//! itself.

use drainwatch::evidence::policy::{Policy, threshold};

/// Whether the bytes made an input of this target: `false` (nothing checked) where they cannot,
/// and the fuzz target then tells libFuzzer to reject them.
pub fn check(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let Ok(p) = Policy::parse(text) else {
        return true;
    };
    assert!(!p.arms.is_empty(), "a policy without arms parsed");
    for arm in &p.arms {
        for t in &arm.thresholds {
            let s = t.to_string();
            assert_eq!(threshold::parse(&s).as_ref(), Ok(t), "{s:?}");
        }
    }
    true
}
