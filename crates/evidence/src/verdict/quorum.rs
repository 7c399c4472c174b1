//! Attempts and quorums: which of an arm's trial directories are retries of which trial, which
//! attempt counts, and whether a per-trial threshold passed under the arm's quorum.
//!
//! **Naming.** A trial's first attempt is `trial-NNN`; its retries are `trial-NNN-retry-1`,
//! `trial-NNN-retry-2`, … (attempts 2, 3, …), each with its own directory and report. The id
//! alone says which trial an attempt belongs to, so a run directory read back without its
//! `summary.json` still groups its attempts.
//!
//! **Which attempt counts.** The last attempt of each trial, for per-trial thresholds, for the
//! quorum and for distributions; every attempt is still listed and checked. A threshold that
//! passes although an earlier attempt of one of its trials missed it held only after a retry:
//! it is **flaky** (a pass, shown as flaky everywhere, never a silent one).

use crate::policy::Quorum;

use super::check::{Check, CheckState};

/// What separates a trial id from its retry number.
pub const RETRY_SEPARATOR: &str = "-retry-";

/// The id of the `retry`-th retry (1-based) of trial `base`.
pub fn retry_id(base: &str, retry: u32) -> String {
    format!("{base}{RETRY_SEPARATOR}{retry}")
}

/// The trial an attempt id belongs to and the attempt's number (1 for the first, 2 for
/// `-retry-1`, …). An id without a well-formed retry suffix is a first attempt of itself.
pub fn parse_attempt(id: &str) -> (&str, u32) {
    if let Some(i) = id.rfind(RETRY_SEPARATOR) {
        let n = &id[i + RETRY_SEPARATOR.len()..];
        if !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
            && let Ok(r) = n.parse::<u32>()
            && r >= 1
        {
            return (&id[..i], r.saturating_add(1));
        }
    }
    (id, 1)
}

/// The number of a `trial-NNN` id, if it is one.
fn trial_number(trial: &str) -> Option<u32> {
    let n = trial.strip_prefix("trial-")?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok()
}

/// The trials an arm should have run but left no directory of: `trial-NNN` for every N up to
/// the larger of the planned `repeat` and the highest number present. A trial that is absent
/// (an interrupted run, a directory lost between jobs) is no trial that held; under
/// `quorum = "all"` it must not shrink "all". Ids of another shape (a single trial's directory)
/// are not numbered, and nothing is missing among them.
pub fn missing(ids: &[&str], planned: u32) -> Vec<String> {
    let present: Vec<u32> = ids
        .iter()
        .filter_map(|id| trial_number(parse_attempt(id).0))
        .collect();
    if present.len() != ids.len() {
        return Vec::new();
    }
    let width = ids
        .iter()
        .map(|id| parse_attempt(id).0.len() - "trial-".len())
        .max()
        .unwrap_or(3);
    let expected = present.iter().copied().max().unwrap_or(0).max(planned);
    (1..=expected)
        .filter(|n| !present.contains(n))
        .map(|n| format!("trial-{n:0width$}"))
        .collect()
}

/// One attempt as the verdict sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The trial it belongs to.
    pub trial: String,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// Whether it is the last attempt of its trial, the one per-trial thresholds count.
    pub counted: bool,
}

/// The attempts of `ids` (an arm's trials in directory order), in the same order.
pub fn attempts(ids: &[&str]) -> Vec<Attempt> {
    let parsed: Vec<(&str, u32)> = ids.iter().map(|id| parse_attempt(id)).collect();
    parsed
        .iter()
        .enumerate()
        .map(|(i, (trial, attempt))| {
            // The last attempt of a trial: no other id of that trial with a higher number, and
            // for equal numbers (a malformed directory) the later one.
            let superseded = parsed
                .iter()
                .enumerate()
                .any(|(j, (t, a))| t == trial && (a > attempt || (a == attempt && j > i)));
            Attempt {
                trial: (*trial).to_string(),
                attempt: *attempt,
                counted: !superseded,
            }
        })
        .collect()
}

/// How one per-trial threshold fared under the quorum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Counted trials in which it held.
    pub held: u32,
    /// Counted trials judged.
    pub trials: u32,
    /// Trials it had to hold in.
    pub need: u32,
    /// Whether it passed.
    pub pass: bool,
    /// Passed, although an attempt that was retried missed it.
    pub flaky: bool,
}

