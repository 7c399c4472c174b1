//! The decision for one metric of one arm, baseline against new (issue 15's `drainwatch
//! compare`): regressed, improved or unchanged, and which rule decided it. Every metric here is
//! "higher is worse" (failed requests, refused dials, severed flows, intervals).
//!
//! Two rules, in this order:
//! 1. **Every trial against none** (counts, any n): a failure class present in every new trial
//!    and in no baseline trial is a regression; the reverse an improvement. No statistics are
//!    needed to see that something which never happened now always happens.
//! 2. **Exact rank-sum test** ([`super::rank_sum_p`]) at `alpha`, and only when the medians
//!    differ by at least `min_effect` (so 1 ms of jitter never regresses). With too few trials
//!    for the test to reach `alpha` at all ([`super::min_p`] above it), rule 2 cannot decide
//!    and says so.

use serde::{Deserialize, Serialize};

use super::{Spread, min_p, rank_sum_p, spread};

/// What the comparison found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    /// The new run is worse.
    Regressed,
    /// The new run is better.
    Improved,
    /// No difference the rules can show.
    Unchanged,
    /// One side measured nothing: no comparison (never read as zero).
    NotMeasured,
}

/// Which rule decided, so a report can say why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecidedBy {
    /// A failure class in every trial of one side and none of the other (rule 1).
    EveryTrialAgainstNone,
    /// The exact test reached `alpha` and the effect was at least `min_effect` (rule 2).
    RankSum,
    /// The test did not reach `alpha`, or the effect was below `min_effect`.
    NoSignificantDifference,
    /// Too few trials for the test to reach `alpha` at all, and rule 1 did not apply.
    TooFewTrials,
    /// More trials than the exact enumeration takes (see [`super::MAX_ENUMERATED`]).
    TooManyTrials,
    /// A side had no measured value.
    Missing,
}

/// The rule's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// The two-sided significance level of rule 2.
    pub alpha: f64,
    /// The smallest difference of medians that counts, in the metric's unit.
    pub min_effect: f64,
    /// Whether rule 1 applies: the metric counts failures (0 = none happened).
    pub counts_failures: bool,
}

/// One metric's comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline's measured values (None: not measured).
    pub base: Option<Spread>,
    /// The new run's measured values.
    pub new: Option<Spread>,
    /// The exact two-sided p-value, when the test ran.
    pub p: Option<f64>,
    /// What changed.
    pub change: Change,
    /// Why.
    pub decided_by: DecidedBy,
}

/// Compares the measured values of one metric (`None` entries are trials that did not measure
/// it and are left out; a side with none at all is not-measured).
pub fn compare(base: &[Option<f64>], new: &[Option<f64>], rule: &Rule) -> Comparison {
    let b: Vec<f64> = base.iter().flatten().copied().collect();
    let n: Vec<f64> = new.iter().flatten().copied().collect();
    let (bs, ns) = (spread(&b), spread(&n));
    let done = |p, change, decided_by| Comparison {
        base: bs,
        new: ns,
        p,
        change,
        decided_by,
    };
    let (Some(bsp), Some(nsp)) = (bs, ns) else {
        return done(None, Change::NotMeasured, DecidedBy::Missing);
    };
    if rule.counts_failures {
        let none = |xs: &[f64]| xs.iter().all(|&x| x == 0.0);
        let every = |xs: &[f64]| xs.iter().all(|&x| x > 0.0);
        if none(&b) && every(&n) {
            return done(None, Change::Regressed, DecidedBy::EveryTrialAgainstNone);
        }
        if every(&b) && none(&n) {
            return done(None, Change::Improved, DecidedBy::EveryTrialAgainstNone);
        }
    }
    if min_p(b.len(), n.len()) > rule.alpha {
        return done(None, Change::Unchanged, DecidedBy::TooFewTrials);
    }
    let Some(p) = rank_sum_p(&b, &n) else {
        return done(None, Change::Unchanged, DecidedBy::TooManyTrials);
    };
    let delta = nsp.median - bsp.median;
    if p > rule.alpha || delta == 0.0 || delta.abs() < rule.min_effect {
        return done(
            Some(p),
            Change::Unchanged,
            DecidedBy::NoSignificantDifference,
        );
    }
    let change = if delta > 0.0 {
        Change::Regressed
    } else {
        Change::Improved
    };
    done(Some(p), change, DecidedBy::RankSum)
}

#[cfg(test)]
mod tests;
