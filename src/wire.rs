//! The wire protocol, byte-compatible with the Go drainwatch v0.1, as pure encode/decode.
//!
//! ASCII lines ending in `\n`. Client → probe: `ping <seq>`. Probe → client on TCP:
//! `hb <seq> <unixnano> <instance>` every heartbeat interval (500 ms unless the probe is told
//! otherwise) and `bye <seq> <reason>` once before a
//! graceful close. On UDP: `ack <echo> <instance>`, where `<echo>` is everything after `ping `.
//!
//! Clock extension (opt-in, never sent by the Go client): a UDP `ping <seq> t` is answered by
//! our probe with `ack <seq> t <instance> <unixnano>`; a Go probe answers `ack <seq> t
//! <instance>`, which still parses.

/// The probe's heartbeat period unless its configuration says otherwise: the Go probe's, fixed
/// there. drainwatch's own runs set it to the trial's ping interval (`PROBE_HEARTBEAT_MS`).
pub const HEARTBEAT_INTERVAL_MS: u64 = 500;

/// Marker that asks for the probe's clock in the ack.
pub const CLOCK_MARKER: &str = "t";

/// A line from the probe, as the client reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeLine<'a> {
    /// `hb <seq> <unixnano> <instance>`.
    Heartbeat {
        /// Per-connection sequence number.
        seq: u64,
        /// The probe's wall clock in Unix ns, when it parses.
        unix_ns: Option<i64>,
        /// Instance name.
        instance: &'a str,
    },
    /// `bye <seq> <reason>`.
    Bye {
        /// The next heartbeat sequence number.
        seq: Option<u64>,
        /// Why: `drain-deadline` in practice.
        reason: &'a str,
    },
    /// `ack <seq> [t] <instance> [<unixnano>]`.
    Ack {
        /// Echoed sequence number.
        seq: Option<u64>,
        /// Instance name.
        instance: &'a str,
        /// The probe's wall clock, with the clock extension.
        unix_ns: Option<i64>,
    },
    /// An empty line (ignored).
    Empty,
    /// Anything else: kept for the record, never a panic.
    Unrecognised(&'a str),
}

/// Parses one line without its newline.
pub fn parse_probe_line(line: &str) -> ProbeLine<'_> {
    let line = line.trim_end_matches(['\r', '\n']);
    if line.trim().is_empty() {
        return ProbeLine::Empty;
    }
    let mut it = line.split(' ');
    let verb = it.next().unwrap_or("");
    let fields: Vec<&str> = it.filter(|f| !f.is_empty()).collect();
    match (verb, fields.as_slice()) {
        ("hb", [seq, ns, instance, ..]) => match seq.parse() {
            Ok(seq) => ProbeLine::Heartbeat {
                seq,
                unix_ns: ns.parse().ok(),
                instance,
            },
            Err(_) => ProbeLine::Unrecognised(line),
        },
        ("bye", [seq, reason, ..]) => ProbeLine::Bye {
            seq: seq.parse().ok(),
            reason,
        },
        ("bye", [seq]) => ProbeLine::Bye {
            seq: seq.parse().ok(),
            reason: "",
        },
        ("ack", [seq, m, instance, ns]) if *m == CLOCK_MARKER => ProbeLine::Ack {
            seq: seq.parse().ok(),
            instance,
            unix_ns: ns.parse().ok(),
        },
        ("ack", [seq, m, instance]) if *m == CLOCK_MARKER => ProbeLine::Ack {
            seq: seq.parse().ok(),
            instance,
            unix_ns: None,
        },
        ("ack", [seq, instance]) => ProbeLine::Ack {
            seq: seq.parse().ok(),
            instance,
            unix_ns: None,
        },
        _ => ProbeLine::Unrecognised(line),
    }
}

/// `ping <seq>\n`, with the clock marker when asked.
pub fn ping(seq: u64, clock: bool) -> String {
    if clock {
        format!("ping {seq} {CLOCK_MARKER}\n")
    } else {
        format!("ping {seq}\n")
    }
}

/// `hb <seq> <unixnano> <instance>\n`.
pub fn heartbeat(seq: u64, unix_ns: i64, instance: &str) -> String {
    format!("hb {seq} {unix_ns} {instance}\n")
}

/// `hb <seq> <unixnano> <instance> <scheduled_mono_ns>\n`: the benchmark's opt-in form. Parsers
/// that read four fields (ours, the Go client's) ignore the fifth.
pub fn heartbeat_scheduled(seq: u64, unix_ns: i64, instance: &str, sched_mono_ns: i64) -> String {
    format!("hb {seq} {unix_ns} {instance} {sched_mono_ns}\n")
}

