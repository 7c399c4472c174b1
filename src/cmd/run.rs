//! `drainwatch run`: validate the plan, pick the platform, run the trials; with `--policy`,
//! run every arm and judge the run against the policy's thresholds.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};

use drainwatch::cli::{PlatformArg, RunArgs};
use drainwatch::evidence::plan::TrialConfig;
use drainwatch::evidence::policy::flags::FLAGS_SOURCE;
use drainwatch::evidence::policy::{Policy, parse_arm_list};
use drainwatch::evidence::verdict::unjudged::unjudged;
use drainwatch::evidence::verdict::{self, Decision, Verdict};
use drainwatch::gate::{self, arms};
use drainwatch::platform::Platform;
use drainwatch::platform::kubernetes::{KubernetesOptions, KubernetesPlatform};
use drainwatch::platform::local::LocalPlatform;
use drainwatch::trial::{self, RunOptions, RunOutcome, output};

use super::{EXIT_INTERRUPTED, EXIT_POLICY, interrupt_on_signals, runtime};
use drainwatch::console;

/// What to run on whichever platform the flags chose.
enum Job<'a> {
    Trials(&'a TrialConfig, &'a RunOptions),
    Arms(&'a [drainwatch::evidence::policy::ArmPlan], &'a Path),
}

pub fn cmd_run(args: RunArgs) -> Result<u8> {
    if let Some(spec) = args.policy.clone() {
        return run_policy(&args, &spec);
    }
    if args
        .baseline
        .as_deref()
        .is_some_and(|b| !b.trim().is_empty())
    {
        console::note!(
            "note: the baseline is read only with --policy (baseline thresholds); ignored"
        );
    }
    let cfg = args.plan_input().validate().context("invalid flags")?;
    // Before anything runs: a --threshold these flows cannot measure is bad input, as in a policy.
    let gate = (!args.thresholds.is_empty())
        .then(|| Policy::of_flags(&args.thresholds, &cfg))
        .transpose()
        .context("invalid --threshold")?
        .map(|p| p.as_planned(|_| Some(args.repeat)));
    check_tls(std::slice::from_ref(&cfg))?;
    output::prepare_out(&args.out, args.clean_out)?;
    let rt = runtime()?;
    let outcome = rt.block_on(async {
        let interrupt = interrupt_on_signals()?;
        let opts = RunOptions {
            repeat: args.repeat,
            out: args.out.clone(),
            interrupt: interrupt.clone(),
        };
        on_platform(&args, Job::Trials(&cfg, &opts), &interrupt).await
    })?;
    let trials = gate::load::run_trials(&args.out);
    let Some(policy) = gate else {
        // Nothing gates this run: say what failed and how to gate it, never a silent 0.
        if let Some(u) = unjudged(&trials) {
            console::result!("");
            for l in u.lines() {
                console::result!("{l}");
            }
        }
        return Ok(match outcome {
            RunOutcome::Completed => 0,
            RunOutcome::Interrupted => EXIT_INTERRUPTED,
        });
    };
    let v = verdict::evaluate(&policy, FLAGS_SOURCE, |_| &trials);
    print_verdict(&v);
    console::result!(
        "verdict: {} (the --threshold flags, judged per trial; no verdict file: --policy writes one)",
        v.verdict.as_str()
    );
    Ok(match (outcome, v.verdict) {
        (RunOutcome::Interrupted, _) => EXIT_INTERRUPTED,
        (RunOutcome::Completed, Decision::Pass) => 0,
        (RunOutcome::Completed, Decision::Fail) => EXIT_POLICY,
    })
}

/// Before any trial: every attach arm's CA file reads as PEM (bad input, exit 2, not a failed
/// trial), and verification turned off is said on stderr (the report's warnings say it too).
fn check_tls(cfgs: &[TrialConfig]) -> Result<()> {
    for cfg in cfgs {
        let Some(tls) = cfg
            .kubernetes
            .as_ref()
            .and_then(|k| k.attach.as_ref())
            .and_then(|a| a.tls.as_ref())
        else {
            continue;
        };
        if let Some(path) = &tls.ca_file {
            drainwatch::net::attach::tls::read_ca(path).context("invalid flags")?;
        }
        if tls.insecure_skip_verify {
            console::warning!("drainwatch: WARNING: {}", trial::INSECURE_TLS_WARNING);
        }
    }
    Ok(())
}

