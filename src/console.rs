//! What the user reads on stderr, said in one place: progress, notes, warnings, failures and
//! results. `--quiet` keeps warnings, failures and results and drops the rest; colour marks a
//! warning or a failure only when stderr is a terminal and `NO_COLOR` is unset
//! (<https://no-color.org>), so logs, CI and the tests that read stderr get plain text.
//!
//! Machine-read output (event lines, tables, JSON) goes to stdout or to files, never here.

use std::fmt;
use std::io::{IsTerminal, Write};
use std::sync::OnceLock;

/// What a line is, which decides whether `--quiet` keeps it and how it is marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Where the run is: preflight checks passed, the trigger, the window.
    Progress,
    /// Something the user may want to know that changes nothing (a flag ignored, a skip).
    Note,
    /// Something that weakens the evidence or needs the user's action.
    Warning,
    /// A check or step that failed (the error itself comes with the exit code).
    Failure,
    /// What the run concluded and where it wrote it.
    Result,
}

/// The console's settings for this process.
#[derive(Debug, Clone, Copy)]
struct Settings {
    quiet: bool,
    color: bool,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// Sets `--quiet` for the process, and colour from the terminal and `NO_COLOR`; the first call
/// wins (the binary makes it once, before any output).
pub fn configure(quiet: bool) {
    let color = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let _ = SETTINGS.set(Settings { quiet, color });
}

fn settings() -> Settings {
    SETTINGS.get().copied().unwrap_or(Settings {
        quiet: false,
        color: false,
    })
}

/// Whether `--quiet` drops lines of `kind`.
fn dropped(kind: Kind, quiet: bool) -> bool {
    quiet && matches!(kind, Kind::Progress | Kind::Note)
}

/// The ANSI colour a line of `kind` starts with, when colour is on.
fn color_of(kind: Kind) -> Option<&'static str> {
    match kind {
        Kind::Warning => Some("\x1b[33m"),
        Kind::Failure => Some("\x1b[31m"),
        Kind::Progress | Kind::Note | Kind::Result => None,
    }
}

/// Writes one line of `kind` to stderr (a failed write is ignored: the console is not the
/// evidence, and a closed stderr must not end a trial).
pub fn say(kind: Kind, args: fmt::Arguments<'_>) {
    let s = settings();
    if dropped(kind, s.quiet) {
        return;
    }
    let mut err = std::io::stderr().lock();
    let _ = match color_of(kind).filter(|_| s.color) {
        Some(c) => writeln!(err, "{c}{args}\x1b[0m"),
        None => writeln!(err, "{args}"),
    };
}

// The macros are exported under hidden names and re-exported here, so that the library and the
// binary both say `console::progress!(...)`.
/// A progress line (dropped by `--quiet`).
#[doc(hidden)]
#[macro_export]
macro_rules! __console_progress {
    ($($arg:tt)*) => { $crate::console::say($crate::console::Kind::Progress, format_args!($($arg)*)) };
}
/// A note (dropped by `--quiet`).
#[doc(hidden)]
#[macro_export]
macro_rules! __console_note {
    ($($arg:tt)*) => { $crate::console::say($crate::console::Kind::Note, format_args!($($arg)*)) };
}
/// A warning (kept by `--quiet`; yellow on a terminal).
#[doc(hidden)]
#[macro_export]
macro_rules! __console_warning {
    ($($arg:tt)*) => { $crate::console::say($crate::console::Kind::Warning, format_args!($($arg)*)) };
}
/// A failure (kept by `--quiet`; red on a terminal).
#[doc(hidden)]
#[macro_export]
macro_rules! __console_failure {
    ($($arg:tt)*) => { $crate::console::say($crate::console::Kind::Failure, format_args!($($arg)*)) };
}
/// A result (kept by `--quiet`).
#[doc(hidden)]
#[macro_export]
macro_rules! __console_result {
    ($($arg:tt)*) => { $crate::console::say($crate::console::Kind::Result, format_args!($($arg)*)) };
}
pub use crate::{
    __console_failure as failure, __console_note as note, __console_progress as progress,
    __console_result as result, __console_warning as warning,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_keeps_warnings_failures_and_results() {
        let kept: Vec<Kind> = [
            Kind::Progress,
            Kind::Note,
            Kind::Warning,
            Kind::Failure,
            Kind::Result,
        ]
        .into_iter()
        .filter(|k| !dropped(*k, true))
        .collect();
        assert_eq!(kept, [Kind::Warning, Kind::Failure, Kind::Result]);
        assert!(
            [Kind::Progress, Kind::Note]
                .iter()
                .all(|k| !dropped(*k, false)),
            "without --quiet every line is said"
        );
    }

    #[test]
    fn only_warnings_and_failures_are_coloured() {
        assert!(color_of(Kind::Warning).is_some() && color_of(Kind::Failure).is_some());
        assert!(
            [Kind::Progress, Kind::Note, Kind::Result]
                .iter()
                .all(|k| color_of(*k).is_none())
        );
    }
}
