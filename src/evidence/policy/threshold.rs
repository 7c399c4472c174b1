//! One threshold of a policy arm, written as a short sentence (`tcp drained-clean-close >= 100%`)
//! and parsed into a closed enum.
//!
//! The sentence is also the threshold's name in JUnit, the job summary and the PR comment, so
//! [`Threshold`]'s `Display` writes one canonical spelling of what the user wrote (`>=` and `≥`
//! parse alike, and both print as `≥`). Parsing is pure and knows nothing of the arm; whether a
//! threshold can be met by an arm's flows is checked later, against the arm's resolved plan.

use std::fmt;

pub mod baseline;

pub use baseline::Margin;

use crate::evidence::classify::Outcome;
use crate::evidence::flow::Proto;
use crate::evidence::stats::metric::{Metric, UnknownMetric};

mod distribution;
pub use distribution::Distribution;

/// Which flows a count threshold looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Every flow of the trial.
    All,
    /// One protocol's flows.
    Proto(Proto),
}

/// What a count threshold counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Counted {
    /// Flows with this outcome.
    Outcome(Outcome),
    /// Flows answered by a different instance after the trigger (UDP re-homing).
    Rehomed,
}

/// How many, as a flow count or a share of the flows in scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Amount {
    /// A number of flows.
    Flows(u32),
    /// Tenths of a percent, 0..=1000, so that comparisons stay in integers.
    PerMille(u32),
}

/// The direction of a bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `>=` / `≥`.
    AtLeast,
    /// `<=` / `≤`.
    AtMost,
}

/// A time between two events of the trial, as the report's summary measures it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Interval {
    /// `trigger-to-sigterm`.
    TriggerToSigterm,
    /// `sigterm-to-endpoint-not-ready`.
    SigtermToEndpointNotReady,
    /// `sigterm-to-last-flow-end`.
    SigtermToLastFlowEnd,
    /// `trigger-to-endpoint-removed`.
    TriggerToEndpointRemoved,
    /// `trigger-to-container-exit`.
    TriggerToContainerExit,
}

impl Interval {
    /// Every interval, in the order the reference documents them.
    pub const ALL: [Interval; 5] = [
        Self::TriggerToSigterm,
        Self::SigtermToEndpointNotReady,
        Self::SigtermToLastFlowEnd,
        Self::TriggerToEndpointRemoved,
        Self::TriggerToContainerExit,
    ];

    /// The name used in policies.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TriggerToSigterm => "trigger-to-sigterm",
            Self::SigtermToEndpointNotReady => "sigterm-to-endpoint-not-ready",
            Self::SigtermToLastFlowEnd => "sigterm-to-last-flow-end",
            Self::TriggerToEndpointRemoved => "trigger-to-endpoint-removed",
            Self::TriggerToContainerExit => "trigger-to-container-exit",
        }
    }
}

/// One threshold.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Threshold {
    /// `[tcp|udp] OUTCOME|rehomed (>=|<=) N[%]`.
    Count {
        /// Which flows.
        scope: Scope,
        /// What is counted.
        counted: Counted,
        /// Direction.
        op: Op,
        /// Bound.
        amount: Amount,
    },
    /// `INTERVAL <= DURATION`: an upper bound on a measured time.
    Interval {
        /// Which interval.
        interval: Interval,
        /// Upper bound in milliseconds.
        max_ms: u64,
    },
    /// `endpoint-not-ready-before-exit`: the endpoint left the ready set (not-ready or removed)
    /// before the container exited, so no new traffic was routed to a dead pod.
    EndpointNotReadyBeforeExit,
    /// `no-request-failed` (attach arms).
    NoRequestFailed,
    /// `no-new-connection-refused` (attach arms).
    NoNewConnectionRefused,
    /// `no-ws-abnormal-close` (WebSocket attach arms): every held connection ended with a
    /// close frame 1000 or 1001, or was open when the window closed; none ended abnormally
    /// (RFC 6455's 1006: another code, a FIN or reset without a close frame, a missing pong).
    NoWsAbnormalClose,
    /// `no-stream-reset` (http2 and grpc attach arms): no request failed with `rst-stream` or
    /// `goaway-then-reset`.
    NoStreamReset,
    /// `goaway-before-close` (http2 and grpc attach arms): every connection that ended had
    /// received the server's GOAWAY first.
    GoawayBeforeClose,
    /// `no-watch-cut` (grpc attach arms with `--grpc-watch`): no held
    /// `grpc.health.v1.Health/Watch` ended without a gRPC status (cut by RST_STREAM, the
    /// connection's FIN or RST, a GOAWAY with an error, a timeout).
    NoWatchCut,
    /// `pNN METRIC <= VALUE`: one check across the arm's trials, not one per trial.
    Distribution(Distribution),
    /// `METRIC <= baseline [+ MARGIN]`: an arm-level check, the new arm's median of the metric
    /// at most the baseline arm's median plus the margin.
    Baseline {
        /// Which metric.
        metric: Metric,
        /// How far above the baseline's median is still fine.
        margin: Margin,
    },
    /// `no-regression`: an arm-level check, no metric of the arm regressed against the
    /// baseline as `drainwatch compare` decides it (default parameters).
    NoRegression,
}

