//! Running a policy: each arm through the one trial loop into `DIR/<arm>/` (the single-arm
//! layout), one after another on the same platform. Generic over [`Platform`], so the local
//! platform and the Kubernetes platform run policies the same way.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use crate::evidence::policy::ArmPlan;
use crate::platform::Platform;
use crate::trial::{self, RunOptions, RunOutcome, TrialError};

/// A tool failure in one arm; the arms before it keep their reports.
#[derive(Debug, thiserror::Error)]
#[error("arm {arm:?} failed")]
pub struct ArmError {
    /// The arm.
    pub arm: String,
    /// Why.
    #[source]
    pub source: TrialError,
}

/// Runs every arm in order; stops at the first interrupt (returning `Interrupted`) or tool
/// failure.
pub async fn run_arms<P: Platform>(
    platform: &mut P,
    plans: &[ArmPlan],
    out: &Path,
    interrupt: &CancellationToken,
) -> Result<RunOutcome, ArmError> {
    for (i, plan) in plans.iter().enumerate() {
        eprintln!(
            "\n##### arm {} ({} of {}): behavior={} trigger={} grace={}s flows={} tcp + {} udp, {} trial(s) #####",
            plan.name,
            i + 1,
            plans.len(),
            plan.config.drain_behavior.map_or("-", |b| b.as_str()),
            plan.config.trigger,
            plan.config.grace_period_seconds,
            plan.config.tcp_flows,
            plan.config.udp_flows,
            plan.repeat
        );
        let opts = RunOptions {
            repeat: plan.repeat,
            out: out.join(&plan.name),
            interrupt: interrupt.clone(),
        };
        let outcome = trial::run(platform, &plan.config, &opts)
            .await
            .map_err(|source| ArmError {
                arm: plan.name.clone(),
                source,
            })?;
        if outcome == RunOutcome::Interrupted {
            return Ok(RunOutcome::Interrupted);
        }
    }
    Ok(RunOutcome::Completed)
}
