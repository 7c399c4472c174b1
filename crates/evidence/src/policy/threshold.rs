//! One threshold of a policy arm, written as a short sentence (`tcp drained-clean-close >= 100%`)
//! and parsed into a closed enum.
//!
//! The sentence is also the threshold's name in JUnit, the job summary and the PR comment, so
//! [`Threshold`]'s `Display` writes one canonical spelling of what the user wrote (`>=` and `≥`
//! parse alike, and both print as `≥`). Parsing is pure and knows nothing of the arm; whether a
//! threshold can be met by an arm's flows is checked later, against the arm's resolved plan.

pub mod baseline;

pub use baseline::Margin;

use crate::classify::Outcome;
use crate::flow::Proto;
use crate::stats::metric::Metric;

mod display;
mod distribution;
mod error;
pub mod reference;
pub use distribution::Distribution;
pub use error::ThresholdError;

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
    /// `node-propagation-lag` (attach arms with a dial rate): the worst node's lag from a
    /// terminating pod's endpoint turning not ready to the last new connection that node sent
    /// it (`trial.attach.data_plane`), judged between its bounds (`verdict::node_lag`).
    NodePropagationLag,
    /// `ingress-propagation-lag` (arms through an ingress): the worst controller replica's lag
    /// from a terminating pod's endpoint turning not ready to its last request to the pod,
    /// judged between its bounds like the node's (`trial.attach.ingress.routing`).
    IngressPropagationLag,
    /// `ingress-last-request-lag` (arms through an ingress): how long after a terminating pod's
    /// endpoint turned not ready the ingress still sent it a request, read from the access log:
    /// exact when every request sent after that edge was logged.
    IngressLastRequestLag,
}

impl Interval {
    /// Every interval, in the order the reference documents them.
    pub const ALL: [Interval; 8] = [
        Self::TriggerToSigterm,
        Self::SigtermToEndpointNotReady,
        Self::SigtermToLastFlowEnd,
        Self::TriggerToEndpointRemoved,
        Self::TriggerToContainerExit,
        Self::NodePropagationLag,
        Self::IngressPropagationLag,
        Self::IngressLastRequestLag,
    ];

    /// The name used in policies.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TriggerToSigterm => "trigger-to-sigterm",
            Self::SigtermToEndpointNotReady => "sigterm-to-endpoint-not-ready",
            Self::SigtermToLastFlowEnd => "sigterm-to-last-flow-end",
            Self::TriggerToEndpointRemoved => "trigger-to-endpoint-removed",
            Self::TriggerToContainerExit => "trigger-to-container-exit",
            Self::NodePropagationLag => "node-propagation-lag",
            Self::IngressPropagationLag => "ingress-propagation-lag",
            Self::IngressLastRequestLag => "ingress-last-request-lag",
        }
    }

    /// Whether only an arm that sends its flows through an ingress can measure it.
    pub fn through_ingress(self) -> bool {
        matches!(
            self,
            Self::IngressPropagationLag | Self::IngressLastRequestLag
        )
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
    /// `no-new-connection-refused` (attach arms with a dial rate): no dial of the
    /// new-connection prober was refused (ECONNREFUSED: no listener, or a reject rule). A dial
    /// that was reset or timed out is not counted here: [`Threshold::NoNewConnectionFailed`]
    /// counts those.
    NoNewConnectionRefused,
    /// `no-new-connection-failed` (attach arms with a dial rate): no dial of the prober failed,
    /// however it failed (refused, reset, timed out, a TLS or handshake failure, an unexpected
    /// answer, any other error). A dead pod's address that black-holes SYNs misses this one
    /// and not `no-new-connection-refused`.
    NoNewConnectionFailed,
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
    /// `no-ingress-hidden-retry` (attach arms through an ingress): the ingress retried no
    /// failed attempt behind the clients' backs (its request counters grew by no 5xx the
    /// clients were not sent).
    NoIngressHiddenRetry,
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
                | Self::NoNewConnectionFailed
                | Self::NoWsAbnormalClose
                | Self::NoStreamReset
                | Self::GoawayBeforeClose
                | Self::NoWatchCut
                | Self::NoIngressHiddenRetry
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

const PREDICATES: [(&str, Threshold); 10] = [
    (
        "endpoint-not-ready-before-exit",
        Threshold::EndpointNotReadyBeforeExit,
    ),
    ("no-request-failed", Threshold::NoRequestFailed),
    (
        "no-new-connection-refused",
        Threshold::NoNewConnectionRefused,
    ),
    ("no-new-connection-failed", Threshold::NoNewConnectionFailed),
    ("no-ws-abnormal-close", Threshold::NoWsAbnormalClose),
    ("no-stream-reset", Threshold::NoStreamReset),
    ("goaway-before-close", Threshold::GoawayBeforeClose),
    ("no-watch-cut", Threshold::NoWatchCut),
    ("no-ingress-hidden-retry", Threshold::NoIngressHiddenRetry),
    (baseline::NO_REGRESSION, Threshold::NoRegression),
];

/// Every predicate's name (a threshold that is one word), in the order the reference lists
/// them.
pub fn predicate_names() -> impl Iterator<Item = &'static str> {
    PREDICATES.iter().map(|(name, _)| *name)
}

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

/// A threshold's duration: the one reading every flag uses too, with its unit required.
fn parse_duration_ms(s: &str) -> Result<u64, ThresholdError> {
    crate::duration::parse_ms(s, None).map_err(|_| ThresholdError::BadDuration(s.to_string()))
}

fn fmt_duration(ms: u64) -> String {
    if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

#[cfg(test)]
mod tests;
