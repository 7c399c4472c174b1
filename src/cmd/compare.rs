//! `drainwatch compare BASE NEW`: two run directories, arm by arm and metric by metric; a table
//! on stdout, `--json FILE` for machines (schema/compare.schema.json), `--markdown FILE` for
//! people. Exit 0 nothing regressed, 1 a metric regressed, 2 the runs could not be read or no
//! arm was comparable.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use drainwatch::cli::CompareArgs;
use drainwatch::console;
use drainwatch::evidence::markdown::compare::render_compare;
use drainwatch::evidence::stats::Spread;
use drainwatch::evidence::stats::report::CompareReport;
use drainwatch::evidence::stats::runs::{
    ArmComparison, ArmResult, Thresholds, compare_runs, undecided,
};
use drainwatch::gate::runs::load_run;

/// compare.md has no platform limit; this only keeps a runaway file bounded.
const MARKDOWN_MAX_CHARS: usize = 1_000_000;

fn spread(s: Option<Spread>) -> String {
    match s {
        None => "not measured".into(),
        Some(s) => format!("n={} median {} ({}–{})", s.n, s.median, s.min, s.max),
    }
}

/// A closed-set value by its JSON name (`regressed`, `too-few-trials`).
fn name<T: Serialize>(t: &T) -> String {
    serde_json::to_value(t)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn table(arms: &[ArmComparison]) -> String {
    let mut o = String::new();
    for a in arms {
        match &a.result {
            ArmResult::Compared { trials, metrics } => {
                o.push_str(&format!(
                    "{}: {} baseline trial(s) against {} new\n",
                    a.arm, trials.0, trials.1
                ));
                for m in metrics {
                    let c = &m.comparison;
                    if c.base.is_none() && c.new.is_none() {
                        continue;
                    }
                    let p = c.p.map(|p| format!(", p={p:.4}")).unwrap_or_default();
                    o.push_str(&format!(
                        "  {:<28} {:<36} → {:<36} {} ({}{p})\n",
                        m.metric,
                        spread(c.base),
                        spread(c.new),
                        name(&c.change),
                        name(&c.decided_by)
                    ));
                }
            }
            ArmResult::OnlyInBase => o.push_str(&format!("{}: only in the baseline\n", a.arm)),
            ArmResult::OnlyInNew => o.push_str(&format!("{}: only in the new run\n", a.arm)),
            ArmResult::Incomparable { reason } => {
                o.push_str(&format!("{}: not comparable: {reason}\n", a.arm))
            }
        }
    }
    o
}

pub fn cmd_compare(args: CompareArgs) -> Result<u8> {
    if args.alpha.is_nan() || args.alpha <= 0.0 || args.alpha >= 1.0 {
        bail!("--alpha {} is not between 0 and 1", args.alpha);
    }
    if args.min_effect_ms.is_nan() || args.min_effect_ms < 0.0 {
        bail!(
            "--min-effect-ms {} is not a duration of 0 or more",
            args.min_effect_ms
        );
    }
    let base = load_run(&args.base).context("the baseline run")?;
    let new = load_run(&args.new).context("the new run")?;
    let thresholds = Thresholds {
        alpha: args.alpha,
        min_effect_ms: args.min_effect_ms,
        ..Thresholds::default()
    };
    let report = CompareReport::new(
        args.base.display().to_string(),
        args.new.display().to_string(),
        None,
        thresholds,
        compare_runs(&base, &new, &thresholds),
    );
    print!("{}", table(&report.arms));
    if let Some(path) = &args.json {
        write_json(path, &report)?;
    }
    if let Some(path) = &args.markdown {
        write_file(path, &render_compare(&report, MARKDOWN_MAX_CHARS))?;
    }
    if report.compared == 0 {
        bail!("no arm of the two runs is comparable (see above): nothing was compared");
    }
    if report.regressed {
        println!("drainwatch compare: regressed");
        return Ok(1);
    }
    match undecided(&report.arms) {
        (0, _) => println!("drainwatch compare: no regression"),
        (open, measured) => println!(
            "drainwatch compare: no regression found, {open} of {measured} metrics undecided (see the table)"
        ),
    }
    Ok(0)
}

/// Writes compare.json.
pub fn write_json(path: &Path, report: &CompareReport) -> Result<()> {
    let text = serde_json::to_string_pretty(report).context("serialize the comparison")?;
    write_file(path, &(text + "\n"))
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("failed to write {}", path.display()))?;
    console::result!("comparison written to {}", path.display());
    Ok(())
}
