//! The tables of an attach trial: requests, dials and held connections; failures by mechanism
//! and by phase; the pods; every failure and every connection. Protocols and mechanisms are
//! written from their enums' names, so a new one needs no change here.

use std::fmt::Write;

use super::tables::{notes, table};
use super::{esc, ms, name_of, opt, text};
use crate::attach::render::closed_phrase;
use crate::attach::section::{AttachReport, CloseKind, ConnOutcome};

fn latency(v: Option<f64>) -> String {
    opt(v.map(|x| format!("{x:.1} ms")))
}

/// Every attach table.
pub(super) fn all(a: &AttachReport) -> String {
    let mut o = format!(
        "<h3>Outcomes</h3>\n<p>Protocol <b>{}</b>; window {} to {}.</p>\n",
        esc(a.protocol.as_str()),
        ms(a.window_start_t_ms),
        ms(a.window_end_t_ms)
    );
    let not_measured = || super::NOT_MEASURED.to_string();
    let mut rows = Vec::new();
    match &a.requests {
        Some(r) => rows.push(vec![
            "requests".into(),
            r.total.to_string(),
            r.ok.to_string(),
            r.failed.to_string(),
            format!(
                "p50 {}, p99 {}, max {}",
                latency(r.latency_p50_ms),
                latency(r.latency_p99_ms),
                latency(r.latency_max_ms)
            ),
        ]),
        None => rows.push(vec![
            "requests".into(),
            not_measured(),
            not_measured(),
            not_measured(),
            "–".into(),
        ]),
    }
    match &a.dials {
        Some(d) => {
            let by: Vec<String> = d
                .served_by_instance
                .iter()
                .map(|(i, n)| format!("{} {n}", esc(i)))
                .collect();
            rows.push(vec![
                "new connections (dials)".into(),
                d.total.to_string(),
                d.served.to_string(),
                d.failed.to_string(),
                if by.is_empty() {
                    "–".into()
                } else {
                    format!("served by {}", by.join(", "))
                },
            ]);
        }
        None => rows.push(vec![
            "new connections (dials)".into(),
            not_measured(),
            not_measured(),
            not_measured(),
            "prober off".into(),
        ]),
    }
    let c = &a.connections;
    rows.push(vec![
        "held connections".into(),
        c.total.to_string(),
        c.graceful_close.to_string(),
        c.severed.to_string(),
        format!(
            "{}; {} open at the window's end, {} not measured, {} reopened",
            esc(&closed_phrase(c)),
            c.survived_observation_window,
            c.not_measured,
            c.reopened
        ),
    ]);
    o.push_str(&table(
        &[
            "what",
            "total",
            "ok / served / closed",
            "failed / severed",
            "",
        ],
        &rows,
    ));
    if let Some(w) = &a.longest_failure_window {
        let _ = writeln!(
            o,
            "<p>Longest run of failures: {} failures from {} ms to {} ms ({} ms).</p>",
            w.failures, w.start_t_ms, w.end_t_ms, w.duration_ms
        );
    } else {
        o.push_str("<p>Longest run of failures: none (nothing failed).</p>\n");
    }
    o.push_str(&mechanisms(a));
    o.push_str(&pods(a));
    o.push_str(&super::ingress::section(
        a.ingress.as_ref(),
        a.kube_proxy_views(),
    ));
    o.push_str(&notes(&a.notes));
    o.push_str(&failures(a));
    o.push_str(&connections(a));
    o.push_str(&watches(a));
    o
}

/// The held gRPC Watches (`--grpc-watch`): how each ended, open when any was cut.
fn watches(a: &AttachReport) -> String {
    let Some(w) = &a.watches else {
        return String::new();
    };
    let rows: Vec<Vec<String>> = w
        .records
        .iter()
        .map(|r| {
            let how = match (&r.mechanism, &r.grpc_code) {
                (Some(m), _) => esc(m.as_str()),
                (None, Some(c)) => format!("status {}", esc(c)),
                (None, None) => "–".into(),
            };
            vec![
                format!("<span class=\"mono\">{}</span>", esc(&r.flow_id)),
                r.generation.to_string(),
                esc(r.outcome.as_str()),
                how,
                text(r.h2_code.as_deref()),
                ms(r.opened_t_ms),
                ms(r.not_serving_t_ms),
                ms(r.ended_t_ms),
                text(r.pod.as_deref()),
                text(r.phase.map(|p| p.as_str())),
            ]
        })
        .collect();
    format!(
        "<details{}><summary>gRPC Watches ({}: {} drained, {} ended-with-status, {} cut)</summary>\n{}</details>\n",
        if w.cut > 0 { " open" } else { "" },
        w.total,
        w.drained,
        w.ended_with_status,
        w.cut,
        table(
            &[
                "flow",
                "generation",
                "outcome",
                "ended by",
                "h2 code",
                "opened",
                "NOT_SERVING",
                "ended",
                "pod",
                "phase"
            ],
            &rows
        )
    )
}

