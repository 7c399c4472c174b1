//! The text table of one trial, with its FINDINGS: for a probe trial ENVIRONMENT, CONFIG,
//! TIMELINE, FLOWS, SUMMARY and CLOCKS in the Go tool's layout; for an attach trial ATTACH and
//! FINDINGS first, then CONFIG, TIMELINE, ENVIRONMENT and the client's CLOCKS. A pure function
//! of the report, so replays print the same bytes.

mod flows;
mod run;
mod sections;
#[cfg(test)]
mod tests;

pub use flows::{FlowColumn, flow_rows};
pub use run::render_run;

use std::fmt::Write;

use super::findings;
use super::report::{Report, TrialKind};

/// Renders one trial's report as the text table. An attach trial shows what it measured first
/// (ATTACH, then FINDINGS) and none of the probe's sections (flows, their counts, the drain
/// behaviour, the probe's clock); a probe trial shows the Go tool's layout, then FINDINGS.
pub fn render(report: &Report) -> String {
    let t = &report.trial;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "drainwatch {} ({})  trial {}",
        report.drainwatch_version, report.git_commit, t.id
    );
    o.push_str(&"=".repeat(78));
    o.push('\n');
    match t.kind() {
        TrialKind::Attach => {
            o.push_str(&sections::attach(t));
            o.push('\n');
            o.push_str(&findings::render::block(report));
            o.push_str(&sections::config_attach(t));
            o.push_str(&sections::timeline(t));
            o.push('\n');
            o.push_str(&sections::environment(&report.environment));
            o.push_str(&sections::clocks(t));
        }
        TrialKind::Probe => {
            o.push_str(&sections::environment(&report.environment));
            o.push_str(&sections::config(t));
            o.push_str(&sections::timeline(t));
            o.push_str(&flows::section(t));
            o.push_str(&sections::summary(&t.summary));
            o.push_str(&sections::clocks(t));
            o.push('\n');
            o.push_str(&findings::render::block(report));
        }
    }
    o
}
