//! The text table: ENVIRONMENT, CONFIG, TIMELINE, FLOWS, SUMMARY and CLOCKS, in the Go tool's
//! layout. A pure function of the report, so replays print the same bytes.

mod flows;
mod run;
mod sections;

pub use flows::{FlowColumn, flow_rows};
pub use run::render_run;

use std::fmt::Write;

use super::report::Report;

/// Renders one trial's report as the text table.
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
    o.push_str(&sections::environment(&report.environment));
    o.push_str(&sections::config(t));
    o.push_str(&sections::timeline(t));
    o.push_str(&sections::attach(t));
    o.push_str(&flows::section(t));
    o.push_str(&sections::summary(&t.summary));
    o.push_str(&sections::clocks(t));
    o
}
