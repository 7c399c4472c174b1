//! What the server said at the HTTP/2 framing layer, seen on the wire. The h2 crate speaks the
//! protocol; this watches the bytes it reads (plaintext: under TLS it wraps the decrypted
//! stream) and reports the frames that decide how a connection ends: GOAWAY (last stream id,
//! error code, debug data) and RST_STREAM (stream, code), each with the time it arrived. h2
//! turns these into errors on the streams they touch, but neither the arrival time of a
//! graceful GOAWAY nor its last stream id reach its caller, and both are the evidence.
//!
//! The scanner only splits frames by their 9-byte header (RFC 9113 §4.1) and reads the two
//! payloads above; it never interprets or alters what h2 reads. It expects the server's side of
//! a client connection, which starts with a frame (no connection preface).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;

use crate::host;

/// Frame type GOAWAY (RFC 9113 §6.8).
const GOAWAY: u8 = 0x7;
/// Frame type RST_STREAM (RFC 9113 §6.4).
const RST_STREAM: u8 = 0x3;
/// The frame header's length.
const HEADER: usize = 9;
/// How much of a GOAWAY's debug data is kept: enough for a reason phrase.
const DEBUG_KEPT: usize = 256;

/// A frame that bears on how the connection or a stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// The server will process no stream above `last_stream_id`.
    GoAway {
        /// The highest stream id the server may have processed.
        last_stream_id: u32,
        /// The error code (0: NO_ERROR, a graceful shutdown).
        code: u32,
        /// The debug data, lossily as text, at most [`DEBUG_KEPT`] bytes.
        debug: String,
    },
    /// The server reset one stream.
    RstStream {
        /// The stream.
        stream_id: u32,
        /// The error code.
        code: u32,
    },
}

impl Frame {
    /// The error code's RFC name (`NO_ERROR`, `REFUSED_STREAM`, …; unknown codes in hex).
    pub fn code_name(&self) -> String {
        let code = match self {
            Self::GoAway { code, .. } | Self::RstStream { code, .. } => *code,
        };
        code_name(code)
    }
}

/// The RFC 9113 §7 name of an error code; an unknown code as `0x…`.
pub fn code_name(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    usize::try_from(code)
        .ok()
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| format!("{code:#x}"), |n| (*n).to_string())
}

/// Where the scanner is inside the byte stream.
#[derive(Debug)]
enum State {
    /// Collecting a frame header.
    Header { buf: [u8; HEADER], have: usize },
    /// Inside a payload: kept when the frame is one of ours, skipped otherwise.
    Payload {
        kind: u8,
        stream_id: u32,
        remaining: usize,
        kept: Vec<u8>,
    },
}

/// Splits a server's byte stream into frames and yields the GOAWAY and RST_STREAM ones. Pure:
/// bytes in, frames out, any split of the input gives the same frames.
#[derive(Debug)]
pub struct Scanner {
    state: State,
}

impl Default for Scanner {
    fn default() -> Self {
        Self {
            state: State::Header {
                buf: [0; HEADER],
                have: 0,
            },
        }
    }
}

impl Scanner {
    /// Feeds the next bytes read; frames completed by them are pushed onto `out`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<Frame>) {
        while !bytes.is_empty() {
            bytes = match &mut self.state {
                State::Header { buf, have } => {
                    let take = (HEADER - *have).min(bytes.len());
                    buf[*have..*have + take].copy_from_slice(&bytes[..take]);
                    *have += take;
                    if *have == HEADER {
                        self.state = payload_of(buf);
                        self.finish_if_empty(out);
                    }
                    &bytes[take..]
                }
                State::Payload {
                    kind,
                    remaining,
                    kept,
                    ..
                } => {
                    let take = (*remaining).min(bytes.len());
                    if keeps(*kind) && kept.len() < 8 + DEBUG_KEPT {
                        let room = (8 + DEBUG_KEPT - kept.len()).min(take);
                        kept.extend_from_slice(&bytes[..room]);
                    }
                    *remaining -= take;
                    self.finish_if_empty(out);
                    &bytes[take..]
                }
            };
        }
    }

    /// At the end of a payload: yields the frame when it is one of ours, then expects a header.
    fn finish_if_empty(&mut self, out: &mut Vec<Frame>) {
        let State::Payload {
            kind,
            stream_id,
            remaining: 0,
            kept,
        } = &self.state
        else {
            return;
        };
        if let Some(f) = frame_of(*kind, *stream_id, kept) {
            out.push(f);
        }
        self.state = State::Header {
            buf: [0; HEADER],
            have: 0,
        };
    }
}

