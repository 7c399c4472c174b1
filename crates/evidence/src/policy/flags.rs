//! Thresholds given on the command line (`drainwatch run --threshold SENTENCE`, repeatable):
//! one arm, judged per trial exactly as a policy arm with those thresholds would be. The
//! sentences are parsed by clap with [`super::threshold::parse`]; here they become that arm,
//! refused as a policy's would be (twice the same one; one the run's flows cannot measure), and
//! a threshold against a baseline, which only a policy run reads.

use super::threshold::Threshold;
use super::{Arm, ArmSettings, OnMissingBaseline, Policy, PolicyError};
use crate::plan::TrialConfig;

/// The arm name the command-line thresholds are judged and reported under.
pub const FLAGS_ARM: &str = "run";

/// Where the verdict's `policy` says the thresholds came from.
pub const FLAGS_SOURCE: &str = "--threshold";

/// Why a baseline threshold is refused as a flag.
const NO_BASELINE: &str =
    "it is judged against a baseline run, which only --policy reads (with --baseline)";

impl Policy {
    /// The one-arm policy of `--threshold` flags, checked against the run's validated
    /// `config`: a threshold given twice, one these flows can never measure, or one against a
    /// baseline is refused.
    pub fn of_flags(thresholds: &[Threshold], config: &TrialConfig) -> Result<Self, PolicyError> {
        let mut kept: Vec<Threshold> = Vec::with_capacity(thresholds.len());
        for t in thresholds {
            // Only a policy run reads a baseline directory; here it would always be missing.
            if t.against_baseline() {
                return Err(PolicyError::Impossible {
                    arm: FLAGS_ARM.into(),
                    threshold: t.to_string(),
                    why: NO_BASELINE.into(),
                });
            }
            if kept.contains(t) {
                return Err(PolicyError::DuplicateThreshold {
                    arm: FLAGS_ARM.into(),
                    threshold: t.to_string(),
                });
            }
            kept.push(t.clone());
        }
        let arm = Arm {
            name: FLAGS_ARM.into(),
            description: None,
            settings: ArmSettings::default(),
            thresholds: kept,
            on_missing_baseline: None,
        };
        arm.check_measurable(config)?;
        Ok(Self {
            description: None,
            arms: vec![arm],
            on_missing_baseline: OnMissingBaseline::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::threshold::parse;

    fn local() -> TrialConfig {
        crate::plan::tests::input().validate().unwrap()
    }

    #[test]
    fn the_flags_become_one_arm_in_their_order() {
        let ts = [
            parse("severed <= 0").unwrap(),
            parse("p50 tcp-severed <= 1").unwrap(),
        ];
        let p = Policy::of_flags(&ts, &local()).unwrap();
        assert_eq!(p.arms.len(), 1);
        assert_eq!(p.arms[0].name, FLAGS_ARM);
        assert_eq!(p.arms[0].thresholds, ts);
        assert_eq!(p.arms[0].settings, ArmSettings::default());
    }

    #[test]
    fn twice_the_same_or_unmeasurable_is_refused_as_in_a_policy() {
        let t = parse("severed <= 0").unwrap();
        let e =
            Policy::of_flags(&[t.clone(), parse("severed ≤ 0").unwrap()], &local()).unwrap_err();
        assert_eq!(
            e,
            PolicyError::DuplicateThreshold {
                arm: FLAGS_ARM.into(),
                threshold: t.to_string()
            }
        );
        for s in [
            "no-request-failed",
            "no-new-connection-failed",
            "tcp-severed <= baseline",
            "no-regression",
        ] {
            let t = parse(s).unwrap();
            let e = Policy::of_flags(std::slice::from_ref(&t), &local())
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&t.to_string()) && e.contains("impossible"),
                "{e}"
            );
        }
    }
}
