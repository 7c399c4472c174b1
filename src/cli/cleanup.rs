//! `drainwatch cleanup`: which marked objects to remove, and the run id it takes.

use std::time::Duration;

use clap::Args;

use super::{ClusterArgs, parse_duration};

/// `drainwatch cleanup`: exactly one of `--run`, `--older-than`, `--all`. The restore
/// journals in scope are replayed first (`recorder::journal`; `--run`: that run's, otherwise
/// every one whose orchestrator is gone), then the marked objects are swept.
#[derive(Debug, Clone, Args)]
#[group(id = "what", required = true, multiple = false)]
pub struct CleanupWhat {
    /// Remove only the objects of this run (its id, as in report.json environment.run_id and
    /// the drainwatch.dev/run label).
    #[arg(long, value_name = "RUN_ID", value_parser = parse_run_id)]
    pub run: Option<String>,
    /// Remove objects carrying any run's mark that were created longer ago than this (30m,
    /// 2h): the leftovers of killed runs, safe beside runs still in progress.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub older_than: Option<Duration>,
    /// Remove everything labelled app.kubernetes.io/managed-by=drainwatch, also other runs'
    /// in progress and objects of versions before the run mark.
    #[arg(long)]
    pub all: bool,
}

/// `drainwatch cleanup`.
#[derive(Debug, Clone, Args)]
pub struct CleanupArgs {
    /// Which objects.
    #[command(flatten)]
    pub what: CleanupWhat,
    /// The cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// A run id as `cleanup --run` and `run --run-id` take it: `YYYYMMDD-HHMMSS-` and 8 hex digits.
pub fn parse_run_id(s: &str) -> Result<String, String> {
    if crate::host::is_run_id(s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{s:?} is not a run id (YYYYMMDD-HHMMSS-xxxxxxxx, as in report.json environment.run_id)"
        ))
    }
}
