//! The clocks table: how each source's times were placed on the orchestrator's clock, with a row
//! per client clock domain when client shards ran on more than one kernel.

use super::tables::table;
use super::{NOT_MEASURED, esc, name_of};
use crate::clock::{ClientDomainClock, SourceClock, ns_to_ms_f64};
use crate::report::{Report, TrialKind};

/// The clocks as a collapsed section: a row per source, then a row per client clock domain.
pub(super) fn clocks(r: &Report) -> String {
    let c = &r.trial.clock;
    let mut rows = Vec::new();
    // An attach trial runs no probe: its probe row would be a row of "not measured".
    let probe = (r.trial.kind() == TrialKind::Probe).then_some(&c.probe);
    for (name, sc) in [("probe", probe), ("client", c.client.as_ref())] {
        if let Some(sc) = sc {
            rows.push(source_row(name, sc));
        }
    }
    for d in c.client_domains.iter().flatten() {
        rows.push(domain_row(d));
    }
    format!(
        "<details><summary>Clocks (timebase: {})</summary>\n{}<p class=\"refs\">{}</p><p class=\"refs\">{}</p></details>\n",
        esc(&c.timebase),
        table(
            &[
                "source",
                "mapping",
                "approximate",
                "offset",
                "bound",
                "samples",
                "note"
            ],
            &rows
        ),
        esc(&r.trial.clock_note),
        if r.trial.kind() == TrialKind::Probe {
            esc(&r.trial.probe_clock_offset_note)
        } else {
            String::new()
        }
    )
}

fn source_row(name: &str, sc: &SourceClock) -> Vec<String> {
    vec![
        esc(name),
        esc(&name_of(&sc.mapping)),
        yes_no(sc.approximate),
        offset(sc.offset_ms),
        bound(sc.error_bound_ms),
        sc.samples.to_string(),
        esc(&sc.note),
    ]
}

/// One kernel's client lines: which node they came from when known, else the boot id.
fn domain_row(d: &ClientDomainClock) -> Vec<String> {
    let short: String = d.boot_id.chars().take(8).collect();
    let source = match &d.node {
        Some(node) => format!("client on {node}"),
        None => format!("client kernel {short}"),
    };
    vec![
        esc(&source),
        esc(&name_of(&d.mapping)),
        yes_no(d.approximate),
        offset(d.offset_ns.map(ns_to_ms_f64)),
        bound(d.error_bound_ms),
        format!("{} lines", d.lines),
        esc(&format!(
            "one clock domain of the client lines: boot id {}",
            d.boot_id
        )),
    ]
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}

fn offset(ms: Option<f64>) -> String {
    ms.map_or_else(|| NOT_MEASURED.to_string(), |v| format!("{v} ms"))
}

fn bound(ms: Option<f64>) -> String {
    ms.map_or_else(|| NOT_MEASURED.to_string(), |v| format!("±{v} ms"))
}
