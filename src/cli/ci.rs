//! The `drainwatch ci …` flags: the steps of the GitHub Action (or any CI), fed mostly by the
//! environment a workflow step sets.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `drainwatch ci`.
#[derive(Debug, Clone, Args)]
pub struct CiArgs {
    /// Which step.
    #[command(subcommand)]
    pub command: CiCommand,
}

/// Whether to comment on the pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommentWhen {
    /// When the event is a pull request.
    Auto,
    /// Always (fails to find a pull request outside one: a warning).
    True,
    /// Never.
    False,
}

// The CI steps take their values from the environment an action step sets, where an input the
// user left empty arrives as an empty string: empty means "not given" here, never an error.

/// Parses `auto`, `true` or `false`; empty is `auto`.
pub fn parse_comment_when(s: &str) -> Result<CommentWhen, String> {
    match s.trim() {
        "" | "auto" => Ok(CommentWhen::Auto),
        "true" => Ok(CommentWhen::True),
        "false" => Ok(CommentWhen::False),
        other => Err(format!("{other:?} is not auto, true or false")),
    }
}

/// A directory that may arrive as an empty string (the run step never ran).
pub fn parse_maybe_dir(s: &str) -> Result<PathBuf, String> {
    Ok(PathBuf::from(s.trim()))
}

/// An optional number that may arrive as an empty string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaybeNumber(pub Option<i64>);

/// Parses a number; empty is "not given".
pub fn parse_maybe_number(s: &str) -> Result<MaybeNumber, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(MaybeNumber(None));
    }
    s.parse()
        .map(|n| MaybeNumber(Some(n)))
        .map_err(|_| format!("{s:?} is not a number"))
}

/// Where the files of a policy run are, and what the run step exited with.
#[derive(Debug, Clone, Args)]
pub struct CiRunDir {
    /// The run directory (`drainwatch run --policy … --out DIR`); empty when the run never
    /// started (or unset), which is reported as a tool failure.
    #[arg(long, env = "DRAINWATCH_REPORT_DIR", value_parser = parse_maybe_dir, default_value = "")]
    pub dir: PathBuf,
    /// The exit code of `drainwatch run`. Unset: not known (any CI; verdict.json decides).
    /// Set but empty (the action's run step recorded none: it never finished): no verdict,
    /// whatever the directory holds.
    #[arg(long, env = "DRAINWATCH_EXIT_CODE", value_parser = parse_maybe_number)]
    pub exit_code: Option<MaybeNumber>,
    /// Link to the uploaded artifact (actions/upload-artifact's artifact-url output).
    #[arg(long, env = "DRAINWATCH_ARTIFACT_URL")]
    pub artifact_url: Option<String>,
    /// The artifact's name.
    #[arg(long, env = "DRAINWATCH_ARTIFACT_NAME")]
    pub artifact_name: Option<String>,
    /// This use's key (`drainwatch ci key`): the comment's marker, shown in the summary;
    /// empty falls back to $GITHUB_JOB, then `drainwatch`.
    #[arg(long, env = "DRAINWATCH_KEY")]
    pub key: Option<String>,
    /// The composite action's `${{ toJSON(steps) }}`: names the step that failed when no
    /// verdict was reached.
    #[arg(long, env = "DRAINWATCH_STEPS")]
    pub steps: Option<String>,
    /// The baseline run directory (`ci baseline`'s `dir` output): when given, the run is
    /// compared with it. Empty: no baseline.
    #[command(flatten)]
    pub baseline: CiBaseline,
}

/// The baseline a run is compared with, as `drainwatch ci baseline` left it.
#[derive(Debug, Clone, Args)]
pub struct CiBaseline {
    /// The baseline run directory; empty: none.
    #[arg(id = "baseline-dir", long = "baseline-dir", env = "DRAINWATCH_BASELINE_DIR", value_parser = parse_maybe_dir, default_value = "")]
    pub dir: PathBuf,
    /// The base workflow run's page (the link in the summary).
    #[arg(
        id = "baseline-run-url",
        long = "baseline-run-url",
        env = "DRAINWATCH_BASELINE_RUN_URL"
    )]
    pub run_url: Option<String>,
    /// The base workflow run's id.
    #[arg(id = "baseline-run-id", long = "baseline-run-id", env = "DRAINWATCH_BASELINE_RUN_ID", value_parser = parse_maybe_number)]
    pub run_id: Option<MaybeNumber>,
    /// Why there is no baseline (`ci baseline`'s `reason` output), shown in one line.
    #[arg(
        id = "baseline-reason",
        long = "baseline-reason",
        env = "DRAINWATCH_BASELINE_REASON"
    )]
    pub reason: Option<String>,
}

