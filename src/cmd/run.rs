//! `drainwatch run`: validate the plan (or the policy's arms), pick the platform, run the
//! trials; with `--policy`, judge the run against the policy's thresholds afterwards.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use tokio_util::sync::CancellationToken;

use drainwatch::cli::{PlatformArg, RunArgs};
use drainwatch::evidence::plan::TrialConfig;
use drainwatch::evidence::policy::{ArmPlan, Policy, parse_arm_list};
use drainwatch::evidence::verdict::{Decision, Verdict};
use drainwatch::gate::{self, arms};
use drainwatch::platform::Platform;
use drainwatch::platform::local::LocalPlatform;
use drainwatch::trial::{self, RunOptions, RunOutcome, output};

use super::{EXIT_INTERRUPTED, EXIT_POLICY, interrupt_on_signals, runtime};

/// What a run does, decided and validated before any platform is touched.
enum Job {
    /// One configuration from the flags, `--repeat` times.
    Single { cfg: TrialConfig, repeat: u32 },
    /// Every arm of a policy, then the verdict.
    Policy {
        policy: Policy,
        source: String,
        plans: Vec<ArmPlan>,
    },
}

impl Job {
    fn from_args(args: &RunArgs) -> Result<Self> {
        let Some(spec) = &args.policy else {
            let cfg = args.plan_input().validate().context("invalid flags")?;
            return Ok(Self::Single {
                cfg,
                repeat: args.repeat,
            });
        };
        let policy = gate::load_policy(spec)?;
        let policy = policy.select(&parse_arm_list(args.arms.as_deref().unwrap_or("")))?;
        let plans = policy
            .plan(&args.plan_input(), &args.explicit)
            .with_context(|| format!("the policy {spec} cannot run with these flags"))?;
        output::check_writable(&args.out)?;
        Ok(Self::Policy {
            policy,
            source: spec.clone(),
            plans,
        })
    }

    async fn run_on<P: Platform>(
        &self,
        platform: &mut P,
        out: &Path,
        interrupt: CancellationToken,
    ) -> Result<RunOutcome> {
        Ok(match self {
            Self::Single { cfg, repeat } => {
                let opts = RunOptions {
                    repeat: *repeat,
                    out: out.to_path_buf(),
                    interrupt,
                };
                trial::run(platform, cfg, &opts).await?
            }
            Self::Policy { plans, .. } => arms::run_arms(platform, plans, out, &interrupt).await?,
        })
    }

    /// The exit code: for a policy, after judging what the arms left in `out`.
    fn finish(&self, outcome: RunOutcome, out: &Path) -> Result<u8> {
        let Self::Policy { policy, source, .. } = self else {
            return Ok(match outcome {
                RunOutcome::Completed => 0,
                RunOutcome::Interrupted => EXIT_INTERRUPTED,
            });
        };
        let judged = gate::judge(policy, source, out)?;
        report(&judged.verdict, out);
        Ok(match (outcome, judged.verdict.verdict) {
            (RunOutcome::Interrupted, _) => EXIT_INTERRUPTED,
            (RunOutcome::Completed, Decision::Pass) => 0,
            (RunOutcome::Completed, Decision::Fail) => EXIT_POLICY,
        })
    }
}

pub fn cmd_run(args: RunArgs) -> Result<u8> {
    let job = Job::from_args(&args)?;
    let out: PathBuf = args.out.clone();
    let rt = runtime()?;
    let outcome = rt.block_on(async {
        let interrupt = interrupt_on_signals()?;
        match args.platform {
            PlatformArg::Local => {
                let exe = std::env::current_exe()
                    .context("failed to locate the drainwatch binary for the probe")?;
                let mut p = LocalPlatform::new(
                    exe,
                    args.ready_port,
                    Duration::from_secs(args.ready_timeout),
                );
                job.run_on(&mut p, &out, interrupt).await
            }
            PlatformArg::Kubernetes => {
                bail!(
                    "--platform kubernetes is not available in this build yet; use --platform local"
                )
            }
        }
    })?;
    job.finish(outcome, &out)
}

fn report(v: &Verdict, out: &Path) {
    eprintln!();
    for a in &v.arms {
        for t in &a.thresholds {
            eprintln!("{:<5} {}: {}", t.verdict.as_str(), a.name, t.name);
        }
    }
    for m in v.missed() {
        eprintln!("  missed: {m}");
    }
    eprintln!(
        "verdict: {} ({} written to {})",
        v.verdict.as_str(),
        [gate::VERDICT_FILE, gate::JUNIT_FILE, gate::SUMMARY_FILE].join(", "),
        out.display()
    );
}
