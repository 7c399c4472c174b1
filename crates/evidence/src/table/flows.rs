//! The per-flow outcome table: one row per flow, in the columns a renderer asks for. The text
//! table and the gate's JUnit system-out both print it, so they can never disagree on a flow.

use crate::format::{header, ms, tabulate};
use crate::report::{FlowReport, Trial};

/// A column of the per-flow table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowColumn {
    /// `tcp-0001`.
    Id,
    /// tcp or udp.
    Proto,
    /// How the flow ended.
    Outcome,
    /// What ended it.
    Mechanism,
    /// When it ended, trigger-relative.
    TTerminal,
    /// The last heartbeat (tcp) or answered datagram (udp).
    LastSeq,
    /// The classifier's detail.
    Detail,
}

impl FlowColumn {
    /// The columns of the text table's FLOWS section.
    pub const TABLE: [Self; 7] = [
        Self::Id,
        Self::Proto,
        Self::Outcome,
        Self::Mechanism,
        Self::TTerminal,
        Self::LastSeq,
        Self::Detail,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::Id => "ID",
            Self::Proto => "PROTO",
            Self::Outcome => "OUTCOME",
            Self::Mechanism => "MECHANISM",
            Self::TTerminal => "T_TERMINAL",
            Self::LastSeq => "LAST_SEQ",
            Self::Detail => "DETAIL",
        }
    }

    fn cell(self, f: &FlowReport) -> String {
        match self {
            Self::Id => f.id.clone(),
            Self::Proto => f.proto.as_str().into(),
            Self::Outcome => f.outcome.to_string(),
            Self::Mechanism => f.mechanism.to_string(),
            Self::TTerminal => ms(f.t_terminal_ms),
            Self::LastSeq => f
                .last_heartbeat_seq
                .or(f.last_answered_seq)
                .map_or_else(|| "-".to_string(), |s| s.to_string()),
            Self::Detail => f.detail.clone().unwrap_or_else(|| "-".into()),
        }
    }
}

/// The header row and one row per flow, in `columns`.
pub fn flow_rows(flows: &[FlowReport], columns: &[FlowColumn]) -> Vec<Vec<String>> {
    let names: Vec<&str> = columns.iter().map(|c| c.name()).collect();
    let mut rows = vec![header(&names)];
    rows.extend(
        flows
            .iter()
            .map(|f| columns.iter().map(|c| c.cell(f)).collect()),
    );
    rows
}

/// FLOWS: one row per probe flow (a probe trial's section: an attach trial holds none).
pub(super) fn section(t: &Trial) -> String {
    let mut o = String::from("\nFLOWS\n");
    if t.flows.is_empty() {
        o.push_str("  not-measured: no flows were produced\n");
    } else {
        o.push_str(&tabulate(&flow_rows(&t.flows, &FlowColumn::TABLE), "  "));
    }
    o
}
