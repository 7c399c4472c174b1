//! The baseline of a pull request's run, from GitHub: the newest successful `push` run of the
//! same workflow on the base branch, its artifact for this job and matrix leg (the name
//! `drainwatch ci key` derives), downloaded and unzipped. GitHub's REST API through octocrab:
//!
//! 1. `GET /repos/{o}/{r}/actions/runs/{run_id}` → `workflow_id`, when GITHUB_WORKFLOW_REF
//!    does not name the workflow's file;
//! 2. `GET /repos/{o}/{r}/actions/workflows/{file or id}/runs?branch=B&status=success&event=push`;
//! 3. `GET /repos/{o}/{r}/actions/runs/{id}/artifacts?name=NAME`, skipping `expired: true`;
//! 4. `GET /repos/{o}/{r}/actions/artifacts/{id}/zip` answers 302 with the storage URL, which is
//!    fetched by a second client that has no token: the storage is not GitHub's API, and the
//!    token must not travel there (octocrab's own redirect following is off in this build).
//!
//! Every way of finding nothing is a [`Missing`] that names why: a missing baseline is never an
//! error of the run (the policy says what it means).

use std::path::Path;

use http_body_util::BodyExt;
use octocrab::Octocrab;
use serde::Deserialize;

use super::unzip::UnzipError;

/// Which workflow the runs are listed for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workflow {
    /// Its file name (`gate.yml`), from GITHUB_WORKFLOW_REF.
    File(String),
    /// Not known yet: looked up from this run (GITHUB_RUN_ID).
    OfRun(u64),
}

/// The workflow file of GITHUB_WORKFLOW_REF (`owner/repo/.github/workflows/gate.yml@refs/…`).
pub fn workflow_file(workflow_ref: &str) -> Option<String> {
    let path = workflow_ref
        .split_once('@')
        .map_or(workflow_ref, |(p, _)| p);
    let file = path.rsplit('/').next()?;
    (file.ends_with(".yml") || file.ends_with(".yaml")).then(|| file.to_string())
}

/// What to look for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// Repository owner.
    pub owner: String,
    /// Repository name.
    pub repo: String,
    /// The branch whose runs are the baseline (the pull request's base).
    pub branch: String,
    /// The workflow.
    pub workflow: Workflow,
    /// The artifact's name.
    pub artifact: String,
}

/// The baseline, downloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The base workflow run's id.
    pub run_id: u64,
    /// The base workflow run's page.
    pub run_url: String,
    /// The artifact's id.
    pub artifact_id: u64,
    /// Files unzipped.
    pub files: usize,
}

/// Why there is no baseline: every case is named, none fails the run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Missing {
    /// No successful push run of the workflow on the branch.
    #[error("no successful push run of workflow {workflow} on branch {branch}")]
    NoRun {
        /// The workflow (file or id).
        workflow: String,
        /// The branch.
        branch: String,
    },
    /// The base run has no artifact of this name.
    #[error("the base run {run_url} has no artifact named {name}")]
    NoArtifact {
        /// The run.
        run_url: String,
        /// The name looked for.
        name: String,
    },
    /// Its artifact expired.
    #[error(
        "the artifact {name} of the base run {run_url} has expired (artifacts are kept 90 days by default)"
    )]
    Expired {
        /// The run.
        run_url: String,
        /// The artifact.
        name: String,
    },
    /// GitHub refused the token.
    #[error(
        "github answered {status} to {what} ({message}): the job needs `permissions: actions: read`"
    )]
    Forbidden {
        /// The call.
        what: &'static str,
        /// 401, 403 (or 404 for a repository the token cannot see).
        status: u16,
        /// GitHub's message.
        message: String,
    },
    /// An archive entry would land outside the directory: nothing is unzipped.
    #[error(
        "the artifact holds an entry that escapes the directory ({0}): refused, nothing unzipped"
    )]
    Unsafe(String),
    /// Anything else: the network, an unexpected answer, a broken zip, the disk.
    #[error("failed to {what}: {detail}")]
    Failed {
        /// What was being done.
        what: &'static str,
        /// Why.
        detail: String,
    },
}

fn failed(what: &'static str, detail: impl ToString) -> Missing {
    Missing::Failed {
        what,
        detail: detail.to_string(),
    }
}

fn from_octocrab(what: &'static str, e: octocrab::Error) -> Missing {
    if let octocrab::Error::GitHub { source, .. } = &e {
        let status = source.status_code.as_u16();
        if matches!(status, 401 | 403) {
            return Missing::Forbidden {
                what,
                status,
                message: source.message.clone(),
            };
        }
        return failed(
            what,
            format!("github answered {status}: {}", source.message),
        );
    }
    failed(what, e)
}

#[derive(Deserialize)]
struct Run {
    id: u64,
    html_url: String,
    #[serde(default)]
    workflow_id: Option<u64>,
}

#[derive(Deserialize)]
struct Runs {
    workflow_runs: Vec<Run>,
}

#[derive(Deserialize)]
struct Artifact {
    id: u64,
    name: String,
    expired: bool,
}

#[derive(Deserialize)]
struct Artifacts {
    artifacts: Vec<Artifact>,
}

