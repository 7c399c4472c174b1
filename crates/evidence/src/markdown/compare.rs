//! The Markdown of a baseline comparison ([`CompareReport`]): `compare.md`, and the section the
//! job summary and the PR comment append. Per compared arm a table metric | base | PR | delta |
//! decision; a side that measured nothing says "not measured", never 0; arms on one side only
//! and incomparable arms are named; the rule is stated in one line. Bounded like the summary:
//! [`render_compare`] drops the unchanged rows, then truncates, to fit `max_chars`.

use std::fmt::Write;

use super::esc;
use crate::stats::decide::{Change, Comparison, DecidedBy};
use crate::stats::metric::Unit;
use crate::stats::report::CompareReport;
use crate::stats::runs::{ArmResult, MetricResult, undecided};
use crate::stats::{Spread, min_p};

/// The heading every comparison section starts with (tests and readers look for it).
pub const HEADING: &str = "### Compared with the baseline";

fn side(s: Option<Spread>, unit: Unit) -> String {
    match s {
        None => "not measured".into(),
        Some(s) if s.min == s.max => format!("n={} · {}", s.n, unit.show(s.median)),
        Some(s) => format!(
            "n={} · {} ({}–{})",
            s.n,
            unit.show(s.median),
            unit.show(s.min),
            unit.show(s.max)
        ),
    }
}

fn delta(c: &Comparison, unit: Unit) -> String {
    match (c.base, c.new) {
        (Some(b), Some(n)) => {
            let d = n.median - b.median;
            let sign = if d > 0.0 {
                "+"
            } else if d < 0.0 {
                "−"
            } else {
                "±"
            };
            format!("{sign}{}", unit.show(d.abs()))
        }
        _ => "–".into(),
    }
}

fn decision(c: &Comparison) -> String {
    let what = match c.change {
        Change::Regressed => "❌ regressed",
        Change::Improved => "✅ improved",
        Change::Unchanged => "unchanged",
        Change::NotMeasured => "not measured",
    };
    let why = match c.decided_by {
        DecidedBy::EveryTrialAgainstNone => "in every trial of one side, none of the other",
        DecidedBy::RankSum => "rank-sum",
        DecidedBy::NoSignificantDifference => "no significant difference",
        DecidedBy::TooFewTrials => "too few trials for the test",
        DecidedBy::TooManyTrials => "too many trials to enumerate",
        DecidedBy::Missing => "one side did not measure it",
    };
    let p = c.p.map(|p| format!(", p={p:.3}")).unwrap_or_default();
    format!("{what} ({why}{p})")
}

fn rows(o: &mut String, metrics: &[MetricResult], only_changed: bool) -> usize {
    let mut hidden = 0;
    o.push_str("| metric | base | PR | delta | decision |\n|---|---|---|---|---|\n");
    for m in metrics {
        let c = &m.comparison;
        if c.base.is_none() && c.new.is_none() {
            continue;
        }
        let changed = matches!(c.change, Change::Regressed | Change::Improved);
        if only_changed && !changed {
            hidden += 1;
            continue;
        }
        let unit = m.metric.unit();
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} | {} |",
            m.metric,
            side(c.base, unit),
            side(c.new, unit),
            delta(c, unit),
            decision(c)
        );
    }
    hidden
}

/// The one-line statement of the rule, with its parameters and the smallest n it can decide at.
fn rule_line(r: &CompareReport) -> String {
    let t = &r.thresholds;
    let smallest = (1..=10)
        .find(|&n| min_p(n, n) <= t.alpha)
        .map(|n| format!("{n} against {n}"))
        .unwrap_or_else(|| "more than 10 a side".into());
    format!(
        "Rule: a failure count in every PR trial and in no base trial (or the reverse) is a regression (an improvement) at any n; otherwise an exact two-sided rank-sum (Mann–Whitney) test at α = {}, counted only when the medians differ by at least {} ms (intervals) or {} (counts); it can decide from {smallest} trials.",
        t.alpha, t.min_effect_ms, t.min_effect_count
    )
}

fn render_at(r: &CompareReport, only_changed: bool) -> String {
    let mut o = String::new();
    let (open, measured) = undecided(&r.arms);
    let verdict = if r.regressed {
        "❌ regressed".to_string()
    } else if r.compared == 0 {
        "⚠️ nothing comparable".to_string()
    } else if open > 0 {
        format!("⚠️ no regression found, {open} of {measured} metrics undecided")
    } else {
        "✅ no regression".to_string()
    };
    let _ = writeln!(o, "{HEADING}: {verdict}\n");
    match &r.base_run {
        Some(b) => {
            let _ = writeln!(o, "Baseline: [run {}]({}).\n", b.id, b.url);
        }
        None => {
            let _ = writeln!(o, "Baseline: `{}`.\n", r.base.replace('`', "'"));
        }
    }
    let mut hidden = 0;
    for a in &r.arms {
        let name = esc(&a.arm);
        match &a.result {
            ArmResult::Compared { trials, metrics } => {
                let _ = writeln!(
                    o,
                    "**{name}**: {} base trial(s) against {} PR trial(s)\n",
                    trials.0, trials.1
                );
                hidden += rows(&mut o, metrics, only_changed);
                o.push('\n');
            }
            ArmResult::OnlyInBase => {
                let _ = writeln!(o, "**{name}**: only in the baseline (not compared)\n");
            }
            ArmResult::OnlyInNew => {
                let _ = writeln!(
                    o,
                    "**{name}**: only in this run (new: no baseline to compare)\n"
                );
            }
            ArmResult::Incomparable { reason } => {
                let _ = writeln!(o, "**{name}**: not comparable: {}\n", esc(reason));
            }
        }
    }
    if hidden > 0 {
        let _ = writeln!(
            o,
            "{hidden} unchanged metric(s) left out to fit; `compare.md` in the artifact has every row.\n"
        );
    }
    let _ = writeln!(o, "{}", rule_line(r));
    o
}

