//! Ordering rules of the merged timeline, and wall-clock parsing.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::report::TimelineEntry;

/// Sorts by (t_ms, source, event), stably, as the Go tool did: ties keep arrival order and go
/// client < k8s < orchestrator < probe.
pub fn sort(entries: &mut [TimelineEntry]) {
    entries.sort_by(|a, b| {
        (a.t_ms, a.source, a.event.as_str()).cmp(&(b.t_ms, b.source, b.event.as_str()))
    });
}

/// Unix nanoseconds of an RFC 3339 timestamp; `None` when it does not parse.
pub fn parse_wall_ns(s: &str) -> Option<i64> {
    let t = OffsetDateTime::parse(s, &Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos()).ok()
}

/// RFC 3339 with nanoseconds in UTC, as Go's RFC3339Nano writes it (trailing zeros trimmed).
pub fn format_wall_ns(unix_ns: i64) -> String {
    let secs = unix_ns.div_euclid(1_000_000_000);
    let nanos = unix_ns.rem_euclid(1_000_000_000);
    let Ok(t) = OffsetDateTime::from_unix_timestamp(secs) else {
        return String::from("invalid-time");
    };
    let base = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    if nanos == 0 {
        format!("{base}Z")
    } else {
        let frac = format!("{nanos:09}");
        format!("{base}.{}Z", frac.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_round_trip() {
        let s = "2026-11-30T15:22:58.480349996Z";
        let ns = parse_wall_ns(s).unwrap();
        assert_eq!(format_wall_ns(ns), s);
        assert_eq!(format_wall_ns(0), "1970-01-01T00:00:00Z");
        assert_eq!(parse_wall_ns("yesterday"), None);
        assert_eq!(
            format_wall_ns(parse_wall_ns("2026-11-30T15:51:20.9Z").unwrap()),
            "2026-11-30T15:51:20.9Z"
        );
    }
}