impl Threshold {
    /// Whether only attach arms (the user's own workload) can measure it.
    pub fn attach_only(&self) -> bool {
        matches!(
            self,
            Self::NoRequestFailed
                | Self::NoNewConnectionRefused
                | Self::NoWsAbnormalClose
                | Self::NoStreamReset
                | Self::GoawayBeforeClose
                | Self::NoWatchCut
        )
    }

    /// Whether only arms that speak HTTP/2 (http2, grpc) can measure it.
    pub fn h2_only(&self) -> bool {
        matches!(self, Self::NoStreamReset | Self::GoawayBeforeClose)
    }

    /// Whether it is checked once across the arm's trials instead of once per trial: a
    /// distribution, or a threshold against a baseline. Never a reason to retry a trial.
    pub fn arm_level(&self) -> bool {
        matches!(self, Self::Distribution(_)) || self.against_baseline()
    }

    /// Whether it is judged against a baseline run, once per arm (not per trial).
    pub fn against_baseline(&self) -> bool {
        matches!(self, Self::Baseline { .. } | Self::NoRegression)
    }
}

/// Why a threshold sentence does not parse; the sentence itself is added by the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThresholdError {
    /// Nothing was written.
    #[error("empty threshold")]
    Empty,
    /// No comparison, and not a known predicate.
    #[error(
        "expected \"[tcp|udp] OUTCOME >= N%\", \"INTERVAL <= 10s\", \"METRIC <= baseline [+ 10%|200ms|2]\", \"pNN METRIC <= VALUE\" or one of endpoint-not-ready-before-exit, no-request-failed, no-new-connection-refused, no-ws-abnormal-close, no-stream-reset, goaway-before-close, no-watch-cut, no-regression"
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

const PREDICATES: [(&str, Threshold); 8] = [
    (
        "endpoint-not-ready-before-exit",
        Threshold::EndpointNotReadyBeforeExit,
    ),
    ("no-request-failed", Threshold::NoRequestFailed),
    (
        "no-new-connection-refused",
        Threshold::NoNewConnectionRefused,
    ),
    ("no-ws-abnormal-close", Threshold::NoWsAbnormalClose),
    ("no-stream-reset", Threshold::NoStreamReset),
    ("goaway-before-close", Threshold::GoawayBeforeClose),
    ("no-watch-cut", Threshold::NoWatchCut),
    (baseline::NO_REGRESSION, Threshold::NoRegression),
];

/// Inclusive operators first, so that `>=` is not read as `>`.
const OPS: [(&str, Option<Op>); 7] = [
    (">=", Some(Op::AtLeast)),
    ("≥", Some(Op::AtLeast)),
    ("<=", Some(Op::AtMost)),
    ("≤", Some(Op::AtMost)),
    (">", None),
    ("<", None),
    ("=", None),
];

fn find_op(s: &str) -> Option<(usize, &'static str, Option<Op>)> {
    OPS.iter()
        .filter_map(|(tok, op)| s.find(tok).map(|i| (i, *tok, *op)))
        .min_by_key(|(i, tok, _)| (*i, std::cmp::Reverse(tok.len())))
}

/// Parses one threshold sentence.
pub fn parse(text: &str) -> Result<Threshold, ThresholdError> {
    let s = text.trim().to_ascii_lowercase();
    if s.is_empty() {
        return Err(ThresholdError::Empty);
    }
    if let Some(d) = distribution::parse(&s)? {
        return Ok(Threshold::Distribution(d));
    }
    if let Some((_, t)) = PREDICATES.iter().find(|(name, _)| *name == s) {
        return Ok(t.clone());
    }
    let Some((at, tok, op)) = find_op(&s) else {
        if PREDICATES.iter().any(|(name, _)| s.contains(name)) {
            return Err(ThresholdError::Misplaced(s));
        }
        return Err(ThresholdError::Shape);
    };
    let op = op.ok_or_else(|| ThresholdError::StrictOp(tok.to_string()))?;
    let lhs: Vec<&str> = s[..at].split_whitespace().collect();
    let rhs = s[at + tok.len()..].trim();
    let (scope, measure) = match lhs.as_slice() {
        [m] => (Scope::All, *m),
        ["tcp", m] => (Scope::Proto(Proto::Tcp), *m),
        ["udp", m] => (Scope::Proto(Proto::Udp), *m),
        [] => return Err(ThresholdError::Shape),
        _ => return Err(ThresholdError::UnknownMeasure(lhs.join(" "))),
    };
    if PREDICATES.iter().any(|(name, _)| *name == measure) {
        return Err(ThresholdError::Misplaced(measure.to_string()));
    }
    // Before the intervals: `sigterm-to-last-flow-end` is both an interval and a metric.
    if rhs.starts_with(baseline::BASELINE) {
        return baseline::parse(scope, op, measure, rhs);
    }
    if let Some(interval) = Interval::ALL.into_iter().find(|i| i.as_str() == measure) {
        if scope != Scope::All {
            return Err(ThresholdError::Misplaced(measure.to_string()));
        }
        if op == Op::AtLeast {
            return Err(ThresholdError::LowerBoundOnTime(interval.as_str()));
        }
        let max_ms = parse_duration_ms(rhs)?;
        return Ok(Threshold::Interval { interval, max_ms });
    }
    let counted = if measure == "rehomed" {
        Counted::Rehomed
    } else {
        Outcome::ALL
            .into_iter()
            .find(|o| o.as_str() == measure)
            .map(Counted::Outcome)
            .ok_or_else(|| ThresholdError::UnknownMeasure(measure.to_string()))?
    };
    let amount = parse_amount(rhs)?;
    let vacuous = matches!(
        (op, amount),
        (Op::AtLeast, Amount::Flows(0) | Amount::PerMille(0))
            | (Op::AtMost, Amount::PerMille(1000))
    );
    if vacuous {
        return Err(ThresholdError::Vacuous);
    }
    Ok(Threshold::Count {
        scope,
        counted,
        op,
        amount,
    })
}

