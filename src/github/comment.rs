//! The sticky pull-request comment: one per pull request per key (`drainwatch ci key`: the job
//! and its matrix leg), found by a hidden marker among the comments the token's own identity
//! wrote ([`super::viewer`]), updated in place on every run and created on the first. A comment
//! by anyone else that carries the marker is never edited: it is reported as ignored.
//!
//! Lookup pages through every comment by the `Link` headers GitHub sends (100 per page), so a
//! long discussion never makes a second comment. The update is the documented
//! `PATCH /repos/{owner}/{repo}/issues/comments/{id}` (octocrab's `update_comment` POSTs, which
//! GitHub tolerates but does not document). Comments are read into a two-field struct rather than
//! octocrab's full model, so a field GitHub adds or drops never breaks the upsert.

use std::time::Duration;

use octocrab::{Octocrab, Page};
use serde::Deserialize;

use super::env::Token;
use super::event::PullRequest;

/// The hidden marker that identifies this job's comment.
pub fn marker(key: &str) -> String {
    let key: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("<!-- drainwatch:summary key={key} -->")
}

/// Whether a comment by `author` was written by `viewer` (`github-actions` writes as
/// `github-actions[bot]`). Logins are case-insensitive on GitHub.
pub fn wrote(viewer: &str, author: &str) -> bool {
    author.eq_ignore_ascii_case(viewer)
        || author
            .strip_suffix("[bot]")
            .is_some_and(|a| a.eq_ignore_ascii_case(viewer))
}

/// The comment body: the marker, then the summary.
pub fn body(key: &str, markdown: &str) -> String {
    format!("{}\n{markdown}", marker(key))
}

#[derive(Debug, Deserialize)]
struct Author {
    login: String,
}

#[derive(Debug, Deserialize)]
struct Comment {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    html_url: Option<String>,
    /// Null for a deleted account ("ghost").
    #[serde(default)]
    user: Option<Author>,
}

/// A comment that carries this key's marker but was written by someone else: left alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// Its id.
    pub id: u64,
    /// Its author; `None` for a deleted account.
    pub author: Option<String>,
    /// Its page.
    pub url: Option<String>,
}

/// What the upsert did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upserted {
    /// A new comment.
    Created {
        /// Its id.
        id: u64,
        /// Its page.
        url: Option<String>,
        /// Comments with the marker by other authors, seen and left alone.
        ignored: Vec<Ignored>,
    },
    /// The existing comment, updated.
    Updated {
        /// Its id.
        id: u64,
        /// Its page.
        url: Option<String>,
        /// Pages of comments read to find it.
        pages: u32,
        /// Comments with the marker by other authors, seen before it and left alone.
        ignored: Vec<Ignored>,
    },
    /// GitHub refused (403: read-only token, as on fork pull requests; 404: no access). The
    /// caller warns once and carries on: the job summary still has everything.
    Denied {
        /// 403 or 404.
        status: u16,
        /// GitHub's message.
        message: String,
    },
}

/// A failure other than a refusal (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum CommentError {
    /// The client could not be built (a bad GITHUB_API_URL).
    #[error("failed to set up the github client for {api_url}")]
    Client {
        /// The URL.
        api_url: String,
        /// Why.
        #[source]
        source: octocrab::Error,
    },
    /// GitHub answered with an error status other than 403 or 404.
    #[error("github answered {status} to {what}: {message}")]
    Status {
        /// The call.
        what: &'static str,
        /// HTTP status.
        status: u16,
        /// GitHub's message.
        message: String,
    },
    /// The request failed before GitHub answered, or the answer did not parse.
    #[error("failed to {what}")]
    Transport {
        /// The call.
        what: &'static str,
        /// Why.
        #[source]
        source: octocrab::Error,
    },
}

/// An octocrab client for `api_url` (GITHUB_API_URL, also GHES's `https://host/api/v3`).
pub fn client(api_url: &str, token: &Token) -> Result<Octocrab, CommentError> {
    let err = |source| CommentError::Client {
        api_url: api_url.to_string(),
        source,
    };
    Octocrab::builder()
        .base_uri(api_url)
        .map_err(err)?
        .personal_token(token.expose().to_string())
        .set_connect_timeout(Some(Duration::from_secs(10)))
        .set_read_timeout(Some(Duration::from_secs(30)))
        .build()
        .map_err(err)
}

