//! `drainwatch ci …`: the GitHub Action's logic, one subcommand per step, usable from any CI.
//! Each reads the run directory that `drainwatch run --policy` wrote; none of them fails a job
//! because GitHub refused a comment.

use std::path::Path;

use anyhow::{Context, Result};

use drainwatch::cli::{CiArgs, CiCommand, CiKeyArgs, CiRunDir, CommentWhen, MaybeNumber};
use drainwatch::evidence::markdown::{self, FailedStep, Links, NoVerdict};
use drainwatch::evidence::verdict::{Decision, Verdict};
use drainwatch::gate::{self, load};
use drainwatch::github::comment::{self, Ignored, Upserted};
use drainwatch::github::env::{self, GithubEnv};
use drainwatch::github::viewer::{self, Viewer};
use drainwatch::github::{event, key, steps};

use super::ci_baseline::{base_run, baseline_step, compare_step, section};
use super::{EXIT_POLICY, runtime};
use drainwatch::console;

pub fn cmd_ci(args: CiArgs) -> Result<u8> {
    let gh = GithubEnv::from_process();
    match args.command {
        CiCommand::Evaluate {
            policy,
            dir,
            baseline,
            baseline_reason,
        } => evaluate(
            &policy,
            &dir,
            baseline.as_deref(),
            baseline_reason.as_deref(),
        ),
        CiCommand::Baseline(args) => baseline_step(&args, &gh),
        CiCommand::Compare(run) => compare_step(&run),
        CiCommand::Summary(run) => summary(&run, &gh),
        CiCommand::Outputs(run) => outputs(&run, &gh),
        CiCommand::Key(args) => key_step(&args, &gh),
        CiCommand::Comment {
            run, print: true, ..
        } => {
            print!("{}", comment_body(&run, &gh));
            Ok(0)
        }
        CiCommand::Comment { run, when, pr, .. } => {
            let pr =
                pr.0.map(u64::try_from)
                    .transpose()
                    .context("--pr must be a positive number")?;
            comment_step(&run, &gh, when, pr)
        }
    }
}

fn evaluate(spec: &str, dir: &Path, baseline: Option<&str>, why_none: Option<&str>) -> Result<u8> {
    let policy = gate::load_policy(spec)?;
    let baseline = gate::baseline::load(baseline)?;
    let judged = gate::judge_against(&policy, spec, dir, baseline.as_ref(), why_none)?;
    for l in judged.verdict.failing_lines() {
        console::result!("{l}");
    }
    for m in judged.verdict.not_judged_lines() {
        console::result!("  not judged: {m}");
    }
    console::result!("verdict: {}", judged.verdict.verdict.as_str());
    Ok(match judged.verdict.verdict {
        Decision::Pass => 0,
        Decision::Fail => EXIT_POLICY,
    })
}

