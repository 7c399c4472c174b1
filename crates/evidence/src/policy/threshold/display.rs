//! Each threshold's canonical sentence: its name in JUnit, the job summary, the PR comment and
//! the verdict, and what parses back to the same threshold.

use std::fmt;

use super::{Amount, Counted, Op, Scope, Threshold, baseline, fmt_duration};

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
            Self::NoNewConnectionFailed => f.write_str("no-new-connection-failed"),
            Self::NoWsAbnormalClose => f.write_str("no-ws-abnormal-close"),
            Self::NoStreamReset => f.write_str("no-stream-reset"),
            Self::GoawayBeforeClose => f.write_str("goaway-before-close"),
            Self::NoWatchCut => f.write_str("no-watch-cut"),
            Self::NoIngressHiddenRetry => f.write_str("no-ingress-hidden-retry"),
            Self::Distribution(d) => d.fmt(f),
            Self::Baseline { metric, margin } => {
                write!(f, "{} ≤ {}{margin}", metric.name(), baseline::BASELINE)
            }
            Self::NoRegression => f.write_str(baseline::NO_REGRESSION),
        }
    }
}