enum Refusal {
    Denied(Upserted),
    Failed(CommentError),
}

fn classify(what: &'static str, e: octocrab::Error) -> Refusal {
    if let octocrab::Error::GitHub { source, .. } = &e {
        let status = source.status_code.as_u16();
        if status == 403 || status == 404 {
            return Refusal::Denied(Upserted::Denied {
                status,
                message: source.message.clone(),
            });
        }
        return Refusal::Failed(CommentError::Status {
            what,
            status,
            message: source.message.clone(),
        });
    }
    Refusal::Failed(CommentError::Transport { what, source: e })
}

/// Creates or updates the comment of `key` that `viewer` (the token's login) wrote on `pr`
/// with `markdown`.
pub async fn upsert(
    gh: &Octocrab,
    pr: &PullRequest,
    viewer: &str,
    key: &str,
    markdown: &str,
) -> Result<Upserted, CommentError> {
    match upsert_inner(gh, pr, viewer, key, markdown).await {
        Ok(u) => Ok(u),
        Err(Refusal::Denied(d)) => Ok(d),
        Err(Refusal::Failed(e)) => Err(e),
    }
}

async fn upsert_inner(
    gh: &Octocrab,
    pr: &PullRequest,
    viewer: &str,
    key: &str,
    markdown: &str,
) -> Result<Upserted, Refusal> {
    let repo = format!("/repos/{}/{}", pr.owner, pr.repo);
    let mark = marker(key);
    let text = body(key, markdown);
    let list = "list the pull request's comments";
    let mut page: Page<Comment> = gh
        .get(
            format!("{repo}/issues/{}/comments", pr.number),
            Some(&[("per_page", "100")]),
        )
        .await
        .map_err(|e| classify(list, e))?;
    let mut pages = 1;
    let mut ignored = Vec::new();
    let found = 'pages: loop {
        for c in &page.items {
            if !c.body.as_deref().is_some_and(|b| b.contains(&mark)) {
                continue;
            }
            let author = c.user.as_ref().map(|u| u.login.clone());
            if author.as_deref().is_some_and(|a| wrote(viewer, a)) {
                break 'pages Some(c.id);
            }
            ignored.push(Ignored {
                id: c.id,
                author,
                url: c.html_url.clone(),
            });
        }
        match gh
            .get_page::<Comment>(&page.next)
            .await
            .map_err(|e| classify(list, e))?
        {
            Some(next) => {
                page = next;
                pages += 1;
            }
            None => break None,
        }
    };
    let payload = serde_json::json!({ "body": text });
    match found {
        Some(id) => {
            let c: Comment = gh
                .patch(format!("{repo}/issues/comments/{id}"), Some(&payload))
                .await
                .map_err(|e| classify("update the comment", e))?;
            Ok(Upserted::Updated {
                id: c.id,
                url: c.html_url,
                pages,
                ignored,
            })
        }
        None => {
            let c: Comment = gh
                .post(
                    format!("{repo}/issues/{}/comments", pr.number),
                    Some(&payload),
                )
                .await
                .map_err(|e| classify("create the comment", e))?;
            Ok(Upserted::Created {
                id: c.id,
                url: c.html_url,
                ignored,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workflow_token_writes_as_its_bot() {
        assert!(wrote("github-actions", "github-actions[bot]"));
        assert!(wrote("octocat", "Octocat"));
        assert!(wrote("my-app[bot]", "my-app[bot]"));
        assert!(!wrote("github-actions", "octocat"));
        assert!(!wrote("github-actions", "github-actions-evil[bot]"));
        assert!(!wrote("octocat", "octocat[bot]x"));
    }

    #[test]
    fn the_marker_is_one_hidden_line_per_key() {
        assert_eq!(marker("e2e"), "<!-- drainwatch:summary key=e2e -->");
        assert_eq!(marker("a b-->"), "<!-- drainwatch:summary key=a_b--_ -->");
        assert!(body("k", "## x\n").starts_with("<!-- drainwatch:summary key=k -->\n## x"));
    }
}
