//! Waiting on a condition, never on the clock: a test that needs the system in some state polls
//! for that state. The timeout is a guard against a hang, not a claim about timing. A sleep that
//! is part of a scenario (an idle hold, a silent peer) stays where it is and says why.

use std::fmt::Display;
use std::time::{Duration, Instant};

/// Polls `f` (every 10 ms at first, backing off to every 250 ms) until it returns `Some`, and
/// returns its value; panics after `timeout`, naming `what`, formatted only then (so a
/// `format_args!` over a live log shows the log as it stood at the failure).
#[track_caller]
pub fn until<T>(what: impl Display, timeout: Duration, f: impl FnMut() -> Option<T>) -> T {
    until_every(what, timeout, Duration::from_millis(250), f)
}

/// [`until`] polling at most every `every` (a costly check: a kubectl call).
#[track_caller]
pub fn until_every<T>(
    what: impl Display,
    timeout: Duration,
    every: Duration,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let t = Instant::now();
    let mut pause = Duration::from_millis(10).min(every);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(t.elapsed() < timeout, "not within {timeout:?}: {what}");
        std::thread::sleep(pause);
        pause = (pause * 2).min(every);
    }
}

/// `what`, followed at the failure by the output a background reader has collected so far
/// (locked only while a failure message is written, never while waiting).
pub fn with_output<'a>(what: &'a str, output: &'a std::sync::Mutex<String>) -> impl Display + 'a {
    struct Shown<'a>(&'a str, &'a std::sync::Mutex<String>);
    impl Display for Shown<'_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            let out = self.1.lock().map(|s| s.clone()).unwrap_or_default();
            write!(f, "{}; its output so far:\n{out}", self.0)
        }
    }
    Shown(what, output)
}

/// `what`, followed at the failure by the contents of `path` as it then stands.
pub fn with_file<'a>(what: &'a str, path: &'a std::path::Path) -> impl Display + 'a {
    struct Shown<'a>(&'a str, &'a std::path::Path);
    impl Display for Shown<'_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            let text = std::fs::read_to_string(self.1).unwrap_or_default();
            write!(f, "{}; {} so far:\n{text}", self.0, self.1.display())
        }
    }
    Shown(what, path)
}
