//! The probe's configuration, read from its environment (the pod spec sets it).
//!
//! Any invalid value is fatal and names the variable, so a typo in a manifest fails the pod at
//! start instead of measuring the wrong behaviour.

use std::time::Duration;

use crate::evidence::plan::DrainBehavior;
use crate::wire;

/// Environment variable names, declared once.
pub mod vars {
    /// drain | exit-now | ignore.
    pub const DRAIN_BEHAVIOR: &str = "DRAIN_BEHAVIOR";
    /// Seconds the drain keeps established flows before announcing and closing them.
    pub const DRAIN_MAX_SECONDS: &str = "DRAIN_MAX_SECONDS";
    /// Whether exit-now closes TCP flows with SO_LINGER 0 (a deterministic RST).
    pub const EXIT_NOW_FORCE_RST: &str = "EXIT_NOW_FORCE_RST";
    /// TCP heartbeat port.
    pub const PROBE_TCP_PORT: &str = "PROBE_TCP_PORT";
    /// UDP ack port.
    pub const PROBE_UDP_PORT: &str = "PROBE_UDP_PORT";
    /// HTTP readiness port.
    pub const PROBE_READY_PORT: &str = "PROBE_READY_PORT";
    /// Instance name; the hostname when unset.
    pub const POD_NAME: &str = "POD_NAME";
    /// Number of UDP sockets sharing the port (SO_REUSEPORT); default: CPUs.
    pub const PROBE_UDP_SOCKETS: &str = "PROBE_UDP_SOCKETS";
    /// Whether every heartbeat is logged (the Go probe always did; off by default for scale).
    pub const PROBE_LOG_HEARTBEATS: &str = "PROBE_LOG_HEARTBEATS";
    /// Benchmark instrumentation (off by default; changes the heartbeat bytes when on).
    pub const PROBE_BENCH: &str = "PROBE_BENCH";
    /// TCP flow connections held at once (default: what the open-file limit allows).
    pub const PROBE_MAX_CONNECTIONS: &str = "PROBE_MAX_CONNECTIONS";
    /// Milliseconds between heartbeats on every TCP connection (default 500, the Go probe's).
    pub const PROBE_HEARTBEAT_MS: &str = "PROBE_HEARTBEAT_MS";
}

/// A refused probe environment.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// The variable's value is invalid.
    #[error("invalid {var}={value:?}: {why}")]
    Invalid {
        /// Variable name.
        var: &'static str,
        /// Its value.
        value: String,
        /// The invariant it broke.
        why: &'static str,
    },
    /// Neither POD_NAME nor a hostname is available.
    #[error("no instance name: POD_NAME is unset and the hostname is unavailable")]
    NoInstance,
}

/// The probe's validated configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeConfig {
    /// SIGTERM behaviour.
    pub behavior: DrainBehavior,
    /// Drain window.
    pub drain_max: Duration,
    /// Whether exit-now resets.
    pub force_rst: bool,
    /// TCP port.
    pub tcp_port: u16,
    /// UDP port.
    pub udp_port: u16,
    /// Readiness port.
    pub ready_port: u16,
    /// Instance name written in every reply.
    pub instance: String,
    /// UDP sockets on the port.
    pub udp_sockets: usize,
    /// Log every heartbeat.
    pub log_heartbeats: bool,
    /// Benchmark mode: heartbeats carry their scheduled CLOCK_MONOTONIC time as a fifth field
    /// and SIGUSR1 closes the oldest open connection.
    pub bench: bool,
    /// A cap on TCP flow connections below the one the open-file limit sets, when given.
    pub max_connections: Option<u64>,
    /// Time between heartbeats on each TCP connection.
    pub heartbeat: Duration,
}

/// Go's strconv.ParseBool, so manifests written for the Go probe keep working.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Reads `var` through `get`: `default` when unset, else `parse` of its value, refused with
/// `why` when that gives nothing.
fn read<T>(
    get: &impl Fn(&str) -> Option<String>,
    var: &'static str,
    default: T,
    parse: impl Fn(&str) -> Option<T>,
    why: &'static str,
) -> Result<T, ConfigError> {
    match get(var) {
        None => Ok(default),
        Some(v) => parse(&v).ok_or(ConfigError::Invalid { var, value: v, why }),
    }
}

