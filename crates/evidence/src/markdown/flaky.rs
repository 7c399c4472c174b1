//! What the summary says about repeats and retries: a threshold that passed only after a retry
//! is marked flaky wherever its pass is shown (the headline, the arms table, the thresholds), and
//! its retried attempts are listed, so a retry never reads as a clean pass; a pass under a `k/n`
//! quorum shows how many trials held.

use std::fmt::Write;

use super::esc;
use crate::verdict::{ArmVerdict, Decision, ThresholdVerdict, Verdict};

/// The result cell of one threshold.
pub(super) fn threshold_mark(a: &ArmVerdict, t: &ThresholdVerdict) -> String {
    let base = super::threshold_mark(t.verdict);
    let mut notes = Vec::new();
    if t.is_flaky() {
        notes.push("flaky: held only after a retry".to_string());
    }
    if let (Some(held), Some(of), Some(rule)) = (t.held, t.of, a.rule.as_ref())
        && rule.quorum != "all"
    {
        notes.push(format!("{held} of {of} held, quorum {}", rule.quorum));
    }
    if notes.is_empty() {
        base.to_string()
    } else {
        let warn = if t.is_flaky() { "⚠️ " } else { "" };
        format!("{warn}{base} ({})", notes.join("; "))
    }
}

/// The verdict cell of one arm.
pub(super) fn arm_mark(a: &ArmVerdict) -> String {
    if a.verdict == Decision::Pass && a.flaky == Some(true) {
        "⚠️ ✅ pass (flaky)".into()
    } else {
        super::mark(a.verdict).into()
    }
}

/// How many thresholds passed only after a retry, for the headline.
pub(super) fn headline_note(v: &Verdict) -> String {
    let n = v
        .arms
        .iter()
        .flat_map(|a| &a.thresholds)
        .filter(|t| t.is_flaky())
        .count();
    match n {
        0 => String::new(),
        1 => " · ⚠️ 1 flaky: held only after a retry".into(),
        n => format!(" · ⚠️ {n} flaky: held only after a retry"),
    }
}

/// The flaky thresholds with the attempts that missed them; nothing when none is flaky.
pub(super) fn section(o: &mut String, v: &Verdict) {
    let lines = v.flaky_lines();
    if lines.is_empty() {
        return;
    }
    o.push_str("\n### ⚠️ Flaky: passed only after a retry\n\n");
    for l in lines {
        let _ = writeln!(o, "- {}", esc(&l));
    }
}

/// Whether every threshold held in every trial and attempt (the plain all-clear may be said).
pub(super) fn all_clear(v: &Verdict) -> bool {
    v.arms.iter().flat_map(|a| &a.thresholds).all(|t| {
        t.checks
            .iter()
            .all(|c| c.state == crate::verdict::CheckState::Held)
    })
}

/// The trials cell of one arm: the trials, and the retried attempts beside them.
pub(super) fn trials_cell(a: &ArmVerdict, found: usize) -> String {
    let retried = a.trials.iter().filter(|t| !t.is_counted()).count();
    match retried {
        0 => found.to_string(),
        1 => format!("{} + 1 retried attempt", found.saturating_sub(1)),
        r => format!("{} + {r} retried attempts", found.saturating_sub(r)),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::markdown::{self, Links};
    use crate::verdict::retry_tests::{flaky_trials, flaky_verdict};

    #[test]
    fn the_summary_never_shows_a_flaky_pass_as_a_clean_one() {
        let trials = flaky_trials();
        let v = flaky_verdict(&trials);
        let ev = BTreeMap::from([("a".to_string(), trials)]);
        let md = markdown::render(&v, &ev, &Links::default(), markdown::COMMENT_MAX_CHARS);
        let head = md.lines().next().unwrap();
        assert_eq!(
            head,
            "## ✅ drainwatch: pass — 2 thresholds held in 1 arm · ⚠️ 1 flaky: held only after a retry"
        );
        assert!(
            md.contains("### ⚠️ Flaky: passed only after a retry"),
            "{md}"
        );
        assert!(
            md.contains("| `a` | ⚠️ ✅ pass (flaky) | 2 + 1 retried attempt |"),
            "{md}"
        );
        assert!(
            md.contains("| `a` | `tcp drained-clean-close ≥ 100%` | ⚠️ ✅ pass (flaky: held only after a retry) |"),
            "{md}"
        );
        assert!(!md.contains("Every threshold held in every trial."), "{md}");
        // The comment's limit drops detail, never the flaky marks.
        let short = markdown::render(&v, &ev, &Links::default(), 2_000);
        assert!(
            short.contains("Flaky: passed only after a retry"),
            "{short}"
        );
    }
}
