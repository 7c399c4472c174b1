//! `drainwatch run`: validate the plan, pick the platform, run the trials.

use std::time::Duration;

use anyhow::{Context, Result};

use drainwatch::cli::{PlatformArg, RunArgs};
use drainwatch::platform::Platform;
use drainwatch::platform::kubernetes::{KubernetesOptions, KubernetesPlatform};
use drainwatch::platform::local::LocalPlatform;
use drainwatch::trial::{self, RunOptions, RunOutcome};

use super::{EXIT_INTERRUPTED, interrupt_on_signals, runtime};

pub fn cmd_run(args: RunArgs) -> Result<u8> {
    let cfg = args.plan_input().validate().context("invalid flags")?;
    let rt = runtime()?;
    rt.block_on(async {
        let interrupt = interrupt_on_signals()?;
        let opts = RunOptions {
            repeat: args.repeat,
            out: args.out.clone(),
            interrupt,
        };
        let outcome = match args.platform {
            PlatformArg::Local => {
                let exe = std::env::current_exe()
                    .context("failed to locate the drainwatch binary for the probe")?;
                let mut p = LocalPlatform::new(
                    exe,
                    args.ready_port,
                    Duration::from_secs(args.ready_timeout),
                );
                run_on(&mut p, &cfg, &opts).await?
            }
            PlatformArg::Kubernetes => {
                let mut p = KubernetesPlatform::new(KubernetesOptions {
                    kubeconfig: args.cluster.kubeconfig.clone(),
                    context: args.cluster.context.clone(),
                    namespace: args.workload.namespace.clone(),
                    image: args.workload.image.clone(),
                    ready_timeout: Duration::from_secs(args.ready_timeout),
                    api_timeout: Duration::from_secs(args.cluster.api_timeout),
                });
                run_on(&mut p, &cfg, &opts).await?
            }
        };
        Ok(match outcome {
            RunOutcome::Completed => 0,
            RunOutcome::Interrupted => EXIT_INTERRUPTED,
        })
    })
}

async fn run_on<P: Platform>(
    p: &mut P,
    cfg: &drainwatch::evidence::plan::TrialConfig,
    opts: &RunOptions,
) -> Result<RunOutcome> {
    Ok(trial::run(p, cfg, opts).await?)
}
