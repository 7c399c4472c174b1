//! Whose token this is: GraphQL `query { viewer { login } }`, the one call that answers for
//! both kinds of token (`GET /user` answers 403 to the workflow's GITHUB_TOKEN). GITHUB_TOKEN's
//! viewer is `github-actions`, whose comments carry `user.login` `github-actions[bot]`; a
//! personal token's viewer is its user, a GitHub App's its bot. The sticky comment is looked
//! up only among comments written by this identity, so a comment someone else wrote with the
//! marker is never edited.

use octocrab::Octocrab;
use serde::Deserialize;

use super::comment::{CommentError, client};
use super::env::Token;

/// The token's identity, or why it is not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Viewer {
    /// The login GraphQL named.
    Known(String),
    /// The lookup failed (a refusal, a GraphQL error, no answer): the caller edits nothing.
    Unknown(String),
}

/// `https://host/api/graphql` as the client's base (`https://host`) and the path: octocrab
/// prefixes every path with its base's, so the REST client (GHES: `…/api/v3`) cannot reach
/// GraphQL (`…/api/graphql`).
fn split(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => url.split_at(after_scheme + i),
        None => (url, "/"),
    }
}

#[derive(Deserialize)]
struct Answer {
    data: Option<Data>,
    #[serde(default)]
    errors: Vec<GraphqlError>,
}

#[derive(Deserialize)]
struct Data {
    viewer: Option<Login>,
}

#[derive(Deserialize)]
struct Login {
    login: String,
}

#[derive(Deserialize)]
struct GraphqlError {
    message: String,
}

/// Asks `graphql_url` who `token` is. A 401 is an error (a bad token is a misconfiguration,
/// as for every other call); every other failure is [`Viewer::Unknown`].
pub async fn viewer(graphql_url: &str, token: &Token) -> Result<Viewer, CommentError> {
    let (base, path) = split(graphql_url);
    let gh: Octocrab = client(base, token)?;
    let query = serde_json::json!({ "query": "query { viewer { login } }" });
    let what = "look up the token's identity (GraphQL viewer)";
    let answer: Answer = match gh.post(path, Some(&query)).await {
        Ok(a) => a,
        Err(octocrab::Error::GitHub { source, .. }) => {
            let status = source.status_code.as_u16();
            if status == 401 {
                return Err(CommentError::Status {
                    what,
                    status,
                    message: source.message.clone(),
                });
            }
            return Ok(Viewer::Unknown(format!(
                "github answered {status} ({}) to {what}",
                source.message
            )));
        }
        Err(e) => return Ok(Viewer::Unknown(format!("failed to {what}: {e}"))),
    };
    if let Some(login) = answer.data.and_then(|d| d.viewer).map(|v| v.login) {
        return Ok(Viewer::Known(login));
    }
    let messages: Vec<String> = answer.errors.into_iter().map(|e| e.message).collect();
    Ok(Viewer::Unknown(format!(
        "GraphQL named no viewer: {}",
        if messages.is_empty() {
            "no data and no error".to_string()
        } else {
            messages.join("; ")
        }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graphql_urls_split_into_base_and_path() {
        assert_eq!(
            split("https://api.github.com/graphql"),
            ("https://api.github.com", "/graphql")
        );
        assert_eq!(
            split("https://ghe.example/api/graphql"),
            ("https://ghe.example", "/api/graphql")
        );
        assert_eq!(split("http://127.0.0.1:9"), ("http://127.0.0.1:9", "/"));
    }
}
