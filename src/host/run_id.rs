//! The run id: one per `drainwatch run` process, naming its namespaces and marking every object
//! it creates (`drainwatch.dev/run`), so that parallel runs on one cluster never collide on a
//! name and a run's teardown never touches what another run created.
//!
//! It keeps the readable UTC second and adds a suffix hashed from the nanosecond wall clock,
//! the pid and the host name: two processes started in the same second differ in at least one
//! of them. It is an identifier, not a measurement, so a hash (FNV-1a, deterministic, no RNG)
//! is all it needs.

use super::{hostname, wall_ns};
use crate::evidence::timeline::format_wall_ns;

/// Length of a run id: `YYYYMMDD-HHMMSS-` and 8 hex digits.
pub const RUN_ID_LEN: usize = 24;

/// The run id of this process, from its clock, pid and host name.
pub fn run_id() -> String {
    // A host name that cannot be read only weakens the suffix; pid and nanoseconds remain.
    let host = hostname().unwrap_or_default();
    run_id_of(wall_ns(), std::process::id(), &host)
}

/// The run id of a process started at `wall_ns` with `pid` on `host`: a pure function, so its
/// format and its inputs are tested without a clock.
pub fn run_id_of(wall_ns: i64, pid: u32, host: &str) -> String {
    let digits: String = format_wall_ns(wall_ns)
        .chars()
        .filter(char::is_ascii_digit)
        .take(14)
        .collect();
    let (date, time) = digits.split_at(8.min(digits.len()));
    let mut h = Fnv::new();
    h.write(&wall_ns.to_le_bytes());
    h.write(&pid.to_le_bytes());
    h.write(host.as_bytes());
    let folded = h.0 ^ (h.0 >> 32);
    format!("{date}-{time}-{:08x}", folded & 0xffff_ffff)
}

/// Whether `s` has the shape of a run id (what `cleanup --run` accepts): it is then also a
/// valid label value and fits a namespace name.
pub fn is_run_id(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == RUN_ID_LEN
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 15 => *c == b'-',
            0..=14 => c.is_ascii_digit(),
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(c),
        })
}

/// FNV-1a, 64 bit.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-12-01T12:43:15.123456789Z.
    const T: i64 = 1_796_128_995_123_456_789;

    #[test]
    fn keeps_the_utc_second_and_has_the_documented_shape() {
        let id = run_id_of(T, 4242, "vm");
        assert_eq!(&id[..16], "20261201-124315-", "{id}");
        assert_eq!(id.len(), RUN_ID_LEN);
        assert!(is_run_id(&id), "{id}");
        // The same inputs give the same id: it is a hash, not a draw.
        assert_eq!(id, run_id_of(T, 4242, "vm"));
    }

    #[test]
    fn differs_when_any_input_differs_within_one_second() {
        let base = run_id_of(T, 4242, "vm");
        let others = [
            run_id_of(T + 1, 4242, "vm"),
            run_id_of(T, 4243, "vm"),
            run_id_of(T, 4242, "vm2"),
        ];
        assert_eq!(others.len(), 3);
        for o in &others {
            assert_eq!(o[..16], base[..16], "same second, same stamp");
            assert_ne!(o, &base, "the suffix tells them apart");
        }
    }

    #[test]
    fn names_built_from_it_are_dns_labels() {
        let id = run_id();
        assert!(is_run_id(&id), "{id}");
        let ns = format!("drainwatch-{id}-001");
        assert!(ns.len() <= 63, "{ns}");
        assert!(
            ns.bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-'),
            "{ns}"
        );
    }

    #[test]
    fn rejects_what_is_not_a_run_id() {
        for bad in [
            "",
            "all",
            "20261201-124315",
            "20261201-124315-A1B2C3D4",
            "20261201-124315-a1b2c3d",
            "20261201x124315-a1b2c3d4",
            "2026120a-124315-a1b2c3d4",
            "20261201-124315-a1b2c3d4,x=y",
        ] {
            assert!(!is_run_id(bad), "{bad:?}");
        }
    }
}