/// Builds the platform the flags name and runs `job` on it; the trial loop is generic, so
/// each platform gets its own monomorphic call.
async fn on_platform(
    args: &RunArgs,
    job: Job<'_>,
    interrupt: &tokio_util::sync::CancellationToken,
) -> Result<RunOutcome> {
    match args.platform {
        PlatformArg::Local => {
            let exe = std::env::current_exe()
                .context("failed to locate the drainwatch binary for the probe")?;
            let mut p = LocalPlatform::new(
                exe,
                args.ready_port,
                Duration::from_secs(args.ready_timeout),
            )
            .with_run_id(args.run_id.clone());
            run_job(&mut p, job, interrupt).await
        }
        PlatformArg::Kubernetes => {
            let mut p = KubernetesPlatform::new(KubernetesOptions {
                kubeconfig: args.cluster.kubeconfig.clone(),
                context: args.cluster.context.clone(),
                namespace: args.workload.namespace.clone(),
                image: args.workload.image.clone(),
                ready_timeout: Duration::from_secs(args.ready_timeout),
                api_timeout: Duration::from_secs(args.cluster.api_timeout),
                run_id: args.run_id.clone(),
                exe: std::env::current_exe().ok(),
            });
            run_job(&mut p, job, interrupt).await
        }
    }
}

async fn run_job<P: Platform>(
    p: &mut P,
    job: Job<'_>,
    interrupt: &tokio_util::sync::CancellationToken,
) -> Result<RunOutcome> {
    Ok(match job {
        Job::Trials(cfg, opts) => trial::run(p, cfg, opts).await?,
        Job::Arms(plans, out) => arms::run_arms(p, plans, out, interrupt).await?,
    })
}

/// Every arm of the policy, then the verdict: exit 0 when every threshold held, 1 when one was
/// missed, 2 (an error) when the tool failed, 130 when interrupted (the partial run is judged).
fn run_policy(args: &RunArgs, spec: &str) -> Result<u8> {
    let policy = gate::load_policy(spec)?;
    let policy = policy.select(&parse_arm_list(args.arms.as_deref().unwrap_or("")))?;
    let plans = policy
        .plan(&args.plan_input(), &args.explicit)
        .with_context(|| format!("the policy {spec} cannot run with these flags"))?;
    check_tls(&plans.iter().map(|p| p.config.clone()).collect::<Vec<_>>())?;
    // Before any trial: a baseline that cannot be read is bad input, not a verdict.
    let baseline = gate::baseline::load(args.baseline.as_deref())?;
    output::prepare_out(&args.out, args.clean_out)?;
    output::check_writable(&args.out)?;
    let rt = runtime()?;
    let outcome = rt.block_on(async {
        let interrupt = interrupt_on_signals()?;
        on_platform(args, Job::Arms(&plans, &args.out), &interrupt).await
    })?;
    let policy = policy.as_planned(|arm| plans.iter().find(|p| p.name == arm).map(|p| p.repeat));
    let judged = gate::judge_against(
        &policy,
        spec,
        &args.out,
        baseline.as_ref(),
        args.baseline_reason.as_deref(),
    )?;
    report(&judged.verdict, &args.out);
    Ok(match (outcome, judged.verdict.verdict) {
        (RunOutcome::Interrupted, _) => EXIT_INTERRUPTED,
        (RunOutcome::Completed, Decision::Pass) => 0,
        (RunOutcome::Completed, Decision::Fail) => EXIT_POLICY,
    })
}

fn report(v: &Verdict, out: &Path) {
    print_verdict(v);
    console::result!(
        "verdict: {} ({} written to {})",
        v.verdict.as_str(),
        [gate::VERDICT_FILE, gate::JUNIT_FILE, gate::SUMMARY_FILE].join(", "),
        out.display()
    );
}

/// One line per threshold of every arm, then why each missed one missed; the same for a
/// policy and for --threshold.
fn print_verdict(v: &Verdict) {
    console::result!("");
    for a in &v.arms {
        for t in &a.thresholds {
            let flaky = if t.is_flaky() {
                " (flaky: held only after a retry)"
            } else {
                ""
            };
            console::result!("{:<5} {}: {}{flaky}", t.word(), a.name, t.name);
        }
    }
    for l in v.failing_lines() {
        console::result!("{l}");
    }
    for m in v.flaky_lines() {
        console::result!("  {m}");
    }
    for m in v.not_judged_lines() {
        console::result!("  not judged: {m}");
    }
}
