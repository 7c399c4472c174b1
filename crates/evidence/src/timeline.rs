//! Ordering rules of the merged timeline, and wall-clock parsing.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::report::TimelineEntry;

/// Orders entries by their full-precision time on the orchestrator's timebase, then source
/// (client < k8s < orchestrator < probe), then arrival: unlike ordering by truncated
/// milliseconds and event name, this keeps `sigterm_received` above the steps it caused.
pub fn sorted(mut keyed: Vec<(i64, TimelineEntry)>) -> Vec<TimelineEntry> {
    keyed.sort_by_key(|(at, e)| (*at, e.source));
    keyed.into_iter().map(|(_, e)| e).collect()
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
