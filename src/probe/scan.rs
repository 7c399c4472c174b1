//! What a client sends on a TCP flow, checked as it streams past: the probe never buffers a
//! client's bytes (a flow's reads go into a fixed buffer and are dropped), so a line is judged
//! by a few bytes of state, whatever its length.

/// The longest line a client may send: a ping (`ping <seq>`, at most 26 bytes with a u64
/// sequence) with plenty of room; longer is counted as too long, however long it gets.
pub const MAX_CLIENT_LINE_BYTES: usize = 256;

const PING: &[u8] = b"ping ";

/// Counts from one chunk of client bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// Complete lines that were not pings.
    pub unrecognised: u64,
    /// Lines that passed [`MAX_CLIENT_LINE_BYTES`] (each counted once, when it did).
    pub too_long: u64,
}

/// The state of the line being read.
#[derive(Debug, Default, Clone, Copy)]
pub struct LineScan {
    len: usize,
    not_ping: bool,
}

impl LineScan {
    /// Feeds `bytes`; the counts they completed.
    pub fn feed(&mut self, bytes: &[u8]) -> Seen {
        let mut seen = Seen::default();
        for &b in bytes {
            if b == b'\n' {
                // An over-long line was counted when it passed the cap, not again at its end.
                if self.len <= MAX_CLIENT_LINE_BYTES && (self.not_ping || self.len < PING.len()) {
                    seen.unrecognised += 1;
                }
                *self = Self::default();
                continue;
            }
            if self.len < PING.len() && PING[self.len] != b {
                self.not_ping = true;
            }
            self.len = self.len.saturating_add(1);
            if self.len == MAX_CLIENT_LINE_BYTES + 1 {
                seen.too_long += 1;
            }
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(chunks: &[&[u8]]) -> Seen {
        let mut s = LineScan::default();
        let mut total = Seen::default();
        for c in chunks {
            let n = s.feed(c);
            total.unrecognised += n.unrecognised;
            total.too_long += n.too_long;
        }
        total
    }

    #[test]
    fn pings_pass_in_any_split() {
        assert_eq!(feed(&[b"ping 1\nping 2\r\n"]), Seen::default());
        assert_eq!(feed(&[b"pi", b"ng 3", b"\n"]), Seen::default());
        // A partial line is judged only when it ends.
        assert_eq!(feed(&[b"garbage without end"]), Seen::default());
    }

    #[test]
    fn garbage_counts_per_line() {
        let n = feed(&[b"hello\n\nping\npong 1\nGET / HTTP/1.1\r\n"]);
        assert_eq!(
            n,
            Seen {
                unrecognised: 5,
                too_long: 0
            }
        );
    }

    #[test]
    fn a_long_line_counts_once_whatever_its_length() {
        let big = vec![b'x'; 1 << 20];
        assert_eq!(
            feed(&[&big, &big, b"\n", b"ping 4\n"]),
            Seen {
                unrecognised: 0,
                too_long: 1
            }
        );
        let mut ping_long = b"ping ".to_vec();
        ping_long.extend(std::iter::repeat_n(b'9', MAX_CLIENT_LINE_BYTES));
        ping_long.push(b'\n');
        assert_eq!(feed(&[&ping_long]).too_long, 1);
        let mut edge = b"ping ".to_vec();
        edge.extend(std::iter::repeat_n(b'9', MAX_CLIENT_LINE_BYTES - 5));
        edge.push(b'\n');
        assert_eq!(feed(&[&edge]), Seen::default());
    }
}
