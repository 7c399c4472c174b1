//! `drainwatch ci baseline` (find and download the baseline) and `drainwatch ci compare` (the
//! run against it: compare.json and compare.md in the run directory), and the comparison
//! section the summary and the comment append. A baseline that cannot be found is a warning
//! naming why, never a failure of the run: the policy decides what a missing baseline means.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use octocrab::Octocrab;

use drainwatch::cli::{CiBaselineArgs, CiRunDir};
use drainwatch::evidence::markdown::compare::{render_compare, render_no_baseline};
use drainwatch::evidence::stats::report::{BaseRun, CompareReport};
use drainwatch::evidence::stats::runs::{Thresholds, compare_runs};
use drainwatch::gate::runs::load_run;
use drainwatch::github::baseline::{self, Found, Lookup, Workflow};
use drainwatch::github::env::{self, GithubEnv};
use drainwatch::github::{comment, event};

use super::runtime;
use drainwatch::console;

/// compare.json and compare.md in the run directory (and so in the uploaded artifact).
pub const COMPARE_JSON: &str = "compare.json";
/// See [`COMPARE_JSON`].
pub const COMPARE_MD: &str = "compare.md";

/// What the baseline step came to.
enum Outcome {
    /// A directory given as is.
    Given(PathBuf),
    /// Downloaded.
    Found(Found, PathBuf),
    /// None; the reason, and whether it deserves a warning (not on a push: that run is the
    /// baseline of later pull requests, nothing is missing).
    Missing(String, bool),
}

fn missing(reason: impl Into<String>) -> Outcome {
    Outcome::Missing(reason.into(), true)
}

fn nonempty(s: Option<&str>) -> Option<&str> {
    s.map(str::trim).filter(|s| !s.is_empty())
}

fn is_pull_request(gh: &GithubEnv, payload: Option<&str>) -> bool {
    match gh.event_name.as_deref() {
        Some(e) => e.starts_with("pull_request"),
        None => payload.is_some_and(|p| event::branches(p).base.is_some()),
    }
}

fn lookup(a: &CiBaselineArgs, gh: &GithubEnv) -> Result<Lookup, Outcome> {
    let value = a.baseline.trim();
    let explicit = !value.is_empty() && value != "auto";
    if explicit && Path::new(value).is_dir() {
        return Err(Outcome::Given(PathBuf::from(value)));
    }
    // Artifact names cannot hold a slash (actions/upload-artifact refuses them): a path.
    if explicit && (value.contains('/') || value.starts_with('.')) {
        return Err(missing(format!(
            "the baseline input {value:?} is neither a directory nor an artifact name"
        )));
    }
    let artifact = if explicit {
        value.to_string()
    } else {
        match nonempty(Some(&a.artifact_name)) {
            Some(n) => n.to_string(),
            None => {
                return Err(missing(
                    "no artifact name to look for (`drainwatch ci key` gives it)",
                ));
            }
        }
    };
    let payload = gh
        .event_path
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok());
    let pr = is_pull_request(gh, payload.as_deref());
    if !pr && !explicit {
        return Err(Outcome::Missing(
            "not a pull request: nothing to compare with (on the default branch this run's artifact is the baseline of later pull requests)".into(),
            false,
        ));
    }
    let branches = payload.as_deref().map(event::branches).unwrap_or_default();
    let branch = if pr {
        nonempty(a.base_ref.as_deref())
            .map(str::to_string)
            .or(branches.base)
    } else {
        branches.default
    };
    let Some(branch) = branch else {
        return Err(missing(
            "the event names no base branch to take the baseline from",
        ));
    };
    let Some(full) = nonempty(gh.repository.as_deref()) else {
        return Err(missing(
            "GITHUB_REPOSITORY is unset: no repository to look in",
        ));
    };
    let (owner, repo) = event::owner_repo(full).map_err(|e| missing(e.to_string()))?;
    let workflow = match a.workflow_ref.as_deref().and_then(baseline::workflow_file) {
        Some(f) => Workflow::File(f),
        None => match gh.run_id.as_deref().and_then(|r| r.parse().ok()) {
            Some(id) => Workflow::OfRun(id),
            None => {
                return Err(missing(
                    "neither GITHUB_WORKFLOW_REF nor GITHUB_RUN_ID names this workflow",
                ));
            }
        },
    };
    Ok(Lookup {
        owner,
        repo,
        branch,
        workflow,
        artifact,
    })
}

