//! `drainwatch compare` and `drainwatch report`: the subcommands that read recorded runs.

use std::path::PathBuf;

use clap::Args;

/// `drainwatch compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The baseline run directory (a policy run, a `--repeat` run or one trial).
    pub base: PathBuf,
    /// The new run directory.
    pub new: PathBuf,
    /// Write the comparison as JSON to this file (schema/compare.schema.json).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the comparison as Markdown to this file (the section the job summary shows).
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Two-sided significance level of the rank-sum test.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// The smallest difference of medians that counts for an interval, ms.
    #[arg(long, default_value_t = 100.0)]
    pub min_effect_ms: f64,
}

/// `drainwatch report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// A trial's events.jsonl (or events.jsonl.zst, zstd-compressed).
    #[arg(long)]
    pub events: PathBuf,
    /// Write the regenerated report.json and report.html into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
}
