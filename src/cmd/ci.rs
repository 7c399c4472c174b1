//! `drainwatch ci …`: the GitHub Action's logic, one subcommand per step, usable from any CI.
//! Each reads the run directory that `drainwatch run --policy` wrote; none of them fails a job
//! because GitHub refused a comment.

use std::path::Path;

use anyhow::{Context, Result};

use drainwatch::cli::{CiArgs, CiCommand, CiRunDir, CommentWhen};
use drainwatch::evidence::markdown::{self, Links};
use drainwatch::evidence::verdict::Decision;
use drainwatch::gate::{self, load};
use drainwatch::github::comment::{self, Upserted};
use drainwatch::github::env::{self, GithubEnv};
use drainwatch::github::event;

use super::{EXIT_POLICY, runtime};

pub fn cmd_ci(args: CiArgs) -> Result<u8> {
    let gh = GithubEnv::from_process();
    match args.command {
        CiCommand::Evaluate { policy, dir } => evaluate(&policy, &dir),
        CiCommand::Summary(run) => summary(&run, &gh),
        CiCommand::Outputs(run) => outputs(&run, &gh),
        CiCommand::Comment { run, when, key, pr } => {
            let pr =
                pr.0.map(u64::try_from)
                    .transpose()
                    .context("--pr must be a positive number")?;
            comment_step(&run, &gh, when, &key, pr)
        }
    }
}

fn evaluate(spec: &str, dir: &Path) -> Result<u8> {
    let policy = gate::load_policy(spec)?;
    let judged = gate::judge(&policy, spec, dir)?;
    for m in judged.verdict.missed() {
        eprintln!("  missed: {m}");
    }
    eprintln!("verdict: {}", judged.verdict.verdict.as_str());
    Ok(match judged.verdict.verdict {
        Decision::Pass => 0,
        Decision::Fail => EXIT_POLICY,
    })
}

fn links(run: &CiRunDir, gh: &GithubEnv) -> Links {
    Links {
        artifact_url: run.artifact_url.clone().filter(|s| !s.is_empty()),
        artifact_name: run.artifact_name.clone().filter(|s| !s.is_empty()),
        run_url: gh.run_url(),
        relative_files: false,
    }
}

/// The summary Markdown of the run in `run.dir`, or the tool-failure note when it has none.
fn render(run: &CiRunDir, gh: &GithubEnv, max_chars: usize) -> String {
    let links = links(run, gh);
    match gate::read_verdict(&run.dir) {
        Some(v) => {
            let ev = load::verdict_evidence(&run.dir, &v);
            markdown::render(&v, &ev, &links, max_chars)
        }
        None => markdown::render_tool_failure(run.exit_code.0, &links),
    }
}

fn summary(run: &CiRunDir, gh: &GithubEnv) -> Result<u8> {
    let md = render(run, gh, markdown::STEP_SUMMARY_MAX_CHARS);
    match &gh.step_summary {
        Some(path) => {
            env::append(path, &format!("{md}\n"))
                .with_context(|| format!("failed to write the job summary {}", path.display()))?;
            eprintln!("job summary written to {}", path.display());
        }
        None => print!("{md}"),
    }
    Ok(0)
}

fn outputs(run: &CiRunDir, gh: &GithubEnv) -> Result<u8> {
    let dir = if run.dir.as_os_str().is_empty() {
        run.dir.clone()
    } else {
        std::path::absolute(&run.dir)
            .with_context(|| format!("failed to resolve {}", run.dir.display()))?
    };
    let verdict = gate::read_verdict(&dir).map_or("error", |v| v.verdict.as_str());
    let junit = dir.join(gate::JUNIT_FILE);
    let junit = if !dir.as_os_str().is_empty() && junit.is_file() {
        junit.display().to_string()
    } else {
        String::new()
    };
    let text = [
        env::output_entry("verdict", verdict),
        env::output_entry("report-dir", &dir.display().to_string()),
        env::output_entry("junit", &junit),
    ]
    .concat();
    match &gh.output {
        Some(path) => env::append(path, &text)
            .with_context(|| format!("failed to write the step outputs {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(0)
}

fn warn(message: &str) {
    // The workflow command is the annotation on GitHub; elsewhere it is a readable line.
    println!("{}", env::warning("drainwatch PR comment", message));
}

fn comment_step(
    run: &CiRunDir,
    gh: &GithubEnv,
    when: CommentWhen,
    key: &str,
    number: Option<u64>,
) -> Result<u8> {
    if when == CommentWhen::False {
        eprintln!("pr comment: disabled");
        return Ok(0);
    }
    let payload = match &gh.event_path {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .with_context(|| format!("failed to read the event payload {}", p.display()))?,
        ),
        None => None,
    };
    let pr = event::pull_request(payload.as_deref(), gh.repository.as_deref(), number)?;
    let Some(pr) = pr else {
        if when == CommentWhen::True {
            warn("comment is true, but this event is not a pull request: no comment");
        } else {
            eprintln!("pr comment: not a pull request event, nothing to do");
        }
        return Ok(0);
    };
    let Some(token) = &gh.token else {
        warn("no GITHUB_TOKEN: the summary is in the job summary only");
        return Ok(0);
    };
    let md = render(run, gh, markdown::COMMENT_MAX_CHARS - 100);
    let rt = runtime()?;
    let done = rt.block_on(async {
        let client = comment::client(&gh.api_url, token)?;
        comment::upsert(&client, &pr, key, &md).await
    })?;
    match done {
        Upserted::Created { id, url } => {
            eprintln!(
                "pr comment: created {id} on #{} {}",
                pr.number,
                url.unwrap_or_default()
            );
        }
        Upserted::Updated { id, url, pages } => eprintln!(
            "pr comment: updated {id} on #{} (found on page {pages}) {}",
            pr.number,
            url.unwrap_or_default()
        ),
        Upserted::Denied { status, message } => {
            let why = if pr.from_fork {
                "pull requests from forks get a read-only token"
            } else {
                "the job needs `permissions: pull-requests: write`"
            };
            warn(&format!(
                "github answered {status} ({message}) to the PR comment: {why}. The verdict is unchanged and the job summary has the full report."
            ));
        }
    }
    Ok(0)
}
