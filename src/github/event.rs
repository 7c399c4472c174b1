//! The pull request a run belongs to, from the event payload (`$GITHUB_EVENT_PATH`). Only the
//! fields needed are read, so payloads of any GitHub version parse.

use serde::Deserialize;

/// A pull request in a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    /// Repository owner.
    pub owner: String,
    /// Repository name.
    pub repo: String,
    /// Pull request number.
    pub number: u64,
    /// The head branch lives in another repository (a fork): its token is read-only.
    pub from_fork: bool,
}

#[derive(Deserialize)]
struct Payload {
    pull_request: Option<Pr>,
    repository: Option<Repo>,
}

#[derive(Deserialize)]
struct Pr {
    number: u64,
    head: Option<Side>,
    base: Option<Side>,
}

#[derive(Deserialize)]
struct Side {
    repo: Option<Repo>,
}

#[derive(Deserialize)]
struct Repo {
    full_name: String,
}

/// Why no pull request could be named.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EventError {
    /// The payload is not JSON of an event.
    #[error("the event payload is not a github event: {0}")]
    Parse(String),
    /// No `owner/name` anywhere.
    #[error("no repository: GITHUB_REPOSITORY is unset and the event names none")]
    NoRepository,
    /// A repository name that is not `owner/name`.
    #[error("repository {0:?} is not owner/name")]
    BadRepository(String),
}

fn split(full: &str) -> Result<(String, String), EventError> {
    let ok = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
    };
    match full.split_once('/') {
        Some((o, r)) if ok(o) && ok(r) => Ok((o.to_string(), r.to_string())),
        _ => Err(EventError::BadRepository(full.to_string())),
    }
}

/// The pull request of `payload`, or `None` when the event is not about one. `repository`
/// (GITHUB_REPOSITORY) wins over the payload's, and `number` overrides the payload's (for
/// `workflow_run` workflows that post on behalf of a pull request).
pub fn pull_request(
    payload: Option<&str>,
    repository: Option<&str>,
    number: Option<u64>,
) -> Result<Option<PullRequest>, EventError> {
    let p: Option<Payload> = payload
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| EventError::Parse(e.to_string()))?;
    let pr = p.as_ref().and_then(|p| p.pull_request.as_ref());
    let Some(number) = number.or(pr.map(|pr| pr.number)) else {
        return Ok(None);
    };
    let full = repository
        .map(str::to_string)
        .or_else(|| p.as_ref()?.repository.as_ref().map(|r| r.full_name.clone()))
        .ok_or(EventError::NoRepository)?;
    let (owner, repo) = split(&full)?;
    let name = |s: &Option<Side>| s.as_ref()?.repo.as_ref().map(|r| r.full_name.clone());
    let from_fork = pr
        .is_some_and(|pr| matches!((name(&pr.head), name(&pr.base)), (Some(h), Some(b)) if h != b));
    Ok(Some(PullRequest {
        owner,
        repo,
        number,
        from_fork,
    }))
}

/// `owner/name` split, checked.
pub fn owner_repo(full: &str) -> Result<(String, String), EventError> {
    split(full)
}

#[derive(Deserialize)]
struct BranchPayload {
    pull_request: Option<BranchPr>,
    repository: Option<BranchRepo>,
}

#[derive(Deserialize)]
struct BranchPr {
    base: Option<BranchRef>,
}

#[derive(Deserialize)]
struct BranchRef {
    #[serde(rename = "ref")]
    name: Option<String>,
}

#[derive(Deserialize)]
struct BranchRepo {
    default_branch: Option<String>,
}

/// The branches a baseline is looked for on: the pull request's base branch, and the
/// repository's default branch, as far as the payload names them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Branches {
    /// `pull_request.base.ref`.
    pub base: Option<String>,
    /// `repository.default_branch`.
    pub default: Option<String>,
}

/// The [`Branches`] of an event payload (none for a payload that is not an event's).
pub fn branches(payload: &str) -> Branches {
    let Ok(p) = serde_json::from_str::<BranchPayload>(payload) else {
        return Branches::default();
    };
    Branches {
        base: p.pull_request.and_then(|pr| pr.base?.name),
        default: p.repository.and_then(|r| r.default_branch),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_and_default_branches_come_from_the_payload() {
        let pr = include_str!("../../tests/fixtures/ci/github/pull_request.opened.json");
        let b = branches(pr);
        assert!(b.base.is_some() && b.default.is_some(), "{b:?}");
        let push = include_str!("../../tests/fixtures/ci/github/push.json");
        assert_eq!(branches(push).base, None);
        assert_eq!(branches("nope"), Branches::default());
    }

    const PR: &str = r#"{"action":"opened","number":2,"pull_request":{"number":2,
        "head":{"repo":{"full_name":"fork/Hello-World"}},"base":{"repo":{"full_name":"Codertocat/Hello-World"}}},
        "repository":{"full_name":"Codertocat/Hello-World"}}"#;

    #[test]
    fn a_pull_request_event_names_its_pull_request() {
        let pr = pull_request(Some(PR), None, None).unwrap().unwrap();
        assert_eq!(
            (pr.owner.as_str(), pr.repo.as_str(), pr.number),
            ("Codertocat", "Hello-World", 2)
        );
        assert!(pr.from_fork);
        let pr = pull_request(Some(PR), Some("o/r"), Some(7))
            .unwrap()
            .unwrap();
        assert_eq!((pr.owner.as_str(), pr.number), ("o", 7));
    }

    #[test]
    fn githubs_recorded_payloads_parse() {
        let pr = include_str!("../../tests/fixtures/ci/github/pull_request.opened.json");
        let got = pull_request(Some(pr), None, None).unwrap().unwrap();
        assert_eq!(
            got,
            PullRequest {
                owner: "Codertocat".into(),
                repo: "Hello-World".into(),
                number: 2,
                from_fork: false
            }
        );
        let push = include_str!("../../tests/fixtures/ci/github/push.json");
        assert_eq!(pull_request(Some(push), None, None), Ok(None));
    }

    #[test]
    fn other_events_name_none() {
        assert_eq!(
            pull_request(Some(r#"{"ref":"refs/heads/main"}"#), Some("o/r"), None),
            Ok(None)
        );
        assert_eq!(pull_request(None, Some("o/r"), None), Ok(None));
        assert!(matches!(
            pull_request(Some("nope"), None, None),
            Err(EventError::Parse(_))
        ));
        assert_eq!(
            pull_request(None, Some("o/r/../x"), Some(1)),
            Err(EventError::BadRepository("o/r/../x".into()))
        );
    }
}
