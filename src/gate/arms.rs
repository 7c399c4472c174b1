//! Running a policy: each arm through the one trial loop into `DIR/<arm>/` (the single-arm
//! layout), one after another on the same platform. Generic over [`Platform`], so the local
//! platform and the Kubernetes platform run policies the same way.
//!
//! An arm with `retries = N` re-runs a trial whose per-trial thresholds did not all hold, up to
//! N times, each attempt in its own directory (`trial-003`, then `trial-003-retry-1`, …; named by
//! `verdict::quorum`), all listed in the arm's `summary.json`. Whether an attempt held is the
//! verdict's own decision ([`verdict::trial_held`]), so a retry happens exactly when the verdict
//! would count that attempt as missed.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use crate::console;
use crate::evidence::policy::ArmPlan;
use crate::evidence::verdict::{self, quorum};
use crate::platform::Platform;
use crate::trial::{self, RunOptions, RunOutcome, Session, TrialError};

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
        console::progress!(
            "\n##### arm {} ({} of {}): behavior={} trigger={} grace={}s flows={} tcp + {} udp, {} trial(s), quorum {}, {} retries #####",
            plan.name,
            i + 1,
            plans.len(),
            plan.config.drain_behavior.map_or("-", |b| b.as_str()),
            plan.config.trigger,
            plan.config.grace_period_seconds,
            plan.config.tcp_flows,
            plan.config.udp_flows,
            plan.repeat,
            plan.quorum,
            plan.retries
        );
        let err = |source| ArmError {
            arm: plan.name.clone(),
            source,
        };
        if plan.retries > 0 {
            let out = out.join(&plan.name);
            if with_retries(platform, plan, &out, interrupt)
                .await
                .map_err(err)?
                == RunOutcome::Interrupted
            {
                return Ok(RunOutcome::Interrupted);
            }
            continue;
        }
        let opts = RunOptions {
            repeat: plan.repeat,
            out: out.join(&plan.name),
            interrupt: interrupt.clone(),
        };
        let outcome = trial::run(platform, &plan.config, &opts)
            .await
            .map_err(err)?;
        if outcome == RunOutcome::Interrupted {
            return Ok(RunOutcome::Interrupted);
        }
    }
    Ok(RunOutcome::Completed)
}

/// The trials of an arm with retries: every trial in `trial-NNN/` (even with `repeat = 1`, so
/// that its retries sit beside it), each retried while its per-trial thresholds did not all hold
/// and retries are left. An interrupted attempt is not retried.
async fn with_retries<P: Platform>(
    platform: &mut P,
    plan: &ArmPlan,
    out: &Path,
    interrupt: &CancellationToken,
) -> Result<RunOutcome, TrialError> {
    let mut session = Session::open(platform, &plan.config, out).await?;
    let mut outcome = RunOutcome::Completed;
    'trials: for i in 1..=plan.repeat {
        let base = format!("trial-{i:03}");
        for retry in 0..=plan.retries {
            let id = if retry == 0 {
                base.clone()
            } else {
                quorum::retry_id(&base, retry)
            };
            let heading = if retry == 0 {
                format!("{id} ({i} of {})", plan.repeat)
            } else {
                format!(
                    "{id} (retry {retry} of {} of {base}: its per-trial thresholds did not all hold)",
                    plan.retries
                )
            };
            let a = session
                .trial(platform, &plan.config, &id, Some(&id), &heading, interrupt)
                .await?;
            if a.interrupted {
                outcome = RunOutcome::Interrupted;
                break 'trials;
            }
            if verdict::trial_held(&plan.per_trial, &id, Some(&a.report)) {
                break;
            }
            if retry < plan.retries {
                console::progress!("{id}: a per-trial threshold did not hold; retrying {base}");
            } else {
                console::progress!("{id}: a per-trial threshold did not hold; no retries left");
            }
        }
    }
    session.close(true)?;
    Ok(outcome)
}
