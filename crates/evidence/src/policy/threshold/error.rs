//! Why a threshold sentence does not parse: one variant per refusal, each naming what to write
//! instead. The lists of names come from the closed sets themselves, so they never lag behind.

use super::baseline;
use crate::classify::Outcome;
use crate::stats::metric::UnknownMetric;

use super::{Interval, predicate_names};

/// Why a threshold sentence does not parse; the sentence itself is added by the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThresholdError {
    /// Nothing was written.
    #[error("empty threshold")]
    Empty,
    /// No comparison, and not a known predicate.
    #[error(
        "expected \"[tcp|udp] OUTCOME >= N%\", \"INTERVAL <= 10s\", \"METRIC <= baseline [+ 10%|200ms|2]\", \"pNN METRIC <= VALUE\" or one of {predicates}",
        predicates = predicate_list()
    )]
    Shape,
    /// `>`, `<` or `=` instead of an inclusive bound.
    #[error("use >= or <= (bounds are inclusive); {0:?} is not supported")]
    StrictOp(String),
    /// The left side names nothing drainwatch measures.
    #[error("unknown measure {0:?}: expected an outcome ({outcomes}, rehomed) or an interval ({intervals})", outcomes = outcome_names(), intervals = interval_names())]
    UnknownMeasure(String),
    /// The number does not parse.
    #[error("{0:?} is not a flow count or a percentage (examples: 0, 3, 100%, 99.5%)")]
    BadAmount(String),
    /// More than 100 %.
    #[error("{0:?} is more than 100%")]
    PercentOver100(String),
    /// The duration does not parse.
    #[error("{0:?} is not a duration (examples: 500ms, 10s, 1.5m)")]
    BadDuration(String),
    /// `>=` on an interval.
    #[error("{0} is a time: only an upper bound (<=) is supported")]
    LowerBoundOnTime(&'static str),
    /// A predicate given a comparison, or a scope given to an interval.
    #[error("{0:?} takes no protocol and no comparison")]
    Misplaced(String),
    /// Holds whatever happens, so it gates nothing.
    #[error("always holds, so it gates nothing")]
    Vacuous,
    /// A baseline threshold on a name that is not a metric.
    #[error("{0}")]
    UnknownMetric(UnknownMetric),
    /// `>=` against a baseline.
    #[error("{0} is compared with the baseline as an upper bound only (higher is worse): use <=")]
    LowerBoundOnBaseline(&'static str),
    /// What follows `baseline` is not `+ MARGIN`.
    #[error(
        "{0:?} is not a margin over the baseline (examples: baseline, baseline + 10%, baseline + 200ms, baseline + 2)"
    )]
    BadMargin(String),
    /// A margin in another unit than the metric's.
    #[error("{metric} and the margin {margin:?} differ in unit: {hint}", hint = baseline::margin_hint(metric))]
    MarginUnit {
        /// The metric.
        metric: &'static str,
        /// The margin as written.
        margin: String,
    },
    /// `pNN` outside p1..p100.
    #[error("{0:?} is not a percentile: use p1 to p100 (p50 is the median, p100 the largest)")]
    BadPercentile(String),
    /// A duration for a count metric, or a bare number for a time.
    #[error("{metric} takes {expected}, not {value:?}")]
    UnitMismatch {
        /// The metric.
        metric: &'static str,
        /// The value as written.
        value: String,
        /// What it takes.
        expected: &'static str,
    },
    /// `>=` on a distribution.
    #[error("p… {0} is higher-is-worse: only an upper bound (<=) is supported")]
    LowerBoundOnDistribution(&'static str),
}

fn outcome_names() -> String {
    Outcome::ALL.map(Outcome::as_str).join(", ")
}

fn interval_names() -> String {
    Interval::ALL.map(Interval::as_str).join(", ")
}

fn predicate_list() -> String {
    predicate_names().collect::<Vec<_>>().join(", ")
}
