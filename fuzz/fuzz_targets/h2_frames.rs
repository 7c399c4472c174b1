//! The HTTP/2 frame scanner that watches the server's bytes for GOAWAY and RST_STREAM.
//! Properties: no panic; any split of the input yields the same frames (its documented
//! contract); no more frames than 9-byte headers; a GOAWAY's debug data stays capped.
#![no_main]

use drainwatch::net::attach::h2_frames::{Frame, Scanner};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, bytes)) = data.split_first() else {
        return;
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
});
