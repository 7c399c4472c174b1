//! Benchmark counters of the client (opt-in with the hidden `--bench-stats` flag): heartbeat
//! lateness and UDP round trips as fixed-size histograms, so that measuring costs no memory
//! that grows with the run and no event line per reply.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

/// Sub-buckets per power of two: a recorded value is known to within 1/16 (6 %).
const SUB: usize = 16;
const SUB_BITS: u32 = 4;
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB;

/// A log-linear histogram of nanoseconds, safe to update from every flow task.
pub struct Histogram {
    counts: Vec<AtomicU64>,
    n: AtomicU64,
    max: AtomicU64,
}

fn index(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros();
    let mant = (v >> (exp - SUB_BITS)) as usize & (SUB - 1);
    (exp - SUB_BITS + 1) as usize * SUB + mant
}

/// The largest value that falls in bucket `i`.
fn upper(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let exp = (i / SUB) as u32 + SUB_BITS - 1;
    let mant = (i % SUB) as u128;
    // u128: the top buckets' bounds pass u64::MAX.
    let hi = ((SUB as u128 + mant + 1) << (exp - SUB_BITS)) - 1;
    u64::try_from(hi).unwrap_or(u64::MAX)
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            n: AtomicU64::new(0),
            max: AtomicU64::new(0),
        }
    }
}

impl Histogram {
    /// Records one value; negative values (clock steps cannot happen on one monotonic clock,
    /// but a bad peer field can) count as zero.
    pub fn record(&self, ns: i64) {
        let v = u64::try_from(ns).unwrap_or(0);
        if let Some(c) = self.counts.get(index(v)) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        self.n.fetch_add(1, Ordering::Relaxed);
        self.max.fetch_max(v, Ordering::Relaxed);
    }

    /// The value at quantile `q` (0..=1), as its bucket's upper bound capped by the maximum.
    pub fn quantile(&self, q: f64) -> u64 {
        let n = self.n.load(Ordering::Relaxed);
        if n == 0 {
            return 0;
        }
        // Rank of the q-th value, 1-based; float precision is ample for counts below 2^52.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c.load(Ordering::Relaxed);
            if seen >= rank {
                return upper(i).min(self.max.load(Ordering::Relaxed));
            }
        }
        self.max.load(Ordering::Relaxed)
    }

    /// Values at or below `limit`.
    pub fn at_most(&self, limit: u64) -> u64 {
        self.counts
            .iter()
            .enumerate()
            .take_while(|(i, _)| upper(*i) <= limit)
            .map(|(_, c)| c.load(Ordering::Relaxed))
            .sum()
    }

    /// `{"n":..,"p50_ns":..,"p90_ns":..,"p99_ns":..,"p999_ns":..,"max_ns":..}`.
    pub fn summary(&self) -> serde_json::Value {
        serde_json::json!({
            "n": self.n.load(Ordering::Relaxed),
            "p50_ns": self.quantile(0.5),
            "p90_ns": self.quantile(0.9),
            "p99_ns": self.quantile(0.99),
            "p999_ns": self.quantile(0.999),
            "max_ns": self.max.load(Ordering::Relaxed),
        })
    }
}

/// What the client measured, shared by every flow task.
#[derive(Default)]
pub struct BenchStats {
    /// Heartbeat arrival minus its scheduled send (the probe's fifth field), both monotonic.
    pub hb_lateness: Histogram,
    /// UDP ack arrival minus its ping's send.
    pub udp_rtt: Histogram,
    /// UDP pings sent.
    pub udp_sent: AtomicU64,
    /// CLOCK_MONOTONIC when the client started dialling.
    pub started_ns: AtomicI64,
    /// CLOCK_MONOTONIC when the last flow finished dialling.
    pub dialled_ns: AtomicI64,
    /// CLOCK_MONOTONIC when every flow had carried data.
    pub carrying_ns: AtomicI64,
    /// CLOCK_MONOTONIC when the harness opened the measuring window.
    pub opened_ns: AtomicI64,
    /// CLOCK_MONOTONIC when the harness ended the measuring window.
    pub frozen_ns: AtomicI64,
    /// Whether replies are counted now: between the harness's two SIGUSR2, so that dialling
    /// and the final close do not mix into the steady state.
    measuring: AtomicBool,
}

impl std::fmt::Debug for BenchStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BenchStats")
    }
}

impl BenchStats {
    /// Whether the steady-state window is open.
    pub fn measuring(&self) -> bool {
        self.measuring.load(Ordering::Relaxed)
    }

    /// The harness's SIGUSR2 at `now`: the first opens the window, the second closes it.
    pub fn toggle_window(&self, now: i64) {
        if self.opened_ns.load(Ordering::Relaxed) == 0 {
            self.opened_ns.store(now, Ordering::Relaxed);
            self.measuring.store(true, Ordering::Relaxed);
        } else if self.measuring.swap(false, Ordering::Relaxed) {
            self.frozen_ns.store(now, Ordering::Relaxed);
        }
    }

    /// The one-line JSON dump the benchmark harness reads (`interval_ns` is the ping interval).
    pub fn to_json(&self, interval_ns: u64) -> String {
        let sent = self.udp_sent.load(Ordering::Relaxed);
        serde_json::json!({
            "hb_lateness": self.hb_lateness.summary(),
            "udp_rtt": self.udp_rtt.summary(),
            "udp_sent": sent,
            "udp_answered_within_interval": self.udp_rtt.at_most(interval_ns),
            "started_ns": self.started_ns.load(Ordering::Relaxed),
            "dialled_ns": self.dialled_ns.load(Ordering::Relaxed),
            "carrying_ns": self.carrying_ns.load(Ordering::Relaxed),
            "opened_ns": self.opened_ns.load(Ordering::Relaxed),
            "frozen_ns": self.frozen_ns.load(Ordering::Relaxed),
        })
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_bound_their_values() {
        for v in [
            0u64,
            1,
            15,
            16,
            17,
            31,
            32,
            33,
            1000,
            999_999,
            5_000_000,
            u64::MAX / 2,
        ] {
            let i = index(v);
            assert!(upper(i) >= v, "{v}");
            assert!(i == 0 || upper(i - 1) < v, "{v}");
        }
    }

    #[test]
    fn quantiles_within_a_sixteenth() {
        let h = Histogram::default();
        for v in 1..=1000i64 {
            h.record(v * 1000);
        }
        let p50 = h.quantile(0.5);
        assert!((500_000..=500_000 + 500_000 / 16).contains(&p50), "{p50}");
        assert_eq!(h.quantile(1.0), 1_000_000);
        assert_eq!(h.at_most(u64::MAX), 1000);
        h.record(-5);
        assert_eq!(h.quantile(0.0), 0);
    }
}
