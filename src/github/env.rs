//! The variables GitHub Actions sets for a step, read in one place, and the two files a step
//! writes to talk back to the runner: `$GITHUB_STEP_SUMMARY` (Markdown) and `$GITHUB_OUTPUT`
//! (`name=value` lines, or `name<<DELIMITER` blocks for values with newlines).

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A token that never prints itself: `Debug` and `Display` show `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Wraps a token; `None` for an empty string.
    pub fn new(s: String) -> Option<Self> {
        let s = s.trim().to_string();
        (!s.is_empty()).then_some(Self(s))
    }

    /// The secret itself, for the Authorization header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// The GitHub Actions environment of a step; every field is optional so the same commands run
/// in any CI (they print instead of writing to the runner's files).
#[derive(Debug, Clone, Default)]
pub struct GithubEnv {
    /// `GITHUB_STEP_SUMMARY`.
    pub step_summary: Option<PathBuf>,
    /// `GITHUB_OUTPUT`.
    pub output: Option<PathBuf>,
    /// `GITHUB_EVENT_PATH`.
    pub event_path: Option<PathBuf>,
    /// `GITHUB_EVENT_NAME`.
    pub event_name: Option<String>,
    /// `GITHUB_REPOSITORY` (`owner/name`).
    pub repository: Option<String>,
    /// `GITHUB_API_URL`; `https://api.github.com` when unset.
    pub api_url: String,
    /// `GITHUB_SERVER_URL`.
    pub server_url: Option<String>,
    /// `GITHUB_RUN_ID`.
    pub run_id: Option<String>,
    /// `GITHUB_TOKEN`.
    pub token: Option<Token>,
    /// `GITHUB_JOB`.
    pub job: Option<String>,
    /// `GITHUB_GRAPHQL_URL`; derived from the API URL when unset ([`GithubEnv::graphql_url`]).
    pub graphql_url: Option<String>,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl GithubEnv {
    /// Reads the environment of this process.
    pub fn from_process() -> Self {
        Self {
            step_summary: var("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            output: var("GITHUB_OUTPUT").map(PathBuf::from),
            event_path: var("GITHUB_EVENT_PATH").map(PathBuf::from),
            event_name: var("GITHUB_EVENT_NAME"),
            repository: var("GITHUB_REPOSITORY"),
            api_url: var("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".into()),
            server_url: var("GITHUB_SERVER_URL"),
            run_id: var("GITHUB_RUN_ID"),
            token: var("GITHUB_TOKEN").and_then(Token::new),
            job: var("GITHUB_JOB"),
            graphql_url: var("GITHUB_GRAPHQL_URL"),
        }
    }

    /// The GraphQL endpoint: `GITHUB_GRAPHQL_URL` as the runner sets it, else beside the REST
    /// API (`https://api.github.com/graphql`; GitHub Enterprise Server's REST API is
    /// `https://HOST/api/v3` and its GraphQL `https://HOST/api/graphql`).
    pub fn graphql_url(&self) -> String {
        if let Some(u) = &self.graphql_url {
            return u.clone();
        }
        let api = self.api_url.trim_end_matches('/');
        match api.strip_suffix("/api/v3") {
            Some(host) => format!("{host}/api/graphql"),
            None => format!("{api}/graphql"),
        }
    }

    /// The workflow run's page, when the variables name one.
    pub fn run_url(&self) -> Option<String> {
        Some(format!(
            "{}/{}/actions/runs/{}",
            self.server_url.as_deref()?.trim_end_matches('/'),
            self.repository.as_deref()?,
            self.run_id.as_deref()?
        ))
    }
}

/// Appends `text` to a runner file (step summary or outputs).
pub fn append(path: &Path, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(text.as_bytes())
}

/// One `$GITHUB_OUTPUT` entry. Values with a newline use the heredoc form with a delimiter
/// that the value does not contain.
pub fn output_entry(name: &str, value: &str) -> String {
    if !value.contains('\n') && !value.contains('\r') {
        return format!("{name}={value}\n");
    }
    let mut delim = String::from("DRAINWATCH_EOF");
    while value.contains(&delim) {
        delim.push('_');
    }
    format!("{name}<<{delim}\n{value}\n{delim}\n")
}

/// A workflow command that shows as a warning annotation; `%`, CR and LF are escaped as the
/// runner requires, so a message cannot inject a second command.
pub fn warning(title: &str, message: &str) -> String {
    let esc = |s: &str| {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    };
    format!(
        "::warning title={}::{}",
        esc(title).replace(':', "%3A").replace(',', "%2C"),
        esc(message)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_never_print() {
        let t = Token::new("ghs_secret".into()).unwrap();
        assert_eq!(format!("{t} {t:?}"), "*** Token(***)");
        assert_eq!(t.expose(), "ghs_secret");
        assert!(Token::new("  ".into()).is_none());
    }

    #[test]
    fn outputs_use_heredocs_only_when_needed() {
        assert_eq!(output_entry("verdict", "pass"), "verdict=pass\n");
        assert_eq!(
            output_entry("x", "a\nDRAINWATCH_EOF"),
            "x<<DRAINWATCH_EOF_\na\nDRAINWATCH_EOF\nDRAINWATCH_EOF_\n"
        );
    }

    #[test]
    fn warnings_cannot_inject_commands() {
        assert_eq!(
            warning("pr comment", "no access\n::error::x 100%"),
            "::warning title=pr comment::no access%0A::error::x 100%25"
        );
    }

    #[test]
    fn graphql_sits_beside_the_rest_api() {
        let mut e = GithubEnv {
            api_url: "https://api.github.com".into(),
            ..GithubEnv::default()
        };
        assert_eq!(e.graphql_url(), "https://api.github.com/graphql");
        e.api_url = "https://ghe.example/api/v3/".into();
        assert_eq!(e.graphql_url(), "https://ghe.example/api/graphql");
        e.graphql_url = Some("http://127.0.0.1:9/graphql".into());
        assert_eq!(e.graphql_url(), "http://127.0.0.1:9/graphql");
    }

    #[test]
    fn run_url_needs_all_three_parts() {
        let mut e = GithubEnv {
            server_url: Some("https://github.com/".into()),
            repository: Some("o/r".into()),
            run_id: Some("42".into()),
            ..GithubEnv::default()
        };
        assert_eq!(
            e.run_url().as_deref(),
            Some("https://github.com/o/r/actions/runs/42")
        );
        e.run_id = None;
        assert_eq!(e.run_url(), None);
    }
}