/// Tallies `checks` (one per attempt, parallel to `attempts`) under `quorum`. With `k/n`, a
/// missing trial (an interrupted run) counts as not held, and more counted trials than `n` (a
/// run judged by a policy it was not run with) fail: the quorum does not describe that run.
pub fn tally(quorum: Quorum, checks: &[Check], attempts: &[Attempt]) -> Tally {
    let counted = || {
        checks
            .iter()
            .zip(attempts)
            .filter(|(_, a)| a.counted)
            .map(|(c, _)| c)
    };
    let trials = u32::try_from(counted().count()).unwrap_or(u32::MAX);
    let held = u32::try_from(counted().filter(|c| c.state == CheckState::Held).count())
        .unwrap_or(u32::MAX);
    let need = quorum.need(trials);
    let fits = match quorum {
        Quorum::All => true,
        Quorum::Of { n, .. } => trials <= n,
    };
    let pass = trials > 0 && fits && held >= need;
    let retried_miss = checks
        .iter()
        .zip(attempts)
        .any(|(c, a)| !a.counted && c.state != CheckState::Held);
    Tally {
        held,
        trials,
        need,
        pass,
        flaky: pass && retried_miss,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_trial_without_its_directory_is_missing() {
        assert_eq!(missing(&["trial-001", "trial-003"], 1), ["trial-002"]);
        assert_eq!(missing(&["trial-001"], 3), ["trial-002", "trial-003"]);
        assert_eq!(
            missing(&["trial-001", "trial-002-retry-1", "trial-002"], 2),
            Vec::<String>::new()
        );
        assert_eq!(missing(&[], 2), ["trial-001", "trial-002"]);
        // A single trial's directory names no number: nothing can be said missing.
        assert_eq!(missing(&["client-manual"], 3), Vec::<String>::new());
    }

    fn check(id: &str, state: CheckState) -> Check {
        Check {
            trial_id: id.into(),
            state,
            measured: None,
            value: None,
            of: None,
            message: id.into(),
        }
    }

    #[test]
    fn attempt_ids_round_trip() {
        assert_eq!(parse_attempt("trial-003"), ("trial-003", 1));
        assert_eq!(parse_attempt(&retry_id("trial-003", 1)), ("trial-003", 2));
        assert_eq!(parse_attempt("trial-003-retry-2"), ("trial-003", 3));
        assert_eq!(parse_attempt("trial-003-retry-"), ("trial-003-retry-", 1));
        assert_eq!(parse_attempt("trial-003-retry-0"), ("trial-003-retry-0", 1));
        assert_eq!(parse_attempt("client-manual"), ("client-manual", 1));
    }

    #[test]
    fn the_last_attempt_of_each_trial_counts() {
        let a = attempts(&[
            "trial-001",
            "trial-001-retry-1",
            "trial-002",
            "trial-003",
            "trial-003-retry-1",
            "trial-003-retry-2",
        ]);
        let counted: Vec<bool> = a.iter().map(|x| x.counted).collect();
        assert_eq!(counted, [false, true, true, false, false, true]);
        assert_eq!(a[5].attempt, 3);
        assert_eq!(a[5].trial, "trial-003");
    }

    #[test]
    fn a_threshold_held_only_after_a_retry_is_a_flaky_pass() {
        let a = attempts(&["trial-001", "trial-001-retry-1", "trial-002"]);
        let checks = [
            check("trial-001", CheckState::Missed),
            check("trial-001-retry-1", CheckState::Held),
            check("trial-002", CheckState::Held),
        ];
        let t = tally(Quorum::All, &checks, &a);
        assert_eq!(
            (t.held, t.trials, t.need, t.pass, t.flaky),
            (2, 2, 2, true, true)
        );
        // Missed in the retry too: a failure, not flaky.
        let checks = [
            check("trial-001", CheckState::Missed),
            check("trial-001-retry-1", CheckState::Missed),
            check("trial-002", CheckState::Held),
        ];
        let t = tally(Quorum::All, &checks, &a);
        assert_eq!((t.pass, t.flaky), (false, false));
        // Quorum counts final attempts: 1 of 2 is enough for 1/2.
        let t = tally(Quorum::Of { k: 1, n: 2 }, &checks, &a);
        assert_eq!((t.held, t.pass, t.flaky), (1, true, true));
    }

    #[test]
    fn more_trials_than_the_quorum_names_fail_and_missing_ones_count_as_missed() {
        let a = attempts(&["trial-001", "trial-002", "trial-003"]);
        let held = [
            check("trial-001", CheckState::Held),
            check("trial-002", CheckState::Held),
            check("trial-003", CheckState::Held),
        ];
        assert!(!tally(Quorum::Of { k: 2, n: 2 }, &held, &a).pass);
        assert!(tally(Quorum::Of { k: 3, n: 5 }, &held, &a).pass);
        assert!(!tally(Quorum::Of { k: 4, n: 5 }, &held, &a).pass);
        assert!(!tally(Quorum::All, &[], &[]).pass, "no trial never passes");
    }

    fn states() -> impl Strategy<Value = Vec<bool>> {
        prop::collection::vec(any::<bool>(), 1..10)
    }

    fn tally_of(held: &[bool], quorum: Quorum) -> Tally {
        let ids: Vec<String> = (1..=held.len()).map(|i| format!("trial-{i:03}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let checks: Vec<Check> = ids
            .iter()
            .zip(held)
            .map(|(id, h)| {
                check(
                    id,
                    if *h {
                        CheckState::Held
                    } else {
                        CheckState::Missed
                    },
                )
            })
            .collect();
        tally(quorum, &checks, &attempts(&refs))
    }

    proptest! {
        #[test]
        fn quorum_n_of_n_is_all(held in states()) {
            let n = u32::try_from(held.len()).unwrap();
            prop_assert_eq!(tally_of(&held, Quorum::Of { k: n, n }).pass, tally_of(&held, Quorum::All).pass);
        }

        #[test]
        fn k_of_n_passes_exactly_when_k_is_at_most_the_held_count(held in states(), k in 1u32..10) {
            let n = u32::try_from(held.len()).unwrap();
            prop_assume!(k <= n);
            let count = u32::try_from(held.iter().filter(|h| **h).count()).unwrap();
            let t = tally_of(&held, Quorum::Of { k, n });
            prop_assert_eq!(t.held, count);
            prop_assert_eq!(t.pass, k <= count);
            prop_assert!(!t.flaky, "no retry, no flake");
        }
    }
}
