//! `drainwatch report`: replay a trial's events.jsonl into report.json, report.html and the
//! table.

use anyhow::Result;

use drainwatch::cli::ReportArgs;
use drainwatch::evidence::{findings, html, table};
use drainwatch::trial::{self, output};

pub fn cmd_report(args: ReportArgs) -> Result<u8> {
    let (report, bytes) = trial::replay(&args.events)?;
    print!("{}", table::render(&report));
    // Findings show on the terminal only for now; report.json and the CI outputs stay as they are.
    print!("\n{}", findings::render::block(&report));
    if let Some(dir) = &args.out {
        output::check_writable(dir)?;
        output::write_atomic(&dir.join("report.json"), &bytes)?;
        eprintln!("report written to {}", dir.join("report.json").display());
        let page = html::trial_page(&report);
        output::write_atomic(&dir.join(html::HTML_FILE), page.as_bytes())?;
        eprintln!(
            "HTML report written to {}",
            dir.join(html::HTML_FILE).display()
        );
    }
    Ok(0)
}
