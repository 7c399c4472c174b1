//! Facts and clocks of the machine this process runs on: the only place that reads a clock.
//!
//! Times are raw CLOCK_MONOTONIC nanoseconds, so processes on one kernel (the orchestrator, a
//! local probe, a pod on the same node) share a timebase exactly; the boot id names that
//! timebase.

mod process;
mod run_id;

use std::time::{SystemTime, UNIX_EPOCH};

use nix::time::{ClockId, clock_gettime};

pub use process::{Fate, kill_if_same, live, start_ticks};
pub use run_id::{RUN_ID_LEN, is_run_id, run_id, run_id_of};

/// Errors reading host facts.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The kernel boot id could not be read.
    #[error("failed to read the kernel boot id from /proc/sys/kernel/random/boot_id")]
    BootId(#[source] std::io::Error),
    /// uname failed.
    #[error("failed to read the kernel release (uname)")]
    Uname(#[source] nix::Error),
    /// gethostname failed.
    #[error("failed to read the host name")]
    Hostname(#[source] nix::Error),
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn mono_ns() -> i64 {
    match clock_gettime(ClockId::CLOCK_MONOTONIC) {
        Ok(ts) => ts.tv_sec() * 1_000_000_000 + ts.tv_nsec(),
        // CLOCK_MONOTONIC cannot fail on Linux; 0 would show up as an absurd time, not a panic.
        Err(_) => 0,
    }
}

/// The wall clock in Unix nanoseconds.
pub fn wall_ns() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
    }
}

/// The kernel's boot id: equal ids mean one CLOCK_MONOTONIC.
pub fn boot_id() -> Result<String, HostError> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .map_err(HostError::BootId)
}

/// The kernel release.
pub fn kernel() -> Result<String, HostError> {
    nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .map_err(HostError::Uname)
}

/// The host name.
pub fn hostname() -> Result<String, HostError> {
    nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .map_err(HostError::Hostname)
}

/// The symbolic errno of an I/O error (`ECONNRESET`), if it has one.
pub fn errno_name(e: &std::io::Error) -> Option<String> {
    if e.kind() == std::io::ErrorKind::TimedOut {
        return Some("ETIMEDOUT".into());
    }
    e.raw_os_error()
        .map(|n| format!("{:?}", nix::errno::Errno::from_raw(n)))
        .filter(|s| s.starts_with('E'))
}

/// drainwatch's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit this binary was built from, or `unknown`.
pub const GIT_COMMIT: &str = match option_env!("DRAINWATCH_GIT_COMMIT") {
    Some(c) => c,
    None => "unknown",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_and_facts() {
        let a = mono_ns();
        let b = mono_ns();
        assert!(b >= a && a > 0);
        assert!(wall_ns() > 1_700_000_000_000_000_000);
        assert_eq!(boot_id().unwrap().len(), 36);
        assert!(!kernel().unwrap().is_empty());
        let e = std::io::Error::from_raw_os_error(libc::ECONNRESET);
        assert_eq!(errno_name(&e).as_deref(), Some("ECONNRESET"));
    }
}
