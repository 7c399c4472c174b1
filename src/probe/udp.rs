//! The probe's UDP side: several sockets share the port (SO_REUSEPORT) so that the kernel
//! spreads flows over them, and each answers every `ping` with an `ack`. Anything else is
//! counted and dropped unanswered, and the table of peers seen has a cap, so junk from many
//! source addresses costs neither memory nor a log line per datagram.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::net::UdpSocket;

use super::abuse::{Abuse, Refusals};
use super::emit::Emitter;
use crate::evidence::event::EventName;
use crate::host;
use crate::wire;

/// The longest datagram answered: a ping is under 40 bytes. Longer ones are counted, not
/// answered (an echo of them would turn the probe into an amplifier).
pub const MAX_DATAGRAM_BYTES: usize = 512;
/// Distinct peers remembered over all sockets, for `udp_flow_first_seen`; past it a new
/// peer is still acked but counted in `udp_peer_table_full` instead of announced.
pub const MAX_UDP_PEERS: usize = 262_144;

/// Counters shared by the UDP sockets.
#[derive(Default)]
pub struct UdpStats {
    /// Distinct source addresses seen.
    pub flows: AtomicU64,
    /// Acks sent.
    pub replies: AtomicU64,
}

/// Answers pings on one of `sockets` sockets until the process exits.
pub async fn serve(
    sock: UdpSocket,
    emitter: Emitter,
    instance: Arc<str>,
    stats: Arc<UdpStats>,
    refusals: Arc<Refusals>,
    sockets: usize,
) {
    // A peer always lands on the same socket (SO_REUSEPORT hashes its address), so each
    // socket keeps its own share of the table.
    let cap = MAX_UDP_PEERS / sockets.max(1);
    let mut seen: HashSet<SocketAddr> = HashSet::new();
    // One byte more than answered, to tell an oversized datagram from a full-sized one.
    let mut buf = [0u8; MAX_DATAGRAM_BYTES + 1];
    loop {
        let (n, peer) = match sock.recv_from(&mut buf).await {
            Ok(x) => x,
            // ICMP errors from a vanished client surface here; they are not ours to act on.
            Err(_) => continue,
        };
        if n > MAX_DATAGRAM_BYTES {
            refusals.note(Abuse::UdpOversized, None, || {
                format!("{peer}: more than {MAX_DATAGRAM_BYTES} bytes")
            });
            continue;
        }
        let Some(reply) = wire::ack(&buf[..n], &instance, host::wall_ns()) else {
            refusals.note(Abuse::UdpUnrecognised, None, || {
                format!("{peer}: {n} bytes that are not a ping")
            });
            continue;
        };
        if !seen.contains(&peer) {
            if seen.len() < cap {
                seen.insert(peer);
                let k = stats.flows.fetch_add(1, Ordering::Relaxed) + 1;
                emitter.emit(
                    EventName::UdpFlowFirstSeen,
                    Some(&format!("srv-udp-{k:04}")),
                    Some(peer.to_string()),
                );
            } else {
                refusals.note(Abuse::UdpPeerTableFull, None, || {
                    format!("{peer}: {cap} peers already seen on this socket; acked, not announced")
                });
            }
        }
        if sock.send_to(reply.as_bytes(), peer).await.is_ok() {
            stats.replies.fetch_add(1, Ordering::Relaxed);
        }
    }
}
