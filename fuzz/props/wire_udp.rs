//! The property of the `wire_udp` fuzz target, shared with `tests/fuzz_corpora.rs` (which
//! replays the committed seeds on stable): both directions of UDP, the probe's answer to any
//! datagram (`wire::ack`) and the client's parser of what comes back. No panic; only a ping is
//! answered; a ping of ours round-trips to an ack carrying its sequence number (and the clock
//! when asked); an answer grows the datagram by at most the instance, the clock and the verb.
//!
//! The bytes decode to an [`Input`] as libFuzzer's `fuzz_target!(|i: Input| …)` decodes a typed
//! input (`arbitrary`: too short for the type's size hint, or undecodable, is not run), so a seed
//! means the same input in both.

use arbitrary::{Arbitrary, Unstructured};
use drainwatch::wire::{self, ProbeLine};

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    datagram: &'a [u8],
    instance: &'a str,
    unix_ns: i64,
    seq: u64,
    clock: bool,
}

/// Whether the bytes made an input of this target: `false` (nothing checked) where they cannot,
/// and the fuzz target then tells libFuzzer to reject them.
pub fn check(data: &[u8]) -> bool {
    if data.len() < Input::size_hint(0).0 {
        return false;
    }
    let Ok(i) = Input::arbitrary_take_rest(Unstructured::new(data)) else {
        return false;
    };
    let instance_ok = !i.instance.is_empty() && !i.instance.contains([' ', '\r', '\n']);
    // The probe's side: any bytes.
    if let Some(reply) = wire::ack(i.datagram, i.instance, i.unix_ns) {
        assert!(i.datagram.starts_with(b"ping "), "answered a non-ping");
        assert!(reply.len() <= i.datagram.len() + i.instance.len() + 32);
        // The client's side of whatever came back.
        let _ = wire::parse_probe_line(&reply);
    }
    // The client's side of any datagram.
    let _ = wire::parse_probe_line(&String::from_utf8_lossy(i.datagram));
    // Our own ping, answered by our own probe, parses back.
    if instance_ok {
        let ping = wire::ping(i.seq, i.clock);
        let reply = wire::ack(ping.as_bytes(), i.instance, i.unix_ns);
        assert!(reply.is_some(), "our ping was not answered");
        let reply = reply.unwrap_or_default();
        assert_eq!(
            wire::parse_probe_line(&reply),
            ProbeLine::Ack {
                seq: Some(i.seq),
                instance: i.instance,
                unix_ns: i.clock.then_some(i.unix_ns),
            }
        );
    }
    true
}
