//! One reading of a duration for every flag and every threshold: a decimal number and a unit
//! (`ms`, `s`, `m`, `h`), exact in whole milliseconds, from 0 to one day. Read with integer
//! arithmetic, so `1.5s` is 1,500 ms on every machine and `99999999999999999999s` is a clear
//! error, never a float overflow or a panic.

/// The longest duration any flag or threshold takes: one day, in ms.
pub const MAX_MS: u64 = 86_400_000;

/// Digits read before the number is refused as too long (one day is 8 digits in ms).
const MAX_DIGITS: usize = 12;

/// A duration's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds.
    Millis,
    /// Seconds.
    Seconds,
    /// Minutes.
    Minutes,
    /// Hours.
    Hours,
}

impl Unit {
    fn of(s: &str) -> Option<Self> {
        match s {
            "ms" => Some(Self::Millis),
            "s" => Some(Self::Seconds),
            "m" => Some(Self::Minutes),
            "h" => Some(Self::Hours),
            _ => None,
        }
    }

    fn ms(self) -> u128 {
        match self {
            Self::Millis => 1,
            Self::Seconds => 1_000,
            Self::Minutes => 60_000,
            Self::Hours => 3_600_000,
        }
    }
}

/// Why a duration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// No number, or not a plain decimal number (a sign, an exponent, two points).
    #[error(
        "{0:?} is not a duration: a non-negative decimal number and a unit (examples: 500ms, 10s, 1.5s, 2m)"
    )]
    NotANumber(String),
    /// A unit other than ms, s, m, h.
    #[error("{0:?}: unknown unit (use ms, s, m or h)")]
    UnknownUnit(String),
    /// No unit where one is required (thresholds).
    #[error("{0:?} has no unit (use ms, s, m or h)")]
    NoUnit(String),
    /// Not a whole number of milliseconds.
    #[error("{0:?} is not a whole number of milliseconds")]
    NotWholeMillis(String),
    /// Longer than [`MAX_MS`].
    #[error("{0:?} is longer than the longest duration taken, 24h")]
    TooLong(String),
}

/// Reads `s` as whole milliseconds. A number without a unit is read in `bare` when given (a
/// flag's seconds), else refused (a threshold names its unit).
pub fn parse_ms(s: &str, bare: Option<Unit>) -> Result<u64, DurationError> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let num = num.trim();
    if num.is_empty() {
        return Err(DurationError::NotANumber(s.to_string()));
    }
    let unit = if unit.is_empty() {
        bare.ok_or_else(|| DurationError::NoUnit(s.to_string()))?
    } else {
        Unit::of(unit).ok_or_else(|| DurationError::UnknownUnit(s.to_string()))?
    };
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && frac.is_empty()) || !digits(whole) || !digits(frac) {
        return Err(DurationError::NotANumber(s.to_string()));
    }
    let whole = whole.trim_start_matches('0');
    let frac = frac.trim_end_matches('0');
    if whole.len() > MAX_DIGITS {
        return Err(DurationError::TooLong(s.to_string()));
    }
    if frac.len() > MAX_DIGITS {
        return Err(DurationError::NotWholeMillis(s.to_string()));
    }
    let read = |d: &str| d.parse::<u128>().unwrap_or(0);
    let scale = 10u128.pow(u32::try_from(frac.len()).unwrap_or(0));
    // value = (whole + frac / scale) × unit, exact in integers.
    let numerator = (read(whole) * scale + read(frac)) * unit.ms();
    if numerator % scale != 0 {
        return Err(DurationError::NotWholeMillis(s.to_string()));
    }
    let ms = numerator / scale;
    if ms > u128::from(MAX_MS) {
        return Err(DurationError::TooLong(s.to_string()));
    }
    u64::try_from(ms).map_err(|_| DurationError::TooLong(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn decimal_numbers_and_units_read_exactly() {
        let secs = Some(Unit::Seconds);
        assert_eq!(parse_ms("500ms", None), Ok(500));
        assert_eq!(parse_ms("1.5s", None), Ok(1_500));
        assert_eq!(parse_ms("0.001s", None), Ok(1));
        assert_eq!(parse_ms("2m", None), Ok(120_000));
        assert_eq!(parse_ms("2h", None), Ok(7_200_000));
        assert_eq!(parse_ms(" 3 ", secs), Ok(3_000));
        assert_eq!(parse_ms("24h", None), Ok(MAX_MS));
        assert_eq!(parse_ms(".5s", None), Ok(500));
        assert_eq!(parse_ms("007s", None), Ok(7_000));
    }

    #[test]
    fn what_is_not_a_bounded_whole_duration_is_refused_by_name() {
        let secs = Some(Unit::Seconds);
        for (s, want) in [
            (
                "99999999999999999999s",
                DurationError::TooLong("99999999999999999999s".into()),
            ),
            ("86400001ms", DurationError::TooLong("86400001ms".into())),
            ("25h", DurationError::TooLong("25h".into())),
            ("0.5ms", DurationError::NotWholeMillis("0.5ms".into())),
            ("-1s", DurationError::NotANumber("-1s".into())),
            ("1e3s", DurationError::UnknownUnit("1e3s".into())),
            ("1.2.3s", DurationError::NotANumber("1.2.3s".into())),
            ("s", DurationError::NotANumber("s".into())),
            ("5d", DurationError::UnknownUnit("5d".into())),
            ("soon", DurationError::NotANumber("soon".into())),
            ("NaNs", DurationError::NotANumber("NaNs".into())),
        ] {
            assert_eq!(parse_ms(s, secs), Err(want), "{s}");
        }
        assert_eq!(
            parse_ms("10", None),
            Err(DurationError::NoUnit("10".into()))
        );
        let e = parse_ms("99999999999999999999s", secs)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("longer than the longest duration taken, 24h"),
            "{e}"
        );
    }

    proptest! {
        #[test]
        fn any_input_reads_or_is_refused_without_panicking(s in ".{0,40}") {
            let _ = parse_ms(&s, Some(Unit::Seconds));
        }

        #[test]
        fn whole_milliseconds_round_trip(ms in 0u64..=MAX_MS) {
            prop_assert_eq!(parse_ms(&format!("{ms}ms"), None), Ok(ms));
            let s = format!("{}.{:03}s", ms / 1000, ms % 1000);
            prop_assert_eq!(parse_ms(&s, None), Ok(ms));
        }
    }
}
