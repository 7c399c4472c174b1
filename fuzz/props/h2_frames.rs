//! The property of the `h2_frames` fuzz target, shared with `tests/fuzz_corpora.rs` (which
//! replays the committed seeds on stable): the HTTP/2 frame scanner that watches the server's
//! bytes for GOAWAY and RST_STREAM. No panic; any split of the input yields the same frames (its
//! documented contract); no more frames than 9-byte headers; a GOAWAY's debug data stays capped.
//! The first byte picks the split, the rest is the server's bytes.

use drainwatch::net::attach::h2_frames::{Frame, Scanner};

/// Whether the bytes made an input of this target: `false` (nothing checked) where they cannot,
/// and the fuzz target then tells libFuzzer to reject them.
pub fn check(data: &[u8]) -> bool {
    let Some((&cut, bytes)) = data.split_first() else {
        return false;
    };
    let mut whole = Vec::new();
    Scanner::default().feed(bytes, &mut whole);
    assert!(whole.len() <= bytes.len() / 9);
    for f in &whole {
        if let Frame::GoAway { debug, .. } = f {
            assert!(debug.chars().count() <= 256, "debug data not capped");
        }
        let _ = f.code_name();
    }
    let step = usize::from(cut) + 1;
    let mut split = Vec::new();
    let mut s = Scanner::default();
    for chunk in bytes.chunks(step) {
        s.feed(chunk, &mut split);
    }
    assert_eq!(whole, split);
    true
}