fn keeps(kind: u8) -> bool {
    kind == GOAWAY || kind == RST_STREAM
}

fn payload_of(h: &[u8; HEADER]) -> State {
    let len = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
    State::Payload {
        kind: h[3],
        // The reserved high bit is ignored, as the RFC says.
        stream_id: u31(&h[5..9]),
        remaining: len,
        kept: Vec::new(),
    }
}

fn u31(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0] & 0x7f, b[1], b[2], b[3]])
}

fn frame_of(kind: u8, stream_id: u32, p: &[u8]) -> Option<Frame> {
    match kind {
        GOAWAY if p.len() >= 8 => Some(Frame::GoAway {
            last_stream_id: u31(&p[0..4]),
            code: u32::from_be_bytes([p[4], p[5], p[6], p[7]]),
            debug: String::from_utf8_lossy(&p[8..]).into_owned(),
        }),
        RST_STREAM if p.len() >= 4 => Some(Frame::RstStream {
            stream_id,
            code: u32::from_be_bytes([p[0], p[1], p[2], p[3]]),
        }),
        // A short payload is h2's protocol error to raise, not ours to report.
        _ => None,
    }
}

/// A frame and when it was read (`host::mono_ns`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// Monotonic nanoseconds at the read that completed it.
    pub at_ns: i64,
    /// The frame.
    pub frame: Frame,
}

/// A connection whose reads are watched: bytes pass through unchanged, frames go to `tx`.
#[derive(Debug)]
pub struct Watched<S> {
    inner: S,
    scanner: Scanner,
    found: Vec<Frame>,
    tx: mpsc::UnboundedSender<Seen>,
}

impl<S> Watched<S> {
    /// Watches `inner`; returns the connection and where its frames arrive.
    pub fn new(inner: S) -> (Self, mpsc::UnboundedReceiver<Seen>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let w = Self {
            inner,
            scanner: Scanner::default(),
            found: Vec::new(),
            tx,
        };
        (w, rx)
    }