fn parse_amount(s: &str) -> Result<Amount, ThresholdError> {
    let bad = || ThresholdError::BadAmount(s.to_string());
    if let Some(p) = s.strip_suffix('%') {
        let p = p.trim();
        let (int, frac) = p.split_once('.').unwrap_or((p, ""));
        if int.is_empty()
            || frac.len() > 1
            || !(int.bytes().chain(frac.bytes())).all(|b| b.is_ascii_digit())
        {
            return Err(bad());
        }
        let int: u32 = int
            .parse()
            .map_err(|_| ThresholdError::PercentOver100(s.to_string()))?;
        let tenths = int
            .checked_mul(10)
            .and_then(|v| v.checked_add(frac.parse::<u32>().unwrap_or(0)))
            .ok_or_else(|| ThresholdError::PercentOver100(s.to_string()))?;
        if tenths > 1000 {
            return Err(ThresholdError::PercentOver100(s.to_string()));
        }
        return Ok(Amount::PerMille(tenths));
    }
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    s.parse().map(Amount::Flows).map_err(|_| bad())
}

fn parse_duration_ms(s: &str) -> Result<u64, ThresholdError> {
    let bad = || ThresholdError::BadDuration(s.to_string());
    let split = s.find(|c: char| c.is_ascii_alphabetic()).ok_or_else(bad)?;
    let (num, unit) = s.split_at(split);
    let num = num.trim();
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(bad());
    }
    let n: f64 = num.parse().map_err(|_| bad())?;
    let factor = match unit {
        "ms" => 1.0,
        "s" => 1000.0,
        "m" => 60_000.0,
        _ => return Err(bad()),
    };
    let ms = n * factor;
    if !ms.is_finite() || ms.fract() != 0.0 || ms > 86_400_000.0 {
        return Err(bad());
    }
    // Bounded above and integral, so the cast is exact.
    Ok(ms as u64)
}

fn fmt_duration(ms: u64) -> String {
    if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Flows(n) => write!(f, "{n}"),
            Self::PerMille(t) if t % 10 == 0 => write!(f, "{}%", t / 10),
            Self::PerMille(t) => write!(f, "{}.{}%", t / 10, t % 10),
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::AtLeast => "≥",
            Self::AtMost => "≤",
        })
    }
}

impl fmt::Display for Counted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Outcome(o) => f.write_str(o.as_str()),
            Self::Rehomed => f.write_str("rehomed"),
        }
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Count {
                scope,
                counted,
                op,
                amount,
            } => {
                if let Scope::Proto(p) = scope {
                    write!(f, "{} ", p.as_str())?;
                }
                write!(f, "{counted} {op} {amount}")
            }
            Self::Interval { interval, max_ms } => {
                write!(f, "{} ≤ {}", interval.as_str(), fmt_duration(*max_ms))
            }
            Self::EndpointNotReadyBeforeExit => f.write_str("endpoint-not-ready-before-exit"),
            Self::NoRequestFailed => f.write_str("no-request-failed"),
            Self::NoNewConnectionRefused => f.write_str("no-new-connection-refused"),
            Self::NoWsAbnormalClose => f.write_str("no-ws-abnormal-close"),
            Self::NoStreamReset => f.write_str("no-stream-reset"),
            Self::GoawayBeforeClose => f.write_str("goaway-before-close"),
            Self::NoWatchCut => f.write_str("no-watch-cut"),
            Self::Distribution(d) => d.fmt(f),
            Self::Baseline { metric, margin } => {
                write!(f, "{} ≤ {}{margin}", metric.name(), baseline::BASELINE)
            }
            Self::NoRegression => f.write_str(baseline::NO_REGRESSION),
        }
    }
}

#[cfg(test)]
mod tests;