fn download(l: &Lookup, gh: &GithubEnv, out: &Path) -> Outcome {
    let Some(token) = &gh.token else {
        return missing("no GITHUB_TOKEN to read the base branch's runs with");
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return missing(format!("{e:#}")),
    };
    let existed = out.exists();
    // Clients are built inside the runtime: octocrab's buffer needs its reactor.
    let got = rt.block_on(async {
        let api = comment::client(&gh.api_url, token).map_err(|e| e.to_string())?;
        // The artifact storage is not GitHub's API: this client has no token to send there.
        let storage = Octocrab::builder()
            .set_connect_timeout(Some(Duration::from_secs(10)))
            .set_read_timeout(Some(Duration::from_secs(120)))
            .build()
            .map_err(|e| format!("failed to set up the download client: {e}"))?;
        baseline::fetch(&api, &storage, l, out)
            .await
            .map_err(|m| m.to_string())
    });
    let got = got.and_then(|f| match load_run(out) {
        Ok(_) => Ok(f),
        Err(e) => Err(format!(
            "the baseline artifact of {} holds no drainwatch run: {e}",
            f.run_url
        )),
    });
    match got {
        Ok(f) => Outcome::Found(f, out.to_path_buf()),
        Err(reason) => {
            // Nothing half-unzipped is left for a later step to read as a baseline.
            if !existed {
                let _ = std::fs::remove_dir_all(out);
            }
            missing(reason)
        }
    }
}

pub fn baseline_step(a: &CiBaselineArgs, gh: &GithubEnv) -> Result<u8> {
    let outcome = match lookup(a, gh) {
        Ok(l) => download(&l, gh, &a.out),
        Err(o) => o,
    };
    let abs = |p: &Path| {
        std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string()
    };
    let (state, dir, reason, url, id) = match &outcome {
        Outcome::Given(d) => ("given", abs(d), String::new(), String::new(), String::new()),
        Outcome::Found(f, d) => (
            "found",
            abs(d),
            String::new(),
            f.run_url.clone(),
            f.run_id.to_string(),
        ),
        Outcome::Missing(r, _) => (
            "missing",
            String::new(),
            r.clone(),
            String::new(),
            String::new(),
        ),
    };
    match &outcome {
        Outcome::Given(_) => console::result!("baseline: given, {dir}"),
        Outcome::Found(f, _) => console::result!(
            "baseline: found, artifact {} of {} ({} file(s)) in {dir}",
            f.artifact_id,
            f.run_url,
            f.files
        ),
        Outcome::Missing(r, true) => {
            println!(
                "{}",
                env::warning("drainwatch baseline", &format!("no baseline: {r}"))
            )
        }
        Outcome::Missing(r, false) => console::result!("baseline: none: {r}"),
    }
    let text = [
        env::output_entry("baseline", state),
        env::output_entry("dir", &dir),
        env::output_entry("reason", &reason),
        env::output_entry("run-url", &url),
        env::output_entry("run-id", &id),
    ]
    .concat();
    match &gh.output {
        Some(path) => env::append(path, &text)
            .with_context(|| format!("failed to write the step outputs {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(0)
}

/// The run compared with its baseline, when one is given.
fn report(run: &CiRunDir) -> Option<Result<CompareReport>> {
    let b = &run.baseline;
    if b.dir.as_os_str().is_empty() {
        return None;
    }
    Some((|| {
        let base = load_run(&b.dir).context("the baseline")?;
        let new = load_run(&run.dir).context("this run")?;
        let base_run = base_run(run);
        let t = Thresholds::default();
        Ok(CompareReport::new(
            b.dir.display().to_string(),
            run.dir.display().to_string(),
            base_run,
            t,
            compare_runs(&base, &new, &t),
        ))
    })())
}

/// The CI run the baseline was fetched from, when `ci baseline` found one.
pub fn base_run(run: &CiRunDir) -> Option<BaseRun> {
    let b = &run.baseline;
    match (nonempty(b.run_url.as_deref()), b.run_id.and_then(|i| i.0)) {
        (Some(url), Some(id)) if id > 0 => Some(BaseRun {
            id: id as u64,
            url: url.to_string(),
        }),
        _ => None,
    }
}

/// The comparison section of the summary and the comment, within `max_chars`.
pub fn section(run: &CiRunDir, max_chars: usize) -> String {
    match report(run) {
        Some(Ok(r)) => render_compare(&r, max_chars),
        Some(Err(e)) => render_no_baseline(&format!("{e:#}")),
        None => render_no_baseline(
            nonempty(run.baseline.reason.as_deref())
                .unwrap_or("none was given (DRAINWATCH_BASELINE_DIR is empty)"),
        ),
    }
}

/// `ci compare`: compare.json and compare.md into the run directory.
pub fn compare_step(run: &CiRunDir) -> Result<u8> {
    match report(run) {
        None => console::result!("compare: {}", section(run, usize::MAX).trim_end()),
        Some(Err(e)) => console::result!("compare: no comparison: {e:#}"),
        Some(Ok(r)) => {
            super::compare::write_json(&run.dir.join(COMPARE_JSON), &r)?;
            let md = render_compare(&r, drainwatch::evidence::markdown::STEP_SUMMARY_MAX_CHARS);
            std::fs::write(run.dir.join(COMPARE_MD), md).with_context(|| {
                format!("failed to write {}", run.dir.join(COMPARE_MD).display())
            })?;
            console::result!(
                "compare: {} arm(s) compared, {}",
                r.compared,
                if r.regressed {
                    "regressed"
                } else {
                    "no regression"
                }
            );
        }
    }
    Ok(0)
}
