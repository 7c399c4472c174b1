//! Child processes of this one (the local probe, the client shards), started one way: stdin
//! closed, stdout and stderr piped for the event relay, killed if dropped, and the pid read
//! at once so that a signal can reach it.

use nix::unistd::Pid;
use tokio::process::{Child, ChildStderr, ChildStdout, Command};

use crate::evidence::journal::{Change, ProcessRole};
use crate::host;
use crate::recorder::Recorder;
use crate::recorder::journal::JournalError;

/// A started child with its output pipes taken.
pub struct Piped {
    /// The process (killed on drop).
    pub child: Child,
    /// Its pid, for signals.
    pub pid: Pid,
    /// Its stdout, where event lines arrive.
    pub stdout: ChildStdout,
    /// Its stderr, relayed to ours.
    pub stderr: ChildStderr,
}

/// Why a child could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The exec failed.
    #[error("spawning {what}")]
    Spawn {
        /// Which child.
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// It exited before its pid could be read, or the pid does not fit a pid_t.
    #[error("{what} exited before its pid was read")]
    NoPid {
        /// Which child.
        what: String,
    },
    /// The child could not be recorded in the restore journal; it was killed at once.
    #[error("{what} was killed at once: it could not be recorded in the restore journal")]
    Journal {
        /// Which child.
        what: String,
        /// Why.
        #[source]
        source: JournalError,
    },
    /// Its output was not captured.
    #[error("{what}: stdout/stderr were not captured")]
    NotCaptured {
        /// Which child.
        what: String,
    },
}

/// Starts `cmd` as the child `what` with piped output.
pub fn piped(cmd: &mut Command, what: &str) -> Result<Piped, SpawnError> {
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| SpawnError::Spawn {
            what: what.to_string(),
            source,
        })?;
    let pid = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .map(Pid::from_raw)
        .ok_or_else(|| SpawnError::NoPid {
            what: what.to_string(),
        })?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(SpawnError::NotCaptured {
            what: what.to_string(),
        });
    };
    Ok(Piped {
        child,
        pid,
        stdout,
        stderr,
    })
}

/// Records the child `pid` in the run's restore journal, so that `drainwatch cleanup` can end
/// it should this process be killed; returns the change, for the restore once it has exited.
/// A child that cannot be recorded must be killed by the caller (dropping its [`Piped`] does).
pub fn journal(
    rec: &Recorder,
    role: ProcessRole,
    pid: Pid,
    what: &str,
) -> Result<Change, SpawnError> {
    let change = Change::ProcessSpawned {
        role,
        pid: pid.as_raw(),
        start_ticks: host::start_ticks(pid.as_raw()),
        boot_id: host::boot_id().unwrap_or_default(),
    };
    rec.made(change.clone())
        .map_err(|source| SpawnError::Journal {
            what: what.to_string(),
            source,
        })?;
    Ok(change)
}