/// Appends `text` to $GITHUB_OUTPUT, or prints it when unset (any other CI).
fn write_outputs(gh: &GithubEnv, text: &str) -> Result<()> {
    match &gh.output {
        Some(path) => env::append(path, text)
            .with_context(|| format!("failed to write the step outputs {}", path.display())),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

fn key_step(args: &CiKeyArgs, gh: &GithubEnv) -> Result<u8> {
    let id = key::identity(
        args.job.as_deref(),
        args.matrix.as_deref(),
        args.key.as_deref(),
        args.artifact_name.as_deref(),
    )?;
    let text = [
        env::output_entry("key", &id.key),
        env::output_entry("artifact-name", &id.artifact_name),
    ]
    .concat();
    // Printed always, so the log says which leg this is; written for the steps that follow.
    print!("{text}");
    if gh.output.is_some() {
        write_outputs(gh, &text)?;
    }
    Ok(0)
}

/// This use's key: DRAINWATCH_KEY (`ci key`'s output), else the job id, else `drainwatch`.
fn use_key(run: &CiRunDir, gh: &GithubEnv) -> String {
    let given = run.key.as_deref().map(str::trim).filter(|k| !k.is_empty());
    key::explicit(given.or(gh.job.as_deref()).unwrap_or(key::DEFAULT_JOB))
}

fn links(run: &CiRunDir, gh: &GithubEnv) -> Links {
    Links {
        artifact_url: run.artifact_url.clone().filter(|s| !s.is_empty()),
        artifact_name: run.artifact_name.clone().filter(|s| !s.is_empty()),
        run_url: gh.run_url(),
        relative_files: false,
        key: Some(use_key(run, gh)),
        hide_server: false,
        baseline_run: base_run(run),
    }
}

/// What the run reached: a verdict, or why there is none.
enum Reached {
    Verdict(Box<Verdict>),
    Nothing(NoVerdict),
}

/// The verdict of the run in `run.dir`, unless the action's run step recorded no exit code
/// (it never finished: whatever the directory holds is not this run's verdict).
fn reached(run: &CiRunDir) -> Reached {
    let unfinished = run.exit_code == Some(MaybeNumber(None));
    if !unfinished && let Some(v) = gate::read_verdict(&run.dir) {
        return Reached::Verdict(Box::new(v));
    }
    let parsed = steps::parse(run.steps.as_deref().unwrap_or_default());
    let failed = match &parsed {
        Ok(all) => steps::first_failed(all).map(|s| s.id.clone()),
        Err(e) => {
            console::warning!("warning: {e}; blaming the run step");
            None
        }
    };
    // The run step records drainwatch's exit code instead of failing, so when no step failed
    // the missing verdict is the run's.
    let d = steps::describe(failed.as_deref().unwrap_or(steps::RUN_STEP));
    Reached::Nothing(NoVerdict {
        exit_code: run.exit_code.and_then(|c| c.0),
        step: Some(FailedStep {
            id: d.id,
            name: d.name,
            hint: d.hint,
        }),
    })
}

/// The summary Markdown of the run in `run.dir`, or the no-verdict note naming the failed step.
fn render(run: &CiRunDir, gh: &GithubEnv, max_chars: usize, hide_server: bool) -> String {
    let links = Links {
        hide_server,
        ..links(run, gh)
    };
    match reached(run) {
        Reached::Verdict(v) => {
            let ev = load::verdict_evidence(&run.dir, &v);
            // The comparison gets at most a quarter of the room; the summary the rest.
            let compared = section(run, max_chars / 4);
            let rest = max_chars.saturating_sub(compared.chars().count() + 1);
            format!("{}\n{compared}", markdown::render(&v, &ev, &links, rest))
        }
        Reached::Nothing(why) => markdown::render_tool_failure(&why, &links),
    }
}

fn summary(run: &CiRunDir, gh: &GithubEnv) -> Result<u8> {
    let md = render(run, gh, markdown::STEP_SUMMARY_MAX_CHARS, false);
    match &gh.step_summary {
        Some(path) => {
            env::append(path, &format!("{md}\n"))
                .with_context(|| format!("failed to write the job summary {}", path.display()))?;
            console::result!("job summary written to {}", path.display());
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
    let (verdict, error_step) = match reached(run) {
        Reached::Verdict(v) => (v.verdict.as_str(), String::new()),
        Reached::Nothing(why) => ("error", why.step.map(|s| s.id).unwrap_or_default()),
    };
    let junit = dir.join(gate::JUNIT_FILE);
    let junit = if verdict != "error" && !dir.as_os_str().is_empty() && junit.is_file() {
        junit.display().to_string()
    } else {
        String::new()
    };
    let text = [
        env::output_entry("verdict", verdict),
        env::output_entry("error-step", &error_step),
        env::output_entry("report-dir", &dir.display().to_string()),
        env::output_entry("junit", &junit),
    ]
    .concat();
    write_outputs(gh, &text)?;
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
    number: Option<u64>,
) -> Result<u8> {
    if when == CommentWhen::False {
        console::note!("pr comment: disabled");
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
            console::note!("pr comment: not a pull request event, nothing to do");
        }
        return Ok(0);
    };
    let Some(token) = &gh.token else {
        warn("no GITHUB_TOKEN: the summary is in the job summary only");
        return Ok(0);
    };
    let key = use_key(run, gh);
    let md = comment_markdown(run, gh);
    let rt = runtime()?;
    // Whose token this is decides which comment is ours. Unknown, nothing is edited and
    // nothing is created: an edit could land on someone else's comment, and a new comment on
    // every run (none could be recognised as ours the next time) would bury the pull request.
    let login = match rt.block_on(viewer::viewer(&gh.graphql_url(), token))? {
        Viewer::Known(login) => login,
        Viewer::Unknown(why) => {
            warn(&format!(
                "{why}: the token's identity is unknown, so no comment is edited or created. The verdict is unchanged and the job summary has the full report."
            ));
            return Ok(0);
        }
    };
    let done = rt.block_on(async {
        let client = comment::client(&gh.api_url, token)?;
        comment::upsert(&client, &pr, &login, &key, &md).await
    })?;
    report_comment(gh, &pr, &login, done)
}

/// The comment's Markdown: the summary in a comment's room, the server's names hidden.
fn comment_markdown(run: &CiRunDir, gh: &GithubEnv) -> String {
    render(run, gh, markdown::COMMENT_MAX_CHARS - 100, true)
}

/// The body `ci comment` posts: the marker, then the Markdown.
fn comment_body(run: &CiRunDir, gh: &GithubEnv) -> String {
    comment::body(&use_key(run, gh), &comment_markdown(run, gh))
}

/// Says what the upsert did, warns about comments left alone, and writes `comment-url`.
fn report_comment(
    gh: &GithubEnv,
    pr: &event::PullRequest,
    login: &str,
    done: Upserted,
) -> Result<u8> {
    let (url, ignored) = match done {
        Upserted::Created { id, url, ignored } => {
            console::result!(
                "pr comment: created {id} on #{} as {login} {}",
                pr.number,
                url.as_deref().unwrap_or_default()
            );
            (url, ignored)
        }
        Upserted::Updated {
            id,
            url,
            pages,
            ignored,
        } => {
            console::result!(
                "pr comment: updated {id} on #{} as {login} (found on page {pages}) {}",
                pr.number,
                url.as_deref().unwrap_or_default()
            );
            (url, ignored)
        }
        Upserted::Denied { status, message } => {
            let why = if pr.from_fork {
                "pull requests from forks get a read-only token"
            } else {
                "the job needs `permissions: pull-requests: write`"
            };
            warn(&format!(
                "github answered {status} ({message}) to the PR comment: {why}. The verdict is unchanged and the job summary has the full report."
            ));
            return Ok(0);
        }
    };
    if !ignored.is_empty() {
        warn(&ignored_message(login, &ignored));
    }
    if let Some(url) = url.filter(|u| !u.is_empty()) {
        write_outputs(gh, &env::output_entry("comment-url", &url))?;
    }
    Ok(0)
}

fn ignored_message(login: &str, ignored: &[Ignored]) -> String {
    let list: Vec<String> = ignored
        .iter()
        .map(|c| {
            format!(
                "{} by {}",
                c.url.clone().unwrap_or_else(|| c.id.to_string()),
                c.author.as_deref().unwrap_or("a deleted account")
            )
        })
        .collect();
    format!(
        "ignored {} comment(s) carrying this key's marker but not written by {login}: {}. Only the token's own comment is edited.",
        ignored.len(),
        list.join(", ")
    )
}
