//! Two runs compared arm by arm (`drainwatch compare BASE NEW`): arms pair by name; a pair is
//! comparable when its trigger, attach protocol and flow counts agree (everything else — the
//! image, the probe's behaviour, the service's code — may differ: that is what a pull request
//! changes); each metric is then decided by [`super::decide::compare`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::decide::{Change, Comparison, DecidedBy, Rule, compare};
use super::metric::{Metric, Unit};
use crate::report::Report;

/// The parameters of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// Two-sided significance level of the rank-sum test.
    pub alpha: f64,
    /// The smallest difference of medians that counts for an interval, ms.
    pub min_effect_ms: f64,
    /// The smallest difference of medians that counts for a failure count.
    pub min_effect_count: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            alpha: 0.05,
            min_effect_ms: 100.0,
            min_effect_count: 1.0,
        }
    }
}

/// One metric of one arm pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricResult {
    /// The metric (by its name in JSON).
    pub metric: Metric,
    /// The comparison.
    pub comparison: Comparison,
}

/// What became of one arm name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "status")]
pub enum ArmResult {
    /// Both sides ran it comparably.
    Compared {
        /// Trials on each side.
        trials: (usize, usize),
        /// Every metric, in [`Metric::ALL`] order.
        metrics: Vec<MetricResult>,
    },
    /// Only the baseline ran it (reported, not an error).
    OnlyInBase,
    /// Only the new run ran it (reported, not an error).
    OnlyInNew,
    /// Both ran it, differently: the reason names what differs.
    Incomparable {
        /// What differs.
        reason: String,
    },
}

/// One arm's comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmComparison {
    /// The arm's name.
    pub arm: String,
    /// Its result.
    #[serde(flatten)]
    pub result: ArmResult,
}

/// The shape a pair must share to be compared: trigger, attach protocol, flows, and how long
/// the attach clients waited (a failure at 2 s may be a success at 5 s).
fn shape(r: &Report) -> String {
    let c = &r.trial.config;
    let attach = c
        .attach
        .as_ref()
        .map(|a| {
            format!(
                ", attach {} with {} held connections and a {} ms request timeout",
                a.protocol, a.tcp_flows, a.request_timeout_ms
            )
        })
        .unwrap_or_default();
    format!(
        "trigger {}, {} TCP and {} UDP flows{attach}",
        c.trigger, c.tcp_flows, c.udp_flows
    )
}

fn rule(m: Metric, t: &Thresholds) -> Rule {
    Rule {
        alpha: t.alpha,
        min_effect: match m.unit() {
            Unit::Count => t.min_effect_count,
            Unit::Milliseconds => t.min_effect_ms,
        },
        counts_failures: m.counts_failures(),
    }
}

fn compare_arm(base: &[Report], new: &[Report], t: &Thresholds) -> ArmResult {
    let shapes = |rs: &[Report]| {
        let mut s: Vec<String> = rs.iter().map(shape).collect();
        s.sort();
        s.dedup();
        s
    };
    let (bs, ns) = (shapes(base), shapes(new));
    if bs != ns {
        return ArmResult::Incomparable {
            reason: format!("baseline {}; new {}", bs.join(" | "), ns.join(" | ")),
        };
    }
    let metrics = Metric::ALL
        .iter()
        .map(|&m| {
            let b: Vec<Option<f64>> = base.iter().map(|r| m.of(r)).collect();
            let n: Vec<Option<f64>> = new.iter().map(|r| m.of(r)).collect();
            MetricResult {
                metric: m,
                comparison: compare(&b, &n, &rule(m, t)),
            }
        })
        .collect();
    ArmResult::Compared {
        trials: (base.len(), new.len()),
        metrics,
    }
}

/// Whether any metric of any compared arm regressed.
pub fn regressed(arms: &[ArmComparison]) -> bool {
    arms.iter().any(|a| match &a.result {
        ArmResult::Compared { metrics, .. } => metrics
            .iter()
            .any(|m| m.comparison.change == Change::Regressed),
        _ => false,
    })
}

/// How many metrics of the compared arms the rule could not decide for want of trials (or for
/// too many to enumerate), against how many both sides measured: a comparison that found no
/// regression only because it could not look is not a clean one.
pub fn undecided(arms: &[ArmComparison]) -> (usize, usize) {
    let measured: Vec<&Comparison> = arms
        .iter()
        .flat_map(|a| match &a.result {
            ArmResult::Compared { metrics, .. } => metrics.iter().collect(),
            _ => Vec::new(),
        })
        .map(|m| &m.comparison)
        .filter(|c| c.decided_by != DecidedBy::Missing && c.change != Change::NotMeasured)
        .collect();
    let open = measured
        .iter()
        .filter(|c| {
            matches!(
                c.decided_by,
                DecidedBy::TooFewTrials | DecidedBy::TooManyTrials
            )
        })
        .count();
    (open, measured.len())
}

/// How many arms were compared (the rest were on one side only or not comparable).
pub fn compared(arms: &[ArmComparison]) -> usize {
    arms.iter()
        .filter(|a| matches!(a.result, ArmResult::Compared { .. }))
        .count()
}

/// One side's trials of `name`, when it has any.
fn side<'a>(run: &'a BTreeMap<String, Vec<Report>>, name: &str) -> Option<&'a [Report]> {
    run.get(name).filter(|rs| !rs.is_empty()).map(Vec::as_slice)
}

/// Every arm name of either run, in name order.
pub fn compare_runs(
    base: &BTreeMap<String, Vec<Report>>,
    new: &BTreeMap<String, Vec<Report>>,
    t: &Thresholds,
) -> Vec<ArmComparison> {
    let mut names: Vec<&String> = base.keys().chain(new.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            let result = match (side(base, name), side(new, name)) {
                (Some(b), Some(n)) => compare_arm(b, n, t),
                (Some(_), None) => ArmResult::OnlyInBase,
                (None, Some(_)) => ArmResult::OnlyInNew,
                (None, None) => ArmResult::Incomparable {
                    reason: "no readable trial report on either side".into(),
                },
            };
            ArmComparison {
                arm: name.clone(),
                result,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
