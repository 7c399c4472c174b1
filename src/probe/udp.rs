//! The probe's UDP side: several sockets share the port (SO_REUSEPORT) so that the kernel
//! spreads flows over them, and each answers every `ping` with an `ack`.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::net::UdpSocket;

use super::emit::Emitter;
use crate::evidence::event::EventName;
use crate::host;
use crate::wire;

/// Counters shared by the UDP sockets.
#[derive(Default)]
pub struct UdpStats {
    /// Distinct source addresses seen.
    pub flows: AtomicU64,
    /// Acks sent.
    pub replies: AtomicU64,
}

/// Answers pings on one socket until the process exits.
pub async fn serve(sock: UdpSocket, emitter: Emitter, instance: Arc<str>, stats: Arc<UdpStats>) {
    let mut seen: HashSet<SocketAddr> = HashSet::new();
    let mut buf = [0u8; 512];
    loop {
        let (n, peer) = match sock.recv_from(&mut buf).await {
            Ok(x) => x,
            // ICMP errors from a vanished client surface here; they are not ours to act on.
            Err(_) => continue,
        };
        if seen.insert(peer) {
            let k = stats.flows.fetch_add(1, Ordering::Relaxed) + 1;
            emitter.emit(
                EventName::UdpFlowFirstSeen,
                Some(&format!("srv-udp-{k:04}")),
                Some(peer.to_string()),
            );
        }
        if let Some(reply) = wire::ack(&buf[..n], &instance, host::wall_ns()) {
            if sock.send_to(reply.as_bytes(), peer).await.is_ok() {
                stats.replies.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