/// `drainwatch ci baseline`: where the baseline comes from and where it goes.
#[derive(Debug, Clone, Args)]
pub struct CiBaselineArgs {
    /// Where to unzip the downloaded baseline (created; must not hold anything).
    #[arg(long)]
    pub out: PathBuf,
    /// The action's `baseline` input: empty or `auto` (the base branch's newest successful
    /// run, on a pull request), a directory (used as is), or an artifact name (looked up on the
    /// base branch, or the default branch outside a pull request).
    #[arg(long, env = "DRAINWATCH_BASELINE", default_value = "")]
    pub baseline: String,
    /// This job and matrix leg's artifact name (`ci key`'s `artifact-name`).
    #[arg(long, env = "DRAINWATCH_ARTIFACT_NAME", default_value = "")]
    pub artifact_name: String,
    /// `owner/repo/.github/workflows/FILE@REF`: names the workflow; unset, it is looked up
    /// from GITHUB_RUN_ID.
    #[arg(long, env = "GITHUB_WORKFLOW_REF")]
    pub workflow_ref: Option<String>,
    /// The pull request's base branch; unset, read from the event payload.
    #[arg(long, env = "GITHUB_BASE_REF")]
    pub base_ref: Option<String>,
}

/// `drainwatch ci key`: the inputs of a use's identity.
#[derive(Debug, Clone, Args)]
pub struct CiKeyArgs {
    /// The job id.
    #[arg(long, env = "GITHUB_JOB")]
    pub job: Option<String>,
    /// The matrix leg: `${{ toJSON(matrix) }}` (empty, `null` or `{}` without a matrix).
    #[arg(long, env = "DRAINWATCH_MATRIX")]
    pub matrix: Option<String>,
    /// An explicit key; wins over the derived one.
    #[arg(long, env = "DRAINWATCH_KEY")]
    pub key: Option<String>,
    /// An explicit artifact name; wins over `drainwatch-<key>`.
    #[arg(long, env = "DRAINWATCH_ARTIFACT_NAME")]
    pub artifact_name: Option<String>,
}

/// The CI steps.
#[derive(Debug, Clone, Subcommand)]
pub enum CiCommand {
    /// Name this use of the action: `key` (job id and matrix values, sanitized, bounded, with
    /// a hash that keeps matrix legs apart) and `artifact-name` (`drainwatch-<key>`), appended
    /// to $GITHUB_OUTPUT and printed.
    Key(CiKeyArgs),
    /// Judge an existing run directory against a policy again: rewrites verdict.json,
    /// junit.xml and summary.md; exit 0 when every threshold holds, 1 when one is missed.
    Evaluate {
        /// The policy (a TOML file, or builtin:smoke).
        #[arg(long)]
        policy: String,
        /// The run directory.
        #[arg(long)]
        dir: PathBuf,
        /// The baseline run directory the policy's baseline thresholds are judged against
        /// (`METRIC <= baseline`, `no-regression`); empty: no baseline.
        #[arg(long, env = "DRAINWATCH_BASELINE_DIR", value_name = "DIR")]
        baseline: Option<String>,
        /// Without a baseline: why there is none, which each baseline threshold then says.
        #[arg(long, env = "DRAINWATCH_BASELINE_REASON", value_name = "TEXT")]
        baseline_reason: Option<String>,
    },
    /// Find and download the baseline: the newest successful push run of this workflow on the
    /// pull request's base branch, its artifact of this job and matrix leg, unzipped into
    /// --out. Writes the outputs baseline (found, missing or given), dir, reason, run-url and
    /// run-id; every miss is a warning naming why, never a failure.
    Baseline(CiBaselineArgs),
    /// Compare the run with the baseline (DRAINWATCH_BASELINE_DIR) and write compare.json and
    /// compare.md into the run directory; nothing without a baseline.
    Compare(CiRunDir),
    /// Write the summary to $GITHUB_STEP_SUMMARY (appending), or to stdout when unset.
    Summary(CiRunDir),
    /// Create or update this use's summary comment on the pull request ($GITHUB_EVENT_PATH,
    /// $GITHUB_REPOSITORY, $GITHUB_TOKEN, $GITHUB_API_URL, $GITHUB_GRAPHQL_URL), found only
    /// among the token's own comments. 403 and 404 warn and exit 0.
    Comment {
        /// The run.
        #[command(flatten)]
        run: CiRunDir,
        /// Whether to comment: auto (on pull request events), true or false.
        #[arg(long, env = "DRAINWATCH_COMMENT", value_parser = parse_comment_when, default_value = "auto")]
        when: CommentWhen,
        /// The pull request number, when the event is not a pull request (workflow_run).
        #[arg(long, env = "DRAINWATCH_PR", value_parser = parse_maybe_number, default_value = "")]
        pr: MaybeNumber,
        /// Print the comment's body (its marker, then the Markdown) to stdout and post nothing:
        /// what the pull request would show, without a token or a pull request.
        #[arg(long)]
        print: bool,
    },
    /// Write the step outputs verdict (pass, fail or error), error-step (the step that failed
    /// when the verdict is error), report-dir and junit to $GITHUB_OUTPUT, or to stdout when
    /// unset.
    Outputs(CiRunDir),
}
