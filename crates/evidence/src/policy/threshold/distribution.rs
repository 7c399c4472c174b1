//! Distribution thresholds: `pNN METRIC <= VALUE`, a bound on the nearest-rank NNth percentile
//! of one named metric ([`Metric`]) over an arm's trials. One check across the arm, not one per
//! trial; the verdict computes it (`verdict::distribution`).
//!
//! Parsed here, beside the other sentences, so that a distribution threshold is one more
//! [`super::Threshold`] of the arm's list: it keeps its place in file order, its canonical
//! spelling is its JUnit name, and duplicates are refused alike.

use std::fmt;

use super::{ThresholdError, fmt_duration, parse_duration_ms};
use crate::stats::metric::{Metric, Unit};

/// `pNN METRIC <= VALUE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Distribution {
    /// NN, 1..=100 (p100 is the largest value).
    pub percentile: u8,
    /// The metric, read from each trial's report with [`Metric::of`].
    pub metric: Metric,
    /// The upper bound, in the metric's unit: milliseconds or a count.
    pub max: u64,
}

/// Parses `s` (already trimmed and lower-cased) when it starts with `p` and a digit; `Ok(None)`
/// when it is not a distribution sentence at all.
pub(super) fn parse(s: &str) -> Result<Option<Distribution>, ThresholdError> {
    let Some(rest) = s.strip_prefix('p') else {
        return Ok(None);
    };
    if !rest.starts_with(|c: char| c.is_ascii_digit()) {
        return Ok(None);
    }
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let percentile = digits
        .parse::<u8>()
        .ok()
        .filter(|p| (1..=100).contains(p))
        .ok_or_else(|| ThresholdError::BadPercentile(format!("p{digits}")))?;
    let rest = rest[digits.len()..].trim_start();
    let (at, tok, le) = [("<=", true), ("≤", true), (">=", false), ("≥", false)]
        .into_iter()
        .filter_map(|(tok, le)| rest.find(tok).map(|i| (i, tok, le)))
        .min_by_key(|(i, _, _)| *i)
        .ok_or(ThresholdError::Shape)?;
    let name = rest[..at].trim();
    if name.is_empty() {
        return Err(ThresholdError::Shape);
    }
    let metric = Metric::parse(name).map_err(ThresholdError::UnknownMetric)?;
    if !le {
        return Err(ThresholdError::LowerBoundOnDistribution(metric.name()));
    }
    let value = rest[at + tok.len()..].trim();
    let max = match metric.unit() {
        Unit::Milliseconds => {
            if value.bytes().all(|b| b.is_ascii_digit()) && !value.is_empty() {
                return Err(ThresholdError::UnitMismatch {
                    metric: metric.name(),
                    value: value.to_string(),
                    expected: "a duration (500ms, 10s, 1.5m)",
                });
            }
            parse_duration_ms(value)?
        }
        Unit::Count => {
            if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                let expected = "a count (0, 2, 10)";
                return Err(
                    if value.ends_with(|c: char| c.is_ascii_alphabetic()) || value.ends_with('%') {
                        ThresholdError::UnitMismatch {
                            metric: metric.name(),
                            value: value.to_string(),
                            expected,
                        }
                    } else {
                        ThresholdError::BadAmount(value.to_string())
                    },
                );
            }
            value
                .parse()
                .map_err(|_| ThresholdError::BadAmount(value.to_string()))?
        }
    };
    Ok(Some(Distribution {
        percentile,
        metric,
        max,
    }))
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "p{} {} ≤ ", self.percentile, self.metric.name())?;
        match self.metric.unit() {
            Unit::Milliseconds => f.write_str(&fmt_duration(self.max)),
            Unit::Count => write!(f, "{}", self.max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Threshold, parse as parse_threshold};
    use super::*;

    fn d(s: &str) -> Distribution {
        match parse_threshold(s).unwrap() {
            Threshold::Distribution(d) => d,
            other => panic!("{s:?} parsed as {other:?}"),
        }
    }

    #[test]
    fn the_issue_examples_parse_and_print_canonically() {
        assert_eq!(
            d("p50 sigterm-to-last-flow-end <= 26s"),
            Distribution {
                percentile: 50,
                metric: Metric::SigtermToLastFlowEndMs,
                max: 26_000
            }
        );
        assert_eq!(d("P90 failed-requests<=2").max, 2);
        for s in [
            "p50 sigterm-to-last-flow-end ≤ 26s",
            "p90 failed-requests ≤ 2",
            "p100 longest-failure-window ≤ 1500ms",
            "p1 tcp-severed ≤ 0",
        ] {
            assert_eq!(parse_threshold(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn refusals_are_named() {
        let e = |s: &str| parse_threshold(s).unwrap_err();
        assert_eq!(
            e("p0 failed-requests <= 1"),
            ThresholdError::BadPercentile("p0".into())
        );
        assert_eq!(
            e("p101 failed-requests <= 1"),
            ThresholdError::BadPercentile("p101".into())
        );
        let unknown = e("p50 failed-request <= 1");
        assert_eq!(
            unknown,
            ThresholdError::UnknownMetric(crate::stats::metric::UnknownMetric(
                "failed-request".into()
            ))
        );
        assert!(
            unknown.to_string().contains("sigterm-to-last-flow-end"),
            "the known metrics are listed: {unknown}"
        );
        assert!(matches!(
            e("p50 sigterm-to-last-flow-end <= 26"),
            ThresholdError::UnitMismatch { .. }
        ));
        assert!(matches!(
            e("p50 failed-requests <= 2s"),
            ThresholdError::UnitMismatch { .. }
        ));
        assert_eq!(
            e("p50 failed-requests >= 2"),
            ThresholdError::LowerBoundOnDistribution("failed-requests")
        );
        assert_eq!(
            e("p50 failed-requests <= 1.5"),
            ThresholdError::BadAmount("1.5".into())
        );
        assert_eq!(e("p50 failed-requests"), ThresholdError::Shape);
    }
}
