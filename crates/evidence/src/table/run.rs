//! The cross-trial table of a run with several trials.

use std::fmt::Write;

use crate::format::{header, ms, or_nm, tabulate};
use crate::report::{Counts, RunSummary};

fn dsrtsw(c: &Counts) -> String {
    format!(
        "{}/{}/{}/{}/{}",
        c.drained, c.severed, c.read_timeout, c.survived_window, c.not_measured
    )
}

/// Renders the cross-trial table of a run with several trials.
pub fn render_run(run: &RunSummary) -> String {
    let mut rows = vec![header(&[
        "TRIAL",
        "STATUS",
        "BEHAVIOR",
        "TRIGGER",
        "TCP(d/s/rt/sw/nm)",
        "UDP(d/s/rt/sw/nm)",
        "EXIT",
        "TRIG->SIGTERM",
        "SIGTERM->READY_FALSE",
        "SIGTERM->LAST_FLOW",
    ])];
    for t in &run.trials {
        rows.push(vec![
            t.trial_id.clone(),
            t.status.as_str().into(),
            t.drain_behavior
                .map_or_else(|| "-".into(), |b| b.to_string()),
            t.trigger.to_string(),
            dsrtsw(&t.tcp),
            dsrtsw(&t.udp),
            or_nm(t.container_exit_code),
            ms(t.trigger_to_sigterm_ms),
            ms(t.sigterm_to_ready_false_ms),
            ms(t.sigterm_to_last_flow_terminal_ms),
        ]);
    }
    let mut o = String::from("RUN SUMMARY\n");
    o.push_str(&tabulate(&rows, "  "));
    o.push_str(
        "  d/s/rt/sw/nm = drained / severed / read-timeout / survived-window / not-measured\n",
    );
    if run.disagreements.is_empty() {
        o.push_str("  all trials agree on outcome counts, mechanisms and exit code\n");
    } else {
        o.push_str("  !! trials disagree:\n");
        for d in &run.disagreements {
            let _ = writeln!(o, "  !!   {d}");
        }
    }
    o
}
