//! Both directions of UDP: the probe's answer to any datagram (`wire::ack`), and the client's
//! parser of what comes back. Properties: no panic; only a ping is answered; a ping of ours
//! round-trips to an ack carrying its sequence number (and the clock when asked); an answer
//! grows the datagram by at most the instance, the clock and the verb.
#![no_main]

use drainwatch::wire::{self, ProbeLine};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    datagram: &'a [u8],
    instance: &'a str,
    unix_ns: i64,
    seq: u64,
    clock: bool,
}

fuzz_target!(|i: Input<'_>| {
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
});