impl ProbeConfig {
    /// Reads the configuration through `get` (the process environment in production, a map in
    /// tests) with `hostname` as the instance fallback.
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
        hostname: Option<String>,
        cpus: usize,
    ) -> Result<Self, ConfigError> {
        let behavior = read(
            &get,
            vars::DRAIN_BEHAVIOR,
            DrainBehavior::Drain,
            |v| v.parse().ok(),
            "expected drain, exit-now or ignore",
        )?;
        let drain_max = read(
            &get,
            vars::DRAIN_MAX_SECONDS,
            60,
            |v| v.parse::<u64>().ok().filter(|n| *n >= 1),
            "expected whole seconds >= 1",
        )?;
        let force_rst = read(
            &get,
            vars::EXIT_NOW_FORCE_RST,
            true,
            parse_bool,
            "expected a boolean (true/false/1/0)",
        )?;
        let port = |var: &'static str, default: u16| {
            read(
                &get,
                var,
                default,
                |v| v.parse::<u16>().ok().filter(|p| *p >= 1),
                "expected a port between 1 and 65535",
            )
        };
        let (tcp_port, udp_port, ready_port) = (
            port(vars::PROBE_TCP_PORT, 7001)?,
            port(vars::PROBE_UDP_PORT, 7002)?,
            port(vars::PROBE_READY_PORT, 7003)?,
        );
        let udp_sockets = read(
            &get,
            vars::PROBE_UDP_SOCKETS,
            cpus.clamp(1, 16),
            |v| v.parse::<usize>().ok().filter(|n| (1..=64).contains(n)),
            "expected 1 to 64",
        )?;
        let flag = |var: &'static str| read(&get, var, false, parse_bool, "expected a boolean");
        let (log_heartbeats, bench) = (flag(vars::PROBE_LOG_HEARTBEATS)?, flag(vars::PROBE_BENCH)?);
        let max_connections = read(
            &get,
            vars::PROBE_MAX_CONNECTIONS,
            None,
            |v| v.parse::<u64>().ok().filter(|n| *n >= 1).map(Some),
            "expected a whole number >= 1",
        )?;
        let heartbeat_ms = read(
            &get,
            vars::PROBE_HEARTBEAT_MS,
            wire::HEARTBEAT_INTERVAL_MS,
            |v| v.parse::<u64>().ok().filter(|n| (10..=60_000).contains(n)),
            "expected whole milliseconds from 10 to 60000",
        )?;
        Ok(Self {
            behavior,
            drain_max: Duration::from_secs(drain_max),
            force_rst,
            tcp_port,
            udp_port,
            ready_port,
            instance: instance(&get, hostname)?,
            udp_sockets,
            log_heartbeats,
            bench,
            max_connections,
            heartbeat: Duration::from_millis(heartbeat_ms),
        })
    }
}

/// The instance name: POD_NAME, else the hostname; it is a field on the wire, so no whitespace.
fn instance(
    get: &impl Fn(&str) -> Option<String>,
    hostname: Option<String>,
) -> Result<String, ConfigError> {
    let instance = get(vars::POD_NAME)
        .filter(|s| !s.is_empty())
        .or(hostname.filter(|s| !s.is_empty()))
        .ok_or(ConfigError::NoInstance)?;
    if instance.contains(char::is_whitespace) {
        return Err(ConfigError::Invalid {
            var: vars::POD_NAME,
            value: instance,
            why: "must not contain whitespace (it is a field on the wire)",
        });
    }
    Ok(instance)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)], host: Option<&str>) -> Result<ProbeConfig, ConfigError> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ProbeConfig::from_lookup(|k| m.get(k).cloned(), host.map(str::to_string), 2)
    }

    #[test]
    fn defaults_match_the_go_probe() {
        let c = cfg(&[], Some("h")).unwrap();
        assert_eq!(c.behavior, DrainBehavior::Drain);
        assert_eq!(c.drain_max, Duration::from_secs(60));
        assert!(c.force_rst);
        assert_eq!((c.tcp_port, c.udp_port, c.ready_port), (7001, 7002, 7003));
        assert_eq!(c.instance, "h");
        assert_eq!(c.heartbeat, Duration::from_millis(500));
        assert_eq!(cfg(&[("POD_NAME", "p")], Some("h")).unwrap().instance, "p");
        let slow = cfg(&[("PROBE_HEARTBEAT_MS", "2000")], Some("h")).unwrap();
        assert_eq!(slow.heartbeat, Duration::from_secs(2));
    }

    #[test]
    fn invalid_values_name_the_variable() {
        for (k, v) in [
            ("DRAIN_BEHAVIOR", "graceful"),
            ("DRAIN_MAX_SECONDS", "0"),
            ("EXIT_NOW_FORCE_RST", "yes"),
            ("PROBE_TCP_PORT", "0"),
            ("PROBE_UDP_PORT", "70000"),
            ("PROBE_READY_PORT", "x"),
            ("PROBE_MAX_CONNECTIONS", "0"),
            ("PROBE_HEARTBEAT_MS", "9"),
            ("PROBE_HEARTBEAT_MS", "60001"),
        ] {
            let e = cfg(&[(k, v)], Some("h")).unwrap_err().to_string();
            assert!(e.contains(k), "{e}");
        }
        assert_eq!(cfg(&[], None).unwrap_err(), ConfigError::NoInstance);
        assert!(cfg(&[("EXIT_NOW_FORCE_RST", "F")], Some("h")).is_ok());
    }
}
