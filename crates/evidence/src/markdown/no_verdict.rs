//! The summary when no verdict was reached: which step failed, what to look at, and where the
//! partial files are. Without it a reader sees an empty verdict and guesses.

use std::fmt::Write;

use super::{Links, esc, key_line};

/// The step blamed for the missing verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedStep {
    /// Its id in the action.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What to look at.
    pub hint: String,
}

/// Why there is no verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NoVerdict {
    /// `drainwatch run`'s exit code, when it finished.
    pub exit_code: Option<i64>,
    /// The step that failed, when known.
    pub step: Option<FailedStep>,
}

/// The summary when drainwatch, or a step before it, failed and left no verdict.
pub fn render_tool_failure(why: &NoVerdict, links: &Links) -> String {
    let mut o =
        String::from("## ⚠️ drainwatch: no verdict — the tool or the infrastructure failed\n\n");
    match &why.exit_code {
        Some(code) => {
            let _ = writeln!(
                o,
                "`drainwatch run` exited with code {code} before writing `verdict.json`, so no threshold was evaluated. The step log names the failure; any partial reports (each written arm's `report.json` and `report.html`) are in the artifact."
            );
        }
        None => o.push_str(
            "`drainwatch run` did not finish, so no threshold was evaluated and no `verdict.json` was written.\n",
        ),
    }
    if let Some(s) = &why.step {
        let _ = writeln!(
            o,
            "\n**Failed step:** {} (`{}`). Look at: {}.",
            esc(&s.name),
            esc(&s.id).replace('`', "'"),
            esc(&s.hint)
        );
    }
    o.push('\n');
    key_line(&mut o, links);
    if let Some(url) = &links.artifact_url {
        let _ = writeln!(o, "- [report artifact]({url})");
    } else if let Some(name) = &links.artifact_name {
        let _ = writeln!(o, "- artifact `{}`", esc(name));
    }
    if let Some(run) = &links.run_url {
        let _ = writeln!(o, "- [workflow run]({run})");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failed_step_and_what_to_look_at_are_named() {
        let why = NoVerdict {
            exit_code: None,
            step: Some(FailedStep {
                id: "binary".into(),
                name: "Get the drainwatch binary".into(),
                hint: "the `image` input".into(),
            }),
        };
        let links = Links {
            key: Some("gate-a-0123abcd".into()),
            artifact_name: Some("drainwatch-gate-a-0123abcd".into()),
            ..Links::default()
        };
        let md = render_tool_failure(&why, &links);
        assert!(md.starts_with("## ⚠️ drainwatch: no verdict"), "{md}");
        assert!(md.contains("did not finish"), "{md}");
        assert!(
            md.contains("**Failed step:** Get the drainwatch binary (`binary`). Look at: the \\`image\\` input."),
            "{md}"
        );
        assert!(md.contains("- key `gate-a-0123abcd`"), "{md}");
        assert!(
            md.contains("- artifact `drainwatch-gate-a-0123abcd`"),
            "{md}"
        );
    }

    #[test]
    fn an_exit_code_is_quoted() {
        let md = render_tool_failure(
            &NoVerdict {
                exit_code: Some(2),
                step: None,
            },
            &Links::default(),
        );
        assert!(md.contains("exited with code 2"), "{md}");
        assert!(!md.contains("Failed step"), "{md}");
    }
}