fn mechanisms(a: &AttachReport) -> String {
    let mut rows = Vec::new();
    if let Some(r) = &a.requests {
        for (m, n) in &r.failed_by_mechanism {
            rows.push(vec!["request".into(), esc(m.as_str()), n.to_string()]);
        }
    }
    if let Some(d) = &a.dials {
        for (m, n) in &d.failed_by_result {
            rows.push(vec!["dial".into(), esc(m.as_str()), n.to_string()]);
        }
    }
    for (m, n) in &a.connections.severed_by_mechanism {
        rows.push(vec![
            "held connection".into(),
            esc(m.as_str()),
            n.to_string(),
        ]);
    }
    let mut o = String::from("<h3>Mechanisms</h3>\n");
    if rows.is_empty() {
        o.push_str("<p>No failure.</p>\n");
    } else {
        o.push_str(&table(&["kind", "mechanism", "failures"], &rows));
    }
    let phases: Vec<Vec<String>> = a
        .failures_by_phase
        .iter()
        .map(|(p, n)| vec![esc(p.as_str()), n.to_string()])
        .collect();
    if !phases.is_empty() {
        o.push_str(&table(&["phase", "failures"], &phases));
    }
    o
}

fn pods(a: &AttachReport) -> String {
    let rows: Vec<Vec<String>> = a
        .pods
        .iter()
        .map(|p| {
            vec![
                format!("<span class=\"mono\">{}</span>", esc(&p.pod)),
                ms(p.deletion_requested_t_ms),
                ms(p.endpoint_not_ready_t_ms),
                ms(p.endpoint_removed_t_ms),
                ms(p.exited_t_ms),
                opt(p.exit_code),
                p.failures.to_string(),
            ]
        })
        .collect();
    let mut o = String::from("<h3>Pods</h3>\n");
    if rows.is_empty() {
        o.push_str("<p class=\"nm\">No pod was seen terminating.</p>\n");
        return o;
    }
    o.push_str(&table(
        &[
            "pod",
            "deletion",
            "endpoint not ready",
            "endpoint removed",
            "exited",
            "exit code",
            "failures",
        ],
        &rows,
    ));
    o
}

fn failures(a: &AttachReport) -> String {
    let rows: Vec<Vec<String>> = a
        .failures
        .iter()
        .enumerate()
        .map(|(i, f)| {
            vec![
                i.to_string(),
                format!("{} ms", f.t_ms),
                esc(&name_of(&f.kind)),
                format!("<span class=\"mono\">{}</span>", esc(&f.flow_id)),
                opt(f.seq),
                esc(f.mechanism.as_str()),
                text(f.status.map(|s| s.to_string()).as_deref()),
                text(f.errno.as_deref()),
                text(f.instance.as_deref()),
                text(f.pod.as_deref()),
                esc(f.phase.as_str()),
            ]
        })
        .collect();
    format!(
        "<details{}><summary>Failures ({})</summary>\n{}</details>\n",
        if rows.is_empty() { "" } else { " open" },
        rows.len(),
        table(
            &[
                "#",
                "t",
                "kind",
                "flow",
                "seq",
                "mechanism",
                "status",
                "errno",
                "instance",
                "pod",
                "phase"
            ],
            &rows
        )
    )
}

/// A held connection's outcome as a reader should take it: a close the server ended by a bare
/// FIN is not called graceful (the kernel of a dying process sends the same).
fn outcome_word(o: ConnOutcome, close: Option<CloseKind>) -> String {
    match (o, close) {
        (ConnOutcome::GracefulClose, Some(k)) => format!("closed: {k}"),
        (ConnOutcome::GracefulClose, None) => "closed (announced or not: not measured)".into(),
        (o, _) => o.as_str().into(),
    }
}

fn connections(a: &AttachReport) -> String {
    let rows: Vec<Vec<String>> = a
        .connection_records
        .iter()
        .map(|c| {
            let close = match (c.close_code, &c.close_reason) {
                (Some(code), Some(r)) => esc(&format!("{code} {r}")),
                (Some(code), None) => code.to_string(),
                _ => "–".into(),
            };
            vec![
                format!("<span class=\"mono\">{}</span>", esc(&c.flow_id)),
                c.generation.to_string(),
                esc(&outcome_word(c.outcome, c.close)),
                text(c.result.as_deref()),
                ms(c.opened_t_ms),
                match (c.ended_t_ms, c.outcome) {
                    (None, ConnOutcome::SurvivedObservationWindow) => {
                        "open at the window's end".into()
                    }
                    (t, _) => ms(t),
                },
                close,
            ]
        })
        .collect();
    format!(
        "<details><summary>Held connections ({})</summary>\n{}</details>\n",
        rows.len(),
        table(
            &[
                "flow",
                "generation",
                "outcome",
                "result",
                "opened",
                "ended",
                "close frame"
            ],
            &rows
        )
    )
}