/// Finds the baseline of `l` and unzips it into `dir` (created; it must not hold anything).
/// `api` carries the token; `storage` must not.
pub async fn fetch(
    api: &Octocrab,
    storage: &Octocrab,
    l: &Lookup,
    dir: &Path,
) -> Result<Found, Missing> {
    let repo = format!("/repos/{}/{}", l.owner, l.repo);
    let workflow = match &l.workflow {
        Workflow::File(f) => f.clone(),
        Workflow::OfRun(id) => {
            let run: Run = api
                .get(format!("{repo}/actions/runs/{id}"), None::<&()>)
                .await
                .map_err(|e| from_octocrab("read this workflow run", e))?;
            match run.workflow_id {
                Some(w) => w.to_string(),
                None => return Err(failed("read this workflow run", "it names no workflow_id")),
            }
        }
    };
    let what = "list the base branch's workflow runs";
    let runs: Runs = api
        .get(
            format!("{repo}/actions/workflows/{workflow}/runs"),
            Some(&[
                ("branch", l.branch.as_str()),
                ("status", "success"),
                ("event", "push"),
                ("exclude_pull_requests", "true"),
                ("per_page", "1"),
            ]),
        )
        .await
        .map_err(|e| match from_octocrab(what, e) {
            Missing::Failed { detail, .. } if detail.starts_with("github answered 404") => {
                Missing::NoRun {
                    workflow: workflow.clone(),
                    branch: l.branch.clone(),
                }
            }
            m => m,
        })?;
    let Some(run) = runs.workflow_runs.into_iter().next() else {
        return Err(Missing::NoRun {
            workflow,
            branch: l.branch.clone(),
        });
    };
    let arts: Artifacts = api
        .get(
            format!("{repo}/actions/runs/{}/artifacts", run.id),
            Some(&[("name", l.artifact.as_str()), ("per_page", "100")]),
        )
        .await
        .map_err(|e| from_octocrab("list the base run's artifacts", e))?;
    let named: Vec<&Artifact> = arts
        .artifacts
        .iter()
        .filter(|a| a.name == l.artifact)
        .collect();
    let Some(art) = named.iter().find(|a| !a.expired) else {
        return Err(if named.is_empty() {
            Missing::NoArtifact {
                run_url: run.html_url,
                name: l.artifact.clone(),
            }
        } else {
            Missing::Expired {
                run_url: run.html_url,
                name: l.artifact.clone(),
            }
        });
    };
    let zip = download(api, storage, &repo, art.id)
        .await
        .map_err(|m| match m {
            // 410 Gone: expired between the listing and the download.
            Missing::Failed { detail, .. } if detail == "410" => Missing::Expired {
                run_url: run.html_url.clone(),
                name: l.artifact.clone(),
            },
            m => m,
        })?;
    let files = super::unzip::unzip(&zip, dir).map_err(|e| match e {
        UnzipError::Unsafe(entry) => Missing::Unsafe(entry),
        UnzipError::Failed(why) => failed("unzip the baseline artifact", why),
    })?;
    Ok(Found {
        run_id: run.id,
        run_url: run.html_url,
        artifact_id: art.id,
        files,
    })
}

async fn body(
    what: &'static str,
    res: http::Response<http_body_util::combinators::BoxBody<bytes::Bytes, octocrab::Error>>,
) -> Result<Vec<u8>, Missing> {
    res.into_body()
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .map_err(|e| failed(what, e))
}

/// The artifact's zip: the API's 302, then the storage URL without the token.
async fn download(
    api: &Octocrab,
    storage: &Octocrab,
    repo: &str,
    id: u64,
) -> Result<Vec<u8>, Missing> {
    let what = "download the baseline artifact";
    let res = api
        ._get(format!("{repo}/actions/artifacts/{id}/zip"))
        .await
        .map_err(|e| from_octocrab(what, e))?;
    let status = res.status().as_u16();
    match status {
        302 | 301 | 303 | 307 | 308 => {}
        // Served directly (a proxy that follows the redirect itself).
        200 => return body(what, res).await,
        410 => return Err(failed(what, "410")),
        401 | 403 => {
            return Err(Missing::Forbidden {
                what,
                status,
                message: String::from_utf8_lossy(&body(what, res).await?).into_owned(),
            });
        }
        s => return Err(failed(what, format!("github answered {s}"))),
    }
    let Some(location) = res
        .headers()
        .get(http::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
    else {
        return Err(failed(
            what,
            format!("github answered {status} without a Location"),
        ));
    };
    let res = storage
        ._get(location.as_str())
        .await
        .map_err(|e| failed(what, e))?;
    if !res.status().is_success() {
        return Err(failed(
            what,
            format!("the artifact storage answered {}", res.status()),
        ));
    }
    body(what, res).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workflow_file_comes_from_its_ref() {
        assert_eq!(
            workflow_file("octo/repo/.github/workflows/gate.yml@refs/pull/7/merge").as_deref(),
            Some("gate.yml")
        );
        assert_eq!(
            workflow_file("o/r/.github/workflows/a.yaml").as_deref(),
            Some("a.yaml")
        );
        assert_eq!(workflow_file(""), None);
        assert_eq!(workflow_file("o/r/dynamic/pages@refs/heads/main"), None);
    }
}
