//! `drainwatch report`: replay a trial's events.jsonl into report.json and the table.

use anyhow::Result;

use drainwatch::cli::ReportArgs;
use drainwatch::evidence::table;
use drainwatch::trial::{self, output};

pub fn cmd_report(args: ReportArgs) -> Result<u8> {
    let (report, bytes) = trial::replay(&args.events)?;
    print!("{}", table::render(&report));
    if let Some(dir) = &args.out {
        output::check_writable(dir)?;
        output::write_atomic(&dir.join("report.json"), &bytes)?;
        eprintln!("report written to {}", dir.join("report.json").display());
    }
    Ok(0)
}
