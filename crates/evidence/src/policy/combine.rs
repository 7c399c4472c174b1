//! How an arm's trials combine into one verdict per threshold: the quorum (`all`, today's rule,
//! or `k/n`), the retries of a trial whose per-trial thresholds did not all hold, and which
//! distribution metrics an arm can measure at all. Pure; checked against the arm's resolved
//! plan in [`super::Arm::plan`], so a quorum that does not match the arm's `repeat` is refused
//! before anything runs.

use std::fmt;

use super::PolicyError;
use super::threshold::{Distribution, Threshold};
use crate::plan::TrialConfig;
use crate::stats::metric::Metric;

/// The most retries an arm may ask for: each retry is a whole trial (minutes on a cluster), and a
/// gate that needs more than a few to pass is measuring its flakiness, not the service.
pub const MAX_RETRIES: u32 = 5;

/// How many of an arm's trials a per-trial threshold must hold in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Quorum {
    /// Every trial (`quorum = "all"`, the default).
    #[default]
    All,
    /// At least `k` of the arm's `n` trials (`quorum = "k/n"`); `n` is the arm's `repeat`.
    Of {
        /// Trials that must hold.
        k: u32,
        /// Trials the arm runs.
        n: u32,
    },
}

impl Quorum {
    /// How many of `trials` final trials must hold: all of them, or `k`.
    pub fn need(self, trials: u32) -> u32 {
        match self {
            Self::All => trials,
            Self::Of { k, .. } => k,
        }
    }
}

impl fmt::Display for Quorum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All => f.write_str("all"),
            Self::Of { k, n } => write!(f, "{k}/{n}"),
        }
    }
}

/// Why a `quorum` value is refused; the arm is added by the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuorumError {
    /// Not `all` and not `k/n`.
    #[error(
        "expected \"all\" or \"k/n\" with whole numbers (\"4/5\": at least 4 of the arm's 5 trials)"
    )]
    Shape,
    /// `k` outside 1..=n.
    #[error("k must be 1 to n: {k}/{n} {why}")]
    OutOfRange {
        /// k.
        k: u32,
        /// n.
        n: u32,
        /// Why.
        why: &'static str,
    },
}

/// Parses `quorum = "all"` or `"k/n"`.
pub fn parse_quorum(text: &str) -> Result<Quorum, QuorumError> {
    let s = text.trim();
    if s.eq_ignore_ascii_case("all") {
        return Ok(Quorum::All);
    }
    let (k, n) = s.split_once('/').ok_or(QuorumError::Shape)?;
    let num = |x: &str| {
        let x = x.trim();
        if x.is_empty() || !x.bytes().all(|b| b.is_ascii_digit()) {
            return Err(QuorumError::Shape);
        }
        x.parse::<u32>().map_err(|_| QuorumError::Shape)
    };
    let (k, n) = (num(k)?, num(n)?);
    if k == 0 {
        return Err(QuorumError::OutOfRange {
            k,
            n,
            why: "would pass with no trial holding",
        });
    }
    if k > n {
        return Err(QuorumError::OutOfRange {
            k,
            n,
            why: "asks for more trials than the arm runs",
        });
    }
    Ok(Quorum::Of { k, n })
}

/// Refuses `retries` above [`MAX_RETRIES`].
pub fn check_retries(arm: &str, retries: u32) -> Result<u32, PolicyError> {
    if retries > MAX_RETRIES {
        return Err(PolicyError::Retries {
            arm: arm.to_string(),
            retries,
        });
    }
    Ok(retries)
}

/// Refuses a `k/n` quorum whose `n` is not the arm's resolved `repeat` (from the policy or
/// `--repeat`): "4 of 5" over 3 trials means nothing.
pub fn check_quorum(arm: &str, quorum: Quorum, repeat: u32) -> Result<(), PolicyError> {
    match quorum {
        Quorum::Of { k, n } if n != repeat => Err(PolicyError::QuorumRepeat {
            arm: arm.to_string(),
            quorum: format!("{k}/{n}"),
            repeat,
        }),
        _ => Ok(()),
    }
}

