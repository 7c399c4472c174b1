//! Thresholds relative to a baseline run (issue 15): `METRIC <= baseline [+ MARGIN]` and
//! `no-regression`. METRIC is a [`Metric`] name; the margin is a share of the baseline's median
//! (`+ 10%`) or an amount in the metric's own unit (`+ 200ms` for times, `+ 2` for counts), so a
//! margin in the wrong unit is a named error, not a silent conversion.
//!
//! Unlike the other thresholds these are **arm-level**: one check per arm, the new arm's median
//! against the baseline arm's median plus the margin (see `verdict::baseline`).

use std::fmt;

use super::{Op, Scope, ThresholdError, fmt_duration, parse_duration_ms};
use crate::stats::metric::{Metric, Unit};

/// How far above the baseline's median the new median may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Margin {
    /// `baseline`: no worse than the baseline's median.
    None,
    /// `baseline + P%`: tenths of a percent of the baseline's median.
    PerMille(u32),
    /// `baseline + 200ms`: milliseconds (time metrics only).
    Ms(u64),
    /// `baseline + 2`: flows, requests, dials or connections (count metrics only).
    Count(u32),
}

impl Margin {
    /// The bound for a baseline median `base`: `base` plus the margin.
    pub fn bound(self, base: f64) -> f64 {
        match self {
            Self::None => base,
            Self::PerMille(t) => base + base * f64::from(t) / 1000.0,
            // Bounded by parse_duration_ms to one day, so exact in f64.
            Self::Ms(ms) => base + ms as f64,
            Self::Count(n) => base + f64::from(n),
        }
    }
}

/// The word a baseline threshold's right side starts with.
pub const BASELINE: &str = "baseline";

/// The predicate: no metric of the arm regressed, as `drainwatch compare` decides it.
pub const NO_REGRESSION: &str = "no-regression";

/// Parses `METRIC (<=) baseline [+ MARGIN]`, given the left side's scope and measure and the
/// right side after the operator (which starts with [`BASELINE`]).
pub fn parse(
    scope: Scope,
    op: Op,
    measure: &str,
    rhs: &str,
) -> Result<super::Threshold, ThresholdError> {
    let metric = Metric::parse(measure).map_err(ThresholdError::UnknownMetric)?;
    if scope != Scope::All {
        return Err(ThresholdError::Misplaced(measure.to_string()));
    }
    if op == Op::AtLeast {
        return Err(ThresholdError::LowerBoundOnBaseline(metric.name()));
    }
    let rest = rhs.strip_prefix(BASELINE).unwrap_or(rhs).trim();
    let margin = if rest.is_empty() {
        Margin::None
    } else {
        let m = rest
            .strip_prefix('+')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .ok_or_else(|| ThresholdError::BadMargin(rest.to_string()))?;
        margin(metric, m)?
    };
    Ok(super::Threshold::Baseline { metric, margin })
}

fn margin(metric: Metric, m: &str) -> Result<Margin, ThresholdError> {
    let bad = || ThresholdError::BadMargin(m.to_string());
    let mismatch = || ThresholdError::MarginUnit {
        metric: metric.name(),
        margin: m.to_string(),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    // Nothing is nothing in any unit.
    let margin = if m.bytes().all(|b| b == b'0') {
        Margin::None
    } else if let Some(p) = m.strip_suffix('%') {
        let p = p.trim();
        let (int, frac) = p.split_once('.').unwrap_or((p, ""));
        if !digits(int) || !(frac.is_empty() || (frac.len() == 1 && digits(frac))) {
            return Err(bad());
        }
        let int: u32 = int.parse().map_err(|_| bad())?;
        let tenths = int
            .checked_mul(10)
            .and_then(|v| v.checked_add(frac.parse::<u32>().unwrap_or(0)))
            .ok_or_else(bad)?;
        Margin::PerMille(tenths)
    } else if m.ends_with(|c: char| c.is_ascii_alphabetic()) {
        let ms = parse_duration_ms(m).map_err(|_| bad())?;
        if metric.unit() != Unit::Milliseconds {
            return Err(mismatch());
        }
        Margin::Ms(ms)
    } else if digits(m) {
        if metric.unit() != Unit::Count {
            return Err(mismatch());
        }
        Margin::Count(m.parse().map_err(|_| bad())?)
    } else {
        return Err(bad());
    };
    // `+ 0`, `+ 0%` and `+ 0ms` mean `baseline`, and are spelt so.
    Ok(match margin {
        Margin::PerMille(0) | Margin::Ms(0) | Margin::Count(0) => Margin::None,
        m => m,
    })
}

/// What a margin of `metric` is written in, for the unit-mismatch message.
pub(super) fn margin_hint(metric: &str) -> &'static str {
    match Metric::parse(metric).map(Metric::unit) {
        Ok(Unit::Milliseconds) => {
            "it is a time, so the margin is a duration (baseline + 200ms) or a percentage (baseline + 10%)"
        }
        _ => {
            "it is a count, so the margin is a number (baseline + 2) or a percentage (baseline + 10%)"
        }
    }
}

impl fmt::Display for Margin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::None => Ok(()),
            Self::PerMille(t) if t % 10 == 0 => write!(f, " + {}%", t / 10),
            Self::PerMille(t) => write!(f, " + {}.{}%", t / 10, t % 10),
            Self::Ms(ms) => write!(f, " + {}", fmt_duration(*ms)),
            Self::Count(n) => write!(f, " + {n}"),
        }
    }
}

#[cfg(test)]
mod tests;
