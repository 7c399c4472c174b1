//! `drainwatch report`: replay a trial's events.jsonl into report.json, report.html and the
//! table.

use anyhow::Result;

use drainwatch::cli::ReportArgs;
use drainwatch::console;
use drainwatch::evidence::{html, table};
use drainwatch::trial::{self, output};

pub fn cmd_report(args: ReportArgs) -> Result<u8> {
    let (report, bytes) = trial::replay(&args.events)?;
    // The table carries the findings block (after it on a probe trial, first on an attach one).
    print!("{}", table::render(&report));
    if let Some(dir) = &args.out {
        output::check_writable(dir)?;
        output::write_atomic(&dir.join("report.json"), &bytes)?;
        console::result!("report written to {}", dir.join("report.json").display());
        let page = html::trial_page(&report);
        output::write_atomic(&dir.join(html::HTML_FILE), page.as_bytes())?;
        console::result!(
            "HTML report written to {}",
            dir.join(html::HTML_FILE).display()
        );
    }
    Ok(0)
}
