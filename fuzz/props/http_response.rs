//! The property of the `http_response` fuzz target, shared with `tests/fuzz_corpora.rs` (which
//! replays the committed seeds on stable): the attach client's HTTP/1.1 response reader (head,
//! Content-Length, chunked, close-delimited) over any bytes. No panic, no hang; a response has a
//! real status; how the bytes are split across reads does not change the answer (under the head
//! cap, where a split is allowed to matter). The first byte picks the split, the rest is the
//! server's bytes.

use std::pin::Pin;
use std::task::{Context, Poll};

use drainwatch::net::attach::http::read_response;
use tokio::io::{AsyncRead, ReadBuf};

/// Hands out the bytes at most `step` at a time, as a slow server would.
struct Trickle<'a> {
    rest: &'a [u8],
    step: usize,
}

impl AsyncRead for Trickle<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = self.step.min(self.rest.len()).min(buf.remaining());
        let (now, later) = self.rest.split_at(n);
        buf.put_slice(now);
        self.rest = later;
        Poll::Ready(Ok(()))
    }
}

/// Whether the bytes made an input of this target: `false` (nothing checked) where they cannot,
/// and the fuzz target then tells libFuzzer to reject them.
pub fn check(data: &[u8]) -> bool {
    let Some((&step, body)) = data.split_first() else {
        return false;
    };
    let whole = futures::executor::block_on(read_response(&mut Trickle {
        rest: body,
        step: usize::MAX,
    }));
    if let Ok(r) = &whole {
        assert!((100..=599).contains(&r.status));
    }
    if body.len() < 60 * 1024 {
        let split = futures::executor::block_on(read_response(&mut Trickle {
            rest: body,
            step: usize::from(step % 16) + 1,
        }));
        assert_eq!(format!("{whole:?}"), format!("{split:?}"));
    }
    true
}
