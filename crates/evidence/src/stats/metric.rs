//! The named metrics a baseline comparison reads from one trial's report (issue 15): a closed
//! set, each "higher is worse", each `None` where the trial did not measure it (never 0).

use crate::attach::judged;
use crate::report::{Counts, Report};

/// What a metric is measured in (so that a minimum effect has a unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Flows, requests, dials or connections.
    Count,
    /// Milliseconds.
    Milliseconds,
}

impl Unit {
    /// A value in words, as comparisons and baseline checks print it: whole numbers as such,
    /// halves (medians of even n) with one decimal, times with their unit.
    pub fn show(self, v: f64) -> String {
        let n = if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        };
        match self {
            Unit::Count => n,
            Unit::Milliseconds => format!("{n} ms"),
        }
    }
}

/// A metric name that is not one of [`Metric::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown metric {0:?}: expected one of {known}", known = Metric::ALL.map(Metric::name).join(", "))]
pub struct UnknownMetric(pub String);

/// One comparable number of a trial. Serialized by its [`Metric::name`].
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// TCP flows severed (RST, EOF before the drain) — probe arms.
    TcpSevered,
    /// TCP flows that went silent past the read timeout — probe arms.
    TcpReadTimeout,
    /// UDP flows severed or no longer answered — probe arms.
    UdpLost,
    /// Failed requests — attach arms over a request protocol.
    FailedRequests,
    /// New-connection dials that failed — attach arms with the prober on.
    FailedDials,
    /// Held connections severed — attach arms.
    SeveredConnections,
    /// The longest run of failures, ms (0 when nothing failed) — attach arms.
    #[serde(rename = "longest-failure-window")]
    LongestFailureWindowMs,
    /// Trigger → SIGTERM, ms — where SIGTERM is observed (the probe).
    #[serde(rename = "trigger-to-sigterm")]
    TriggerToSigtermMs,
    /// SIGTERM → the last flow's end, ms — where SIGTERM is observed (the probe).
    #[serde(rename = "sigterm-to-last-flow-end")]
    SigtermToLastFlowEndMs,
    /// Trigger → the endpoint's removal, ms.
    #[serde(rename = "trigger-to-endpoint-removed")]
    TriggerToEndpointRemovedMs,
}

impl Metric {
    /// Every metric, in report order.
    pub const ALL: [Metric; 10] = [
        Metric::TcpSevered,
        Metric::TcpReadTimeout,
        Metric::UdpLost,
        Metric::FailedRequests,
        Metric::FailedDials,
        Metric::SeveredConnections,
        Metric::LongestFailureWindowMs,
        Metric::TriggerToSigtermMs,
        Metric::SigtermToLastFlowEndMs,
        Metric::TriggerToEndpointRemovedMs,
    ];

