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
    /// More flows of one protocol than the kernel has ephemeral ports.
    #[error(
        "{needed} {proto} flows need as many local ports but net.ipv4.ip_local_port_range offers {available}: widen it (sysctl) or use fewer flows per client"
    )]
    Ports {
        /// tcp or udp.
        proto: &'static str,
        /// Flows asked for.
        needed: u64,
        /// Ports in the range.
        available: u64,
    },
    /// Even sharded over `clients` processes, one process's share does not fit.
    #[error(
        "{tcp} tcp + {udp} udp flows over {clients} client process(es) put {per_client} flows in one process, which needs {} open files, but the hard RLIMIT_NOFILE is {hard} and cannot be raised without CAP_SYS_RESOURCE: use --clients {needed} or more",
        per_client + RESERVED_FDS
    )]
    Sharded {
        /// TCP flows asked for.
        tcp: u64,
        /// UDP flows asked for.
        udp: u64,
        /// Client processes asked for.
        clients: u64,
        /// Flows of the largest share.
        per_client: u64,
        /// The hard limit.
        hard: u64,
        /// The fewest client processes whose shares fit.
        needed: u64,
    },
    /// getrlimit/setrlimit failed.
    #[error("failed to read or raise RLIMIT_NOFILE: {0}")]
    Sys(nix::Error),
}

/// Flows in the largest of `clients` even shares (the first shares take the remainders).
pub fn largest_share(tcp: u64, udp: u64, clients: u64) -> u64 {
    let n = clients.max(1);
    tcp.div_ceil(n) + udp.div_ceil(n)
}

/// Checks, before anything starts, that each of `clients` client processes can hold its share
/// under `hard` open files (every child inherits this process's hard limit), and that the
/// ephemeral ports, which all processes share, fit the totals.
pub fn check_shards(tcp: u64, udp: u64, clients: u64) -> Result<(), LimitError> {
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(LimitError::Sys)?;
    check_shards_under(tcp, udp, clients, hard)?;
    ensure_ports(tcp, udp)
}

/// [`check_shards`] against a given hard limit.
pub fn check_shards_under(tcp: u64, udp: u64, clients: u64, hard: u64) -> Result<(), LimitError> {
    let fits = |n: u64| largest_share(tcp, udp, n) + RESERVED_FDS <= hard;
    if fits(clients) {
        return Ok(());
    }
    let most = tcp.max(udp).max(1);
    let needed = (clients.max(1)..=most).find(|&n| fits(n)).unwrap_or(most);
    Err(LimitError::Sharded {
        tcp,
        udp,
        clients,
        per_client: largest_share(tcp, udp, clients),
        hard,
        needed,
    })
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

/// Raises the soft open-file limit to the hard one (a server cannot know how many clients will
/// come); returns (soft, hard) after the attempt.
pub fn raise_nofile_to_hard() -> Result<(u64, u64), LimitError> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(LimitError::Sys)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).map_err(LimitError::Sys)?;
    }
    Ok((hard, hard))
}

/// The kernel's cap on a listen backlog (net.core.somaxconn), when readable.
pub fn somaxconn() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The number of ephemeral ports (net.ipv4.ip_local_port_range), when readable.
pub fn ephemeral_ports() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = s.split_whitespace().map(|f| f.parse::<u64>());
    match (it.next(), it.next()) {
        (Some(Ok(lo)), Some(Ok(hi))) if hi >= lo => Some(hi - lo + 1),
        _ => None,
    }
}

/// Refuses, by name, more flows of one protocol than there are ephemeral ports: each flow
/// binds its own local port, and the kernel would fail the excess with EADDRNOTAVAIL.
pub fn ensure_ports(tcp: u64, udp: u64) -> Result<(), LimitError> {
    let Some(available) = ephemeral_ports() else {
        return Ok(());
    };
    for (proto, needed) in [("tcp", tcp), ("udp", udp)] {
        if needed > available {
            return Err(LimitError::Ports {
                proto,
                needed,
                available,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_requests_name_the_limit() {
        let e = ensure_fds(u64::MAX / 2).unwrap_err();
        assert!(e.to_string().contains("RLIMIT_NOFILE"));
        assert!(ensure_fds(10).unwrap() >= 10 + RESERVED_FDS);
        let p = ensure_ports(u64::MAX, 0).unwrap_err().to_string();
        assert!(p.contains("ip_local_port_range"), "{p}");
        assert!(ensure_ports(1, 1).is_ok());
    }

    #[test]
    fn sharded_requests_are_checked_per_process_and_name_the_clients_needed() {
        // The machine's case: 18k+18k under a hard limit of 20,000.
        let e = check_shards_under(18_000, 18_000, 1, 20_000).unwrap_err();
        let m = e.to_string();
        assert!(m.contains("36000 flows in one process"), "{m}");
        assert!(m.contains("use --clients 2 or more"), "{m}");
        assert!(check_shards_under(18_000, 18_000, 2, 20_000).is_ok());
        // Uneven splits put the remainder in the first shares.
        assert_eq!(largest_share(30, 30, 4), 16);
        let e = check_shards_under(30_000, 30_000, 2, 20_000).unwrap_err();
        assert!(e.to_string().contains("use --clients 4 or more"), "{e}");
    }
}
