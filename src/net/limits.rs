//! The open-file limit, checked before dialling: one socket per flow, so a request that
//! cannot fit is refused by name instead of failing flows at random.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// Descriptors kept free for the runtime, stdout, the probe's pipes and the event file.
pub const RESERVED_FDS: u64 = 64;

/// The limit could not be raised far enough.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LimitError {
    /// The hard limit is below what the flows need.
    #[error(
        "{needed} flows need {} open files but the hard RLIMIT_NOFILE is {hard} and cannot be raised without CAP_SYS_RESOURCE: use fewer flows per client (--clients N shards them over processes)",
        needed + RESERVED_FDS
    )]
    HardLimit {
        /// Sockets asked for.
        needed: u64,
        /// The hard limit.
        hard: u64,
    },
    /// getrlimit/setrlimit failed.
    #[error("failed to read or raise RLIMIT_NOFILE: {0}")]
    Sys(nix::Error),
}

/// Raises the soft limit so that `sockets` more descriptors fit; returns the soft limit now.
pub fn ensure_fds(sockets: u64) -> Result<u64, LimitError> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(LimitError::Sys)?;
    let want = sockets + RESERVED_FDS;
    if want <= soft {
        return Ok(soft);
    }
    if want > hard {
        return Err(LimitError::HardLimit {
            needed: sockets,
            hard,
        });
    }
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).map_err(LimitError::Sys)?;
    Ok(hard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_requests_name_the_limit() {
        let e = ensure_fds(u64::MAX / 2).unwrap_err();
        assert!(e.to_string().contains("RLIMIT_NOFILE"));
        assert!(ensure_fds(10).unwrap() >= 10 + RESERVED_FDS);
    }
}