    /// The metric's name in policies, tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Metric::TcpSevered => "tcp-severed",
            Metric::TcpReadTimeout => "tcp-read-timeout",
            Metric::UdpLost => "udp-lost",
            Metric::FailedRequests => "failed-requests",
            Metric::FailedDials => "failed-dials",
            Metric::SeveredConnections => "severed-connections",
            Metric::LongestFailureWindowMs => "longest-failure-window",
            Metric::TriggerToSigtermMs => "trigger-to-sigterm",
            Metric::SigtermToLastFlowEndMs => "sigterm-to-last-flow-end",
            Metric::TriggerToEndpointRemovedMs => "trigger-to-endpoint-removed",
        }
    }

    /// Every name, comma-separated, for errors that list the known ones.
    pub fn names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }

    /// The metric named `name` (as [`Metric::name`] spells it), for policies.
    pub fn parse(name: &str) -> Result<Metric, UnknownMetric> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| UnknownMetric(name.to_string()))
    }

    /// Whether the metric is measured only where SIGTERM is observed (drainwatch's probe): on
    /// an attached, unmodified workload it is always null.
    pub fn sigterm_based(self) -> bool {
        matches!(
            self,
            Metric::TriggerToSigtermMs | Metric::SigtermToLastFlowEndMs
        )
    }

    /// Whether only an attach arm (the user's own workload) measures it: requests, dials and
    /// held connections are the attach client's, so a probe arm has them null.
    pub fn attach_only(self) -> bool {
        matches!(
            self,
            Metric::FailedRequests
                | Metric::FailedDials
                | Metric::SeveredConnections
                | Metric::LongestFailureWindowMs
        )
    }

    /// What the metric is measured in.
    pub fn unit(self) -> Unit {
        match self {
            Metric::LongestFailureWindowMs
            | Metric::TriggerToSigtermMs
            | Metric::SigtermToLastFlowEndMs
            | Metric::TriggerToEndpointRemovedMs => Unit::Milliseconds,
            _ => Unit::Count,
        }
    }

    /// Whether the metric counts failures (0 = none happened), so that the
    /// every-trial-against-none rule applies to it.
    pub fn counts_failures(self) -> bool {
        !matches!(
            self,
            Metric::TriggerToSigtermMs
                | Metric::SigtermToLastFlowEndMs
                | Metric::TriggerToEndpointRemovedMs
        )
    }

    /// The metric's value in one trial's report, `None` when the trial did not measure it.
    pub fn of(self, r: &Report) -> Option<f64> {
        let s = &r.trial.summary;
        let a = r.trial.attach.as_ref();
        // A lost client shard's requests, dials and connections are unknown from then on: the
        // attach counts of such a trial are partial, so not measured (never a smaller number).
        let partial = a.is_some_and(|a| a.lost_clients.as_ref().is_some_and(|l| !l.is_empty()));
        if partial && self.attach_only() {
            return None;
        }
        let flows = |c: &Counts, n: u32| (c.total > 0).then_some(f64::from(n));
        let ms = |v: Option<i64>| v.map(|x| x as f64);
        match self {
            Metric::TcpSevered => flows(&s.tcp, s.tcp.severed),
            Metric::TcpReadTimeout => flows(&s.tcp, s.tcp.read_timeout),
            Metric::UdpLost => flows(&s.udp, s.udp.severed + s.udp.read_timeout),
            // A count over nothing sent is not measured, never 0 of 0.
            Metric::FailedRequests => a?
                .requests
                .as_ref()
                .filter(|q| q.total > 0)
                .map(|q| f64::from(q.failed)),
            Metric::FailedDials => a?
                .dials
                .as_ref()
                .filter(|d| d.total > 0)
                .map(|d| f64::from(d.failed)),
            Metric::SeveredConnections => {
                let c = &a?.connections;
                (c.total > 0).then_some(f64::from(c.severed))
            }
            // Null there means nothing failed; the window is measured whenever requests or dials
            // were.
            Metric::LongestFailureWindowMs => {
                let a = a?;
                let sent = a.requests.as_ref().is_some_and(|q| q.total > 0)
                    || a.dials.as_ref().is_some_and(|d| d.total > 0);
                if !sent {
                    return None;
                }
                Some(
                    a.longest_failure_window
                        .as_ref()
                        .map_or(0.0, |w| w.duration_ms as f64),
                )
            }
            Metric::TriggerToSigtermMs => ms(s.trigger_to_sigterm_ms),
            Metric::SigtermToLastFlowEndMs => ms(s.sigterm_to_last_flow_terminal_ms),
            // An attach trial's pods each on their own lane, the worst deciding, as the
            // threshold of the same name.
            Metric::TriggerToEndpointRemovedMs => match a {
                Some(a) => judged::worst(a, |p| p.endpoint_removed_t_ms)
                    .value()
                    .map(|x| x as f64),
                None => ms(s.trigger_to_endpoint_removed_ms),
            },
        }
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`, not `write_str`: tables align metric names with `{:<28}`.
        f.pad(self.name())
    }
}

#[cfg(test)]
mod tests;