    /// The connection underneath (for its socket's evidence).
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            let this = &mut *self;
            this.scanner.feed(&buf.filled()[before..], &mut this.found);
            if !this.found.is_empty() {
                let at_ns = host::mono_ns();
                for frame in this.found.drain(..) {
                    // The receiver gone means nobody records any more: nothing to keep.
                    let _ = this.tx.send(Seen { at_ns, frame });
                }
            }
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let n = payload.len();
        let mut v = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, kind, flags];
        v.extend_from_slice(&stream.to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    fn goaway(last: u32, code: u32, debug: &[u8]) -> Vec<u8> {
        let mut p = last.to_be_bytes().to_vec();
        p.extend_from_slice(&code.to_be_bytes());
        p.extend_from_slice(debug);
        frame(GOAWAY, 0, 0, &p)
    }

    /// A server's side: SETTINGS, a HEADERS and DATA, a RST_STREAM, then GOAWAY.
    fn conversation() -> Vec<u8> {
        let mut v = frame(0x4, 0, 0, &[0, 3, 0, 0, 0, 100]);
        v.extend(frame(0x1, 0x4, 1, &[0x88]));
        v.extend(frame(0x0, 0x1, 1, b"hello"));
        v.extend(frame(RST_STREAM, 0, 3, &8u32.to_be_bytes()));
        v.extend(goaway(3, 0, b"shutting down"));
        v
    }

    fn expected() -> Vec<Frame> {
        vec![
            Frame::RstStream {
                stream_id: 3,
                code: 8,
            },
            Frame::GoAway {
                last_stream_id: 3,
                code: 0,
                debug: "shutting down".into(),
            },
        ]
    }

    #[test]
    fn finds_rst_stream_and_goaway_among_other_frames() {
        let mut out = Vec::new();
        Scanner::default().feed(&conversation(), &mut out);
        assert_eq!(out, expected());
        assert_eq!(out[0].code_name(), "CANCEL");
        assert_eq!(out[1].code_name(), "NO_ERROR");
    }

    #[test]
    fn ignores_the_reserved_bit_and_names_unknown_codes_in_hex() {
        let mut out = Vec::new();
        Scanner::default().feed(&goaway(0x8000_0005, 0x1234, b""), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0],
            Frame::GoAway {
                last_stream_id: 5,
                code: 0x1234,
                debug: String::new()
            }
        );
        assert_eq!(out[0].code_name(), "0x1234");
        assert_eq!(code_name(7), "REFUSED_STREAM");
    }

    #[test]
    fn keeps_at_most_the_bound_of_debug_data_and_stays_in_step() {
        let mut v = goaway(1, 2, &[b'x'; 10_000]);
        v.extend(frame(RST_STREAM, 0, 9, &1u32.to_be_bytes()));
        let mut out = Vec::new();
        Scanner::default().feed(&v, &mut out);
        assert_eq!(out.len(), 2);
        let Frame::GoAway { debug, .. } = &out[0] else {
            panic!("first is the GOAWAY: {out:?}")
        };
        assert_eq!(debug.len(), DEBUG_KEPT);
        assert_eq!(
            out[1],
            Frame::RstStream {
                stream_id: 9,
                code: 1
            }
        );
    }

    #[test]
    fn a_short_payload_yields_nothing_and_the_next_frame_is_still_found() {
        let mut v = frame(GOAWAY, 0, 0, &[0, 0, 0]);
        v.extend(frame(RST_STREAM, 0, 1, &[0, 0]));
        v.extend(goaway(7, 0, b""));
        let mut out = Vec::new();
        Scanner::default().feed(&v, &mut out);
        assert_eq!(out.len(), 1);
        assert!(matches!(
            out[0],
            Frame::GoAway {
                last_stream_id: 7,
                ..
            }
        ));
    }

    proptest! {
        /// However the reads split the stream, the same frames come out.
        #[test]
        fn any_split_of_the_input_gives_the_same_frames(cuts in proptest::collection::vec(0usize..200, 0..12)) {
            let bytes = conversation();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            cuts.sort_unstable();
            let mut s = Scanner::default();
            let mut out = Vec::new();
            let mut from = 0;
            for c in cuts.into_iter().chain([bytes.len()]) {
                s.feed(&bytes[from..c], &mut out);
                from = c;
            }
            prop_assert_eq!(out, expected());
        }
    }

    #[tokio::test]
    async fn a_watched_stream_passes_bytes_unchanged_and_reports_frames() {
        use tokio::io::AsyncReadExt;
        let (mut server, client) = tokio::io::duplex(64);
        let bytes = conversation();
        let sent = bytes.clone();
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            for chunk in sent.chunks(7) {
                server.write_all(chunk).await?;
            }
            server.shutdown().await
        });
        let (mut w, mut rx) = Watched::new(client);
        let mut read = Vec::new();
        w.read_to_end(&mut read).await.expect("read");
        writer.await.expect("join").expect("write");
        assert_eq!(read, bytes);
        let mut frames = Vec::new();
        while let Ok(s) = rx.try_recv() {
            frames.push(s.frame);
        }
        assert_eq!(frames, expected());
    }
}