/// The fifth field of a benchmark heartbeat line, when present.
pub fn heartbeat_scheduled_field(line: &str) -> Option<i64> {
    let line = line.trim_end_matches(['\r', '\n']);
    let mut it = line.split(' ');
    (it.next() == Some("hb")).then_some(())?;
    it.nth(3)?.parse().ok()
}

/// `bye <seq> <reason>\n`.
pub fn bye(seq: u64, reason: &str) -> String {
    format!("bye {seq} {reason}\n")
}

/// The probe's answer to a UDP datagram, or `None` if it is not a ping.
///
/// The echo is textual, as the Go probe does; the clock extension appends the wall clock.
pub fn ack(datagram: &[u8], instance: &str, unix_ns: i64) -> Option<String> {
    let text = std::str::from_utf8(datagram).ok()?;
    let text = text.trim_end_matches(['\r', '\n']);
    let echo = text.strip_prefix("ping ")?;
    let wants_clock = echo.split(' ').nth(1) == Some(CLOCK_MARKER);
    Some(if wants_clock {
        format!("ack {echo} {instance} {unix_ns}\n")
    } else {
        format!("ack {echo} {instance}\n")
    })
}

/// Shortens an unrecognised line for the record: the first 64 characters.
pub fn excerpt(line: &str) -> String {
    let cut: String = line.chars().take(64).collect();
    if cut.len() < line.len() {
        format!("unrecognised protocol line: {cut}...")
    } else {
        format!("unrecognised protocol line: {cut}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn go_lines_from_the_recorded_transcripts() {
        assert_eq!(
            parse_probe_line("hb 0 1796052172999640367 probe-drain"),
            ProbeLine::Heartbeat {
                seq: 0,
                unix_ns: Some(1796052172999640367),
                instance: "probe-drain"
            }
        );
        assert_eq!(
            parse_probe_line("bye 10 drain-deadline\n"),
            ProbeLine::Bye {
                seq: Some(10),
                reason: "drain-deadline"
            }
        );
        assert_eq!(
            parse_probe_line("ack 56 probe-exit-now"),
            ProbeLine::Ack {
                seq: Some(56),
                instance: "probe-exit-now",
                unix_ns: None
            }
        );
        assert_eq!(parse_probe_line(""), ProbeLine::Empty);
        assert_eq!(parse_probe_line("hello"), ProbeLine::Unrecognised("hello"));
        assert_eq!(
            parse_probe_line("hb x 1 p"),
            ProbeLine::Unrecognised("hb x 1 p")
        );
    }

    #[test]
    fn encoders_match_the_go_bytes() {
        assert_eq!(ping(5, false), "ping 5\n");
        assert_eq!(heartbeat(0, 17, "p"), "hb 0 17 p\n");
        assert_eq!(bye(10, "drain-deadline"), "bye 10 drain-deadline\n");
        assert_eq!(ack(b"ping 5", "p", 9).as_deref(), Some("ack 5 p\n"));
        assert_eq!(ack(b"pong 5", "p", 9), None);
    }

    #[test]
    fn benchmark_heartbeat_still_parses_as_a_heartbeat() {
        let l = heartbeat_scheduled(3, 17, "p", 99);
        assert_eq!(l, "hb 3 17 p 99\n");
        assert_eq!(
            parse_probe_line(&l),
            ProbeLine::Heartbeat {
                seq: 3,
                unix_ns: Some(17),
                instance: "p"
            }
        );
        assert_eq!(heartbeat_scheduled_field(&l), Some(99));
        assert_eq!(heartbeat_scheduled_field(&heartbeat(3, 17, "p")), None);
    }

    #[test]
    fn clock_extension_round_trip() {
        let a = ack(ping(7, true).as_bytes(), "p", 123).unwrap();
        assert_eq!(a, "ack 7 t p 123\n");
        assert_eq!(
            parse_probe_line(&a),
            ProbeLine::Ack {
                seq: Some(7),
                instance: "p",
                unix_ns: Some(123)
            }
        );
        // A Go probe echoes the marker without a clock.
        assert_eq!(
            parse_probe_line("ack 7 t p"),
            ProbeLine::Ack {
                seq: Some(7),
                instance: "p",
                unix_ns: None
            }
        );
    }

    proptest! {
        #[test]
        fn garbage_never_panics(s in ".*", b in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = parse_probe_line(&s);
            let _ = ack(&b, "p", 0);
            let _ = excerpt(&s);
        }
    }
}
