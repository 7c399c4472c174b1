//! Hostile or malformed input the probe refuses or ignores, counted per kind and logged at
//! counts 1, 10, 100, … (and every kind's total at SIGTERM), never once per byte, line or
//! datagram: a flood cannot turn the probe's log into the flood, and no count is lost.
//!
//! The log is count-driven, not time-driven, so the number of lines a given flood produces is
//! deterministic: at most one per decade of its count, plus the total.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::emit::Emitter;
use crate::evidence::event::EventName;

/// A kind of refused or ignored input: a closed set, each with its own event name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Abuse {
    /// A line on a TCP flow that is not a ping.
    TcpLineUnrecognised,
    /// More than [`super::scan::MAX_CLIENT_LINE_BYTES`] bytes on a TCP flow without a newline.
    TcpLineTooLong,
    /// A TCP connection past the connection cap.
    TcpConnectionRefused,
    /// An accept that failed (EMFILE and friends), on the flow or the health port.
    AcceptFailed,
    /// A UDP datagram that is not a ping.
    UdpUnrecognised,
    /// A UDP datagram longer than [`super::udp::MAX_DATAGRAM_BYTES`].
    UdpOversized,
    /// A new UDP peer past [`super::udp::MAX_UDP_PEERS`].
    UdpPeerTableFull,
    /// A health request not complete within [`super::ready::HEALTH_REQUEST_DEADLINE`].
    HealthTimeout,
    /// A health request head past [`super::ready::MAX_HEALTH_REQUEST_BYTES`].
    HealthTooLarge,
    /// A health connection past [`super::ready::MAX_HEALTH_CONNECTIONS`].
    HealthRefused,
}

impl Abuse {
    /// Every kind, in the order the totals are written.
    pub const ALL: [Abuse; 10] = [
        Abuse::TcpLineUnrecognised,
        Abuse::TcpLineTooLong,
        Abuse::TcpConnectionRefused,
        Abuse::AcceptFailed,
        Abuse::UdpUnrecognised,
        Abuse::UdpOversized,
        Abuse::UdpPeerTableFull,
        Abuse::HealthTimeout,
        Abuse::HealthTooLarge,
        Abuse::HealthRefused,
    ];

    /// The event each logged occurrence is written as.
    pub fn event(self) -> EventName {
        match self {
            Abuse::TcpLineUnrecognised => EventName::TcpInputUnrecognised,
            Abuse::TcpLineTooLong => EventName::TcpInputLineTooLong,
            Abuse::TcpConnectionRefused => EventName::TcpConnectionRefused,
            Abuse::AcceptFailed => EventName::TcpAcceptFailed,
            Abuse::UdpUnrecognised => EventName::UdpDatagramUnrecognised,
            Abuse::UdpOversized => EventName::UdpDatagramOversized,
            Abuse::UdpPeerTableFull => EventName::UdpPeerTableFull,
            Abuse::HealthTimeout => EventName::HealthRequestTimeout,
            Abuse::HealthTooLarge => EventName::HealthRequestTooLarge,
            Abuse::HealthRefused => EventName::HealthConnectionRefused,
        }
    }

    fn index(self) -> usize {
        Abuse::ALL.iter().position(|k| *k == self).unwrap_or(0)
    }
}

/// Whether the `n`th occurrence is logged: 1, 10, 100, …
pub fn logged_at(n: u64) -> bool {
    let mut p = 1u64;
    loop {
        if n == p {
            return true;
        }
        match p.checked_mul(10) {
            Some(next) if next <= n => p = next,
            _ => return false,
        }
    }
}

/// The per-kind counters, shared by every server task.
pub struct Refusals {
    counts: [AtomicU64; Abuse::ALL.len()],
    emitter: Emitter,
}

impl Refusals {
    /// Counters at zero, logging through `emitter`.
    pub fn new(emitter: Emitter) -> Arc<Self> {
        Arc::new(Self {
            counts: Default::default(),
            emitter,
        })
    }

    /// Counts one occurrence of `kind`; logs it, with `detail()` about this one, when the
    /// count reaches 1, 10, 100, … (`detail` is not even built otherwise).
    pub fn note(&self, kind: Abuse, errno: Option<String>, detail: impl FnOnce() -> String) {
        let n = self.counts[kind.index()].fetch_add(1, Ordering::Relaxed) + 1;
        if !logged_at(n) {
            return;
        }
        let mut l = self.emitter.line(kind.event());
        l.detail = Some(format!(
            "count={n} (logged at counts 1, 10, 100, ...; the total at SIGTERM): {}",
            detail()
        ));
        l.errno = errno;
        self.emitter.send(l);
    }

    /// The count of `kind` so far.
    pub fn count(&self, kind: Abuse) -> u64 {
        self.counts[kind.index()].load(Ordering::Relaxed)
    }

    /// One `probe_input_totals` line naming every kind seen and its count; none when the input
    /// was clean.
    pub fn log_totals(&self) {
        let seen: Vec<String> = Abuse::ALL
            .iter()
            .filter_map(|k| {
                let n = self.count(*k);
                (n > 0).then(|| format!("{}={n}", k.event().as_str()))
            })
            .collect();
        if !seen.is_empty() {
            self.emitter
                .emit(EventName::ProbeInputTotals, None, Some(seen.join(" ")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_once_per_decade() {
        let at: Vec<u64> = (1..=100_000).filter(|n| logged_at(*n)).collect();
        assert_eq!(at, vec![1, 10, 100, 1_000, 10_000, 100_000]);
        assert!(logged_at(10_000_000_000_000_000_000));
        assert!(!logged_at(u64::MAX));
        assert!(!logged_at(0));
    }

    #[test]
    fn every_kind_has_its_own_event() {
        let mut names: Vec<String> = Abuse::ALL
            .iter()
            .map(|k| k.event().as_str().to_string())
            .collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Abuse::ALL.len());
        for (i, k) in Abuse::ALL.iter().enumerate() {
            assert_eq!(k.index(), i);
        }
    }
}
