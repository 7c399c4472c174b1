//! Processes by pid, safely: a pid is only the process recorded if its start time (field 22
//! of `/proc/PID/stat`, clock ticks since boot) is the one recorded too, so that a pid the
//! kernel handed to another process since is never signalled.

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The start time of `pid` and whether it is a zombie (exited, not yet reaped); None when
/// there is no such process.
fn stat(pid: i32) -> Option<(u64, bool)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields after it are
    // counted from its last ')'.
    let rest = s.get(s.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let zombie = fields.first().is_some_and(|f| *f == "Z" || *f == "X");
    // Field 3 (the state) is fields[0], so field 22 is fields[19].
    Some((fields.get(19)?.parse().ok()?, zombie))
}

/// The start time of `pid`, if it runs.
pub fn start_ticks(pid: i32) -> Option<u64> {
    stat(pid).filter(|(_, z)| !z).map(|(t, _)| t)
}

/// Whether the process `pid` that started at `ticks` still runs (not a zombie) on this boot.
pub fn live(pid: i32, ticks: Option<u64>) -> bool {
    match (start_ticks(pid), ticks) {
        (Some(now), Some(then)) => now == then,
        // Without a recorded start time a live pid cannot be told from a reused one: taken
        // as live, so that nothing is killed or replayed on a guess.
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// What became of a recorded process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// It had exited already.
    Gone,
    /// It was running and was killed (SIGKILL) and is gone now.
    Killed,
    /// The pid belongs to another process now (or its start time was not recorded): left alone.
    NotOurs,
    /// SIGKILL was sent, but it is still there after the wait.
    Survived,
}

/// Kills `pid` with SIGKILL if it is the process that started at `ticks`, and waits (up to
/// `wait`) until it is gone.
pub fn kill_if_same(pid: i32, ticks: Option<u64>, wait: Duration) -> Fate {
    let Some(now) = start_ticks(pid) else {
        return Fate::Gone;
    };
    if ticks != Some(now) {
        return Fate::NotOurs;
    }
    if kill(Pid::from_raw(pid), Signal::SIGKILL).is_err() {
        return if start_ticks(pid).is_none() {
            Fate::Gone
        } else {
            Fate::Survived
        };
    }
    let t = Instant::now();
    while t.elapsed() < wait {
        if start_ticks(pid) != Some(now) {
            return Fate::Killed;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Fate::Survived
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_live_and_a_wrong_start_time_is_not_it() {
        let me = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
        let t = start_ticks(me);
        assert!(t.is_some());
        assert!(live(me, t));
        assert!(!live(me, t.map(|t| t + 1)));
        assert_eq!(
            kill_if_same(me, t.map(|t| t + 1), Duration::ZERO),
            Fate::NotOurs
        );
    }
}