/// Why the distribution threshold `t` can never be measured by the arm `cfg` describes.
pub fn impossible_distribution(t: &Threshold, cfg: &TrialConfig) -> Option<String> {
    let Threshold::Distribution(Distribution { metric, .. }) = t else {
        return None;
    };
    let attached = cfg.kubernetes.as_ref().and_then(|k| k.attach.as_ref());
    let name = metric.name();
    match attached {
        None if metric.attach_only() => Some(format!(
            "{name} is measured on an attached workload's requests and dials: the arm needs target = \"deployment/NAME\" (or --target)"
        )),
        Some(_) if metric.sigterm_based() => Some(format!(
            "{name} is timed from SIGTERM, which is not observed on an attached workload (only drainwatch's probe reports it)"
        )),
        Some(a) if *metric == Metric::FailedDials && a.dial_rate == 0 => {
            Some("the arm's dial-rate is 0, so no new connection is dialled".into())
        }
        None if *metric == Metric::TcpSevered || *metric == Metric::TcpReadTimeout => {
            (cfg.tcp_flows == 0)
                .then(|| format!("the arm runs no tcp flows, so {name} has nothing to count"))
        }
        None if *metric == Metric::UdpLost => (cfg.udp_flows == 0)
            .then(|| format!("the arm runs no udp flows, so {name} has nothing to count")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quorum_parses_all_and_k_of_n() {
        assert_eq!(parse_quorum("all"), Ok(Quorum::All));
        assert_eq!(parse_quorum(" ALL "), Ok(Quorum::All));
        assert_eq!(parse_quorum("4/5"), Ok(Quorum::Of { k: 4, n: 5 }));
        assert_eq!(parse_quorum("5 / 5"), Ok(Quorum::Of { k: 5, n: 5 }));
        assert_eq!(Quorum::Of { k: 4, n: 5 }.to_string(), "4/5");
        assert_eq!(Quorum::All.to_string(), "all");
    }

    #[test]
    fn malformed_quorums_are_named() {
        for bad in ["", "4", "4 of 5", "-1/5", "4/5/6", "a/b", "4.5/5", "all/5"] {
            assert_eq!(parse_quorum(bad), Err(QuorumError::Shape), "{bad:?}");
        }
        assert!(matches!(
            parse_quorum("0/5"),
            Err(QuorumError::OutOfRange { k: 0, n: 5, .. })
        ));
        let e = parse_quorum("6/5").unwrap_err();
        assert!(
            e.to_string().contains("more trials than the arm runs"),
            "{e}"
        );
    }

    #[test]
    fn need_is_every_trial_for_all_and_k_otherwise() {
        assert_eq!(Quorum::All.need(5), 5);
        assert_eq!(Quorum::Of { k: 4, n: 5 }.need(5), 4);
        // n/n is `all` over the arm's n trials.
        assert_eq!(Quorum::Of { k: 5, n: 5 }.need(5), Quorum::All.need(5));
    }

    #[test]
    fn retries_are_bounded_and_quorum_must_match_repeat() {
        assert_eq!(check_retries("a", 0), Ok(0));
        assert_eq!(check_retries("a", MAX_RETRIES), Ok(MAX_RETRIES));
        assert_eq!(
            check_retries("a", 6),
            Err(PolicyError::Retries {
                arm: "a".into(),
                retries: 6
            })
        );
        assert_eq!(check_quorum("a", Quorum::Of { k: 4, n: 5 }, 5), Ok(()));
        assert_eq!(check_quorum("a", Quorum::All, 3), Ok(()));
        let e = check_quorum("a", Quorum::Of { k: 4, n: 5 }, 3).unwrap_err();
        assert!(e.to_string().contains("repeat = 3"), "{e}");
    }
}