/// The comparison section, with as much detail as fits in `max_chars`.
pub fn render_compare(r: &CompareReport, max_chars: usize) -> String {
    for only_changed in [false, true] {
        let s = render_at(r, only_changed);
        if s.chars().count() <= max_chars {
            return s;
        }
    }
    let note = "\n\n…(truncated to fit; compare.md in the artifact has the whole comparison)\n";
    let keep = max_chars.saturating_sub(note.chars().count());
    let mut out: String = render_at(r, true).chars().take(keep).collect();
    out.push_str(note);
    out
}

/// The one line shown instead of a comparison.
pub fn render_no_baseline(reason: &str) -> String {
    format!("{HEADING}: no baseline: {}\n", esc(reason))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::stats::report::BaseRun;
    use crate::stats::runs::{Thresholds, compare_runs};
    use crate::test_fixtures::report;

    fn drain_vs_exit_now() -> CompareReport {
        let base = BTreeMap::from([
            ("a".to_string(), vec![report("drain")]),
            ("gone".to_string(), vec![report("drain")]),
        ]);
        let new = BTreeMap::from([
            ("a".to_string(), vec![report("exit-now")]),
            ("b|new".to_string(), vec![report("drain")]),
        ]);
        let t = Thresholds::default();
        CompareReport::new(
            "base".into(),
            "new".into(),
            Some(BaseRun {
                id: 42,
                url: "https://github.com/o/r/actions/runs/42".into(),
            }),
            t,
            compare_runs(&base, &new, &t),
        )
    }

    #[test]
    fn a_regression_is_a_row_with_both_sides_the_delta_and_the_rule() {
        let md = render_compare(&drain_vs_exit_now(), 100_000);
        assert!(
            md.starts_with("### Compared with the baseline: ❌ regressed\n"),
            "{md}"
        );
        assert!(
            md.contains("[run 42](https://github.com/o/r/actions/runs/42)"),
            "{md}"
        );
        let severed: Vec<&str> = md
            .lines()
            .filter(|l| l.starts_with("| `tcp-severed`"))
            .collect();
        assert_eq!(severed.len(), 1, "{md}");
        assert!(
            severed[0].contains("| n=1 · 0 |") && severed[0].contains("❌ regressed"),
            "{md}"
        );
        assert!(md.contains("**gone**: only in the baseline"), "{md}");
        assert!(md.contains("**b\\|new**: only in this run"), "{md}");
        assert!(md.contains("α = 0.05") && md.contains("100 ms"), "{md}");
        assert!(md.contains("it can decide from 4 against 4 trials"), "{md}");
    }

    #[test]
    fn no_regression_is_said_clean_only_when_every_metric_was_decided() {
        let t = Thresholds::default();
        let one = |b: &str, n: &str| {
            CompareReport::new(
                "base".into(),
                "new".into(),
                None,
                t,
                compare_runs(
                    &BTreeMap::from([("a".to_string(), vec![report(b)])]),
                    &BTreeMap::from([("a".to_string(), vec![report(n)])]),
                    &t,
                ),
            )
        };
        // 1 against 1 of the same: nothing regressed, and the test could decide nothing.
        let md = render_compare(&one("drain", "drain"), 100_000);
        assert!(
            md.starts_with(
                "### Compared with the baseline: ⚠️ no regression found, 5 of 5 metrics undecided\n"
            ),
            "{md}"
        );
        // 4 against 4 of the same: every metric decided.
        let four =
            |k: &str| BTreeMap::from([("a".to_string(), (0..4).map(|_| report(k)).collect())]);
        let r = CompareReport::new(
            "base".into(),
            "new".into(),
            None,
            t,
            compare_runs(&four("drain"), &four("drain"), &t),
        );
        let md = render_compare(&r, 100_000);
        assert!(
            md.starts_with("### Compared with the baseline: ✅ no regression\n"),
            "{md}"
        );
    }

    #[test]
    fn not_measured_is_said_never_zero() {
        let c = Comparison {
            base: None,
            new: Some(Spread {
                n: 2,
                median: 1.5,
                min: 1.0,
                max: 2.0,
            }),
            p: None,
            change: Change::NotMeasured,
            decided_by: DecidedBy::Missing,
        };
        assert_eq!(side(c.base, Unit::Count), "not measured");
        assert_eq!(side(c.new, Unit::Milliseconds), "n=2 · 1.5 ms (1 ms–2 ms)");
        assert_eq!(delta(&c, Unit::Count), "–");
    }

    #[test]
    fn a_small_budget_drops_unchanged_rows_then_truncates() {
        let r = drain_vs_exit_now();
        let full = render_compare(&r, 100_000);
        let changed_only = render_at(&r, true);
        assert!(changed_only.len() < full.len());
        let fits = render_compare(&r, changed_only.chars().count());
        assert!(fits.contains("unchanged metric(s) left out"), "{fits}");
        let tiny = render_compare(&r, 200);
        assert!(
            tiny.chars().count() <= 200 && tiny.contains("truncated"),
            "{tiny}"
        );
    }

    #[test]
    fn no_baseline_is_one_line_naming_why() {
        assert_eq!(
            render_no_baseline("no successful run on main"),
            "### Compared with the baseline: no baseline: no successful run on main\n"
        );
    }
}
