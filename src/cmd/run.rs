//! `drainwatch run`: validate the plan, pick the platform, run the trials.

use std::time::Duration;

use anyhow::{Context, Result, bail};

use drainwatch::cli::{PlatformArg, RunArgs};
use drainwatch::platform::local::LocalPlatform;
use drainwatch::trial::{self, RunOptions, RunOutcome};

use super::{EXIT_INTERRUPTED, interrupt_on_signals, runtime};

pub fn cmd_run(args: RunArgs) -> Result<u8> {
    let cfg = args.plan_input().validate().context("invalid flags")?;
    if args.platform == PlatformArg::Kubernetes {
        bail!("--platform kubernetes is not available in this build yet; use --platform local");
    }
    let exe =
        std::env::current_exe().context("failed to locate the drainwatch binary for the probe")?;
    let rt = runtime()?;
    rt.block_on(async {
        let interrupt = interrupt_on_signals()?;
        let opts = RunOptions {
            repeat: args.repeat,
            out: args.out.clone(),
            interrupt,
        };
        let mut platform = LocalPlatform::new(
            exe,
            args.ready_port,
            Duration::from_secs(args.ready_timeout),
        );
        match trial::run(&mut platform, &cfg, &opts).await? {
            RunOutcome::Completed => Ok(0),
            RunOutcome::Interrupted => Ok(EXIT_INTERRUPTED),
        }
    })
}
