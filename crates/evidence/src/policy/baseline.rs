//! The policy's side of thresholds against a baseline: what a missing baseline does
//! (`on-missing-baseline`), and which metrics an arm's plan can never measure, so that a
//! baseline threshold on them is refused before anything runs instead of never being judged.

use serde::Deserialize;

use super::threshold::Threshold;
use crate::plan::TrialConfig;
use crate::stats::metric::Metric;

/// What a baseline threshold does when its arm has no baseline to be judged against: none was
/// given, the baseline lacks the arm or ran it incomparably, or it did not measure the metric.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnMissingBaseline {
    /// The threshold does not fail the verdict; it is shown as "no baseline" (the default, so
    /// the first run of a gate, with nothing to compare with yet, is not red).
    #[default]
    Warn,
    /// The threshold is missed (exit 1).
    Fail,
}

impl OnMissingBaseline {
    /// The word in policies.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Warn => "warn",
            Self::Fail => "fail",
        }
    }
}

/// Why the baseline threshold `t` can never be judged with the flows `cfg` asks for: its metric
/// is null on every trial of such an arm. `None` for every other threshold.
pub(super) fn impossible(t: &Threshold, cfg: &TrialConfig) -> Option<String> {
    let Threshold::Baseline { metric, .. } = t else {
        return None;
    };
    let k8s = cfg.kubernetes.as_ref();
    let attached = k8s.and_then(|k| k.attach.as_ref());
    let name = metric.name();
    if let Some(a) = attached {
        if metric.sigterm_based() {
            return Some(format!(
                "{name} is measured from SIGTERM, which drainwatch observes only in its own probe: on an attach arm it is always null (use trigger-to-endpoint-removed or longest-failure-window)"
            ));
        }
        return match metric {
            Metric::TcpSevered | Metric::TcpReadTimeout | Metric::UdpLost => Some(format!(
                "{name} counts the probe's flows: an attach arm has none (its held connections are severed-connections)"
            )),
            Metric::FailedRequests if !a.protocol.sends_requests() || cfg.tcp_flows == 0 => {
                Some("the arm holds no http, http2 or grpc flows, so no request is made".into())
            }
            Metric::FailedDials if a.dial_rate == 0 => {
                Some("the arm's dial-rate is 0, so no new connection is dialled".into())
            }
            Metric::LongestFailureWindowMs
                if a.dial_rate == 0 && (!a.protocol.sends_requests() || cfg.tcp_flows == 0) =>
            {
                Some(
                    "the arm makes no request and dials no new connection, so nothing can fail"
                        .into(),
                )
            }
            _ => None,
        };
    }
    if metric.attach_only() {
        return Some(format!(
            "{name} is measured by the attach client (requests, dials, held connections of your own workload): the arm needs target = \"deployment/NAME\" (or --target)"
        ));
    }
    match metric {
        Metric::TcpSevered | Metric::TcpReadTimeout if cfg.tcp_flows == 0 => {
            Some("the arm runs no tcp flows, so there is nothing to count".into())
        }
        Metric::UdpLost if cfg.udp_flows == 0 => {
            Some("the arm runs no udp flows, so there is nothing to count".into())
        }
        Metric::TriggerToEndpointRemovedMs if k8s.is_none() => {
            Some("the local platform has no endpoints, so it is never measured".into())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
