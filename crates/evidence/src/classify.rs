//! The closed outcome enum, the mechanism beside it, and the rules that map one terminal
//! observation to both. Pure functions only; the flow state machine calls them.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How a flow ended, as a closed enum: there is no "other".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The server announced the close on the wire, then sent FIN.
    DrainedCleanClose,
    /// The flow ended without the server completing it.
    Severed,
    /// No bytes for the whole flow timeout, and no socket error.
    ReadTimeout,
    /// Still alive when the observation window closed.
    SurvivedObservationWindow,
    /// No usable observation exists.
    NotMeasured,
}

impl Outcome {
    /// Every outcome, in the order reports render them.
    pub const ALL: [Outcome; 5] = [
        Self::DrainedCleanClose,
        Self::Severed,
        Self::ReadTimeout,
        Self::SurvivedObservationWindow,
        Self::NotMeasured,
    ];

    /// The name written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DrainedCleanClose => "drained-clean-close",
            Self::Severed => "severed",
            Self::ReadTimeout => "read-timeout",
            Self::SurvivedObservationWindow => "survived-observation-window",
            Self::NotMeasured => "not-measured",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the wire showed at the end, so nobody has to parse detail strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    /// `bye` then FIN.
    FinAfterAnnouncement,
    /// FIN with no `bye` before it.
    FinUnannounced,
    /// Connection reset.
    Rst,
    /// Write to a closed connection.
    Epipe,
    /// ICMP unreachable (port, host or network), seen as a socket error.
    IcmpUnreachable,
    /// Too many unanswered UDP datagrams.
    UdpSilence,
    /// Replies came from a different probe instance.
    Rehomed,
    /// Silent for the whole flow timeout.
    ReadTimeout,
    /// Closed by drainwatch at the end of the window.
    ObservationEnd,
    /// No terminal observation, or an error with no known mechanism.
    None,
}

impl Mechanism {
    /// The name written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FinAfterAnnouncement => "fin-after-announcement",
            Self::FinUnannounced => "fin-unannounced",
            Self::Rst => "rst",
            Self::Epipe => "epipe",
            Self::IcmpUnreachable => "icmp-unreachable",
            Self::UdpSilence => "udp-silence",
            Self::Rehomed => "rehomed",
            Self::ReadTimeout => "read-timeout",
            Self::ObservationEnd => "observation-end",
            Self::None => "none",
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The socket operation that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    /// A read or receive.
    Read,
    /// A write or send.
    Write,
}

/// Classifies a socket error by operation and symbolic errno, with the Go tool's detail strings.
pub fn socket_error(op: Op, errno: Option<&str>, fallback: Option<&str>) -> (Mechanism, String) {
    let other = |prefix: &str| {
        let what = fallback.or(errno).unwrap_or("unknown error");
        format!("{prefix}: {what}")
    };
    match (op, errno) {
        (Op::Read, Some("ECONNRESET")) => (Mechanism::Rst, "econnreset".into()),
        (Op::Read, Some("ECONNREFUSED")) => (
            Mechanism::IcmpUnreachable,
            "econnrefused (icmp port unreachable)".into(),
        ),
        (Op::Read, Some("ENETUNREACH")) => (Mechanism::IcmpUnreachable, "enetunreach".into()),
        (Op::Read, Some("EHOSTUNREACH")) => (Mechanism::IcmpUnreachable, "ehostunreach".into()),
        (Op::Read, Some("EOF_UDP")) => (Mechanism::None, "unexpected eof on udp socket".into()),
        (Op::Read, _) => (Mechanism::None, other("read error")),
        (Op::Write, Some("EPIPE")) => (Mechanism::Epipe, "epipe".into()),
        (Op::Write, Some("ECONNRESET")) => (Mechanism::Rst, "econnreset on write".into()),
        (Op::Write, Some("ECONNREFUSED")) => (
            Mechanism::IcmpUnreachable,
            "econnrefused on write (icmp port unreachable)".into(),
        ),
        (Op::Write, Some("ENETUNREACH")) => {
            (Mechanism::IcmpUnreachable, "enetunreach on write".into())
        }
        (Op::Write, Some("EHOSTUNREACH")) => {
            (Mechanism::IcmpUnreachable, "ehostunreach on write".into())
        }
        (Op::Write, Some("ETIMEDOUT")) => (Mechanism::None, "write deadline exceeded".into()),
        (Op::Write, _) => (Mechanism::None, other("write error")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_mapping_matches_the_go_details() {
        assert_eq!(
            socket_error(Op::Read, Some("ECONNRESET"), None),
            (Mechanism::Rst, "econnreset".to_string())
        );
        assert_eq!(
            socket_error(Op::Read, Some("ECONNREFUSED"), None).0,
            Mechanism::IcmpUnreachable
        );
        assert_eq!(
            socket_error(Op::Write, Some("EPIPE"), None),
            (Mechanism::Epipe, "epipe".to_string())
        );
        assert_eq!(
            socket_error(Op::Read, Some("EIO"), Some("Input/output error")).1,
            "read error: Input/output error"
        );
        assert_eq!(
            socket_error(Op::Write, None, None).1,
            "write error: unknown error"
        );
    }

    #[test]
    fn names_are_kebab_case_and_stable() {
        let names: Vec<_> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
        assert_eq!(
            names,
            [
                "drained-clean-close",
                "severed",
                "read-timeout",
                "survived-observation-window",
                "not-measured"
            ]
        );
        assert_eq!(
            serde_json::to_string(&Mechanism::FinAfterAnnouncement).unwrap(),
            "\"fin-after-announcement\""
        );
    }
}
