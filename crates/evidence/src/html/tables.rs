//! The tables of a trial (header, findings, intervals, probe outcomes, mechanisms and flows,
//! the timeline rows) and the run's environment.

use std::fmt::Write;

use super::{esc, ms, name_of, opt, text};
use crate::classify::Outcome;
use crate::environment::Environment;
use crate::findings::{EvidenceRef, Finding};
use crate::flow::Proto;
use crate::report::{Counts, Report};

/// A table from a header and rows of already-escaped cells; an empty header is left out
/// (a table of names and values).
pub(super) fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut o = String::from("<div class=\"scroll\"><table>\n");
    if head.iter().any(|h| !h.is_empty()) {
        o.push_str("<tr>");
        for h in head {
            let _ = write!(o, "<th>{}</th>", esc(h));
        }
        o.push_str("</tr>\n");
    }
    for r in rows {
        o.push_str("<tr>");
        for c in r {
            let _ = write!(o, "<td>{c}</td>");
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table></div>\n");
    o
}

/// What ran: status, trigger, platform, target, and the whole configuration folded away.
pub(super) fn trial_header(r: &Report) -> String {
    let t = &r.trial;
    let c = &t.config;
    let mut rows = vec![
        vec!["status".into(), esc(t.status.as_str())],
        vec!["trigger".into(), esc(&c.trigger.to_string())],
        vec!["platform".into(), esc(c.platform.as_str())],
        vec![
            "grace period".into(),
            format!("{} s", c.grace_period_seconds),
        ],
    ];
    if let Some(why) = &t.status_detail {
        rows.insert(1, vec!["status detail".into(), esc(why)]);
    }
    if let Some(b) = c.drain_behavior {
        rows.push(vec!["probe behaviour".into(), esc(b.as_str())]);
    }
    if let Some(a) = &c.attach {
        rows.push(vec!["target".into(), esc(&name_of(&a.target))]);
        rows.push(vec!["protocol".into(), esc(a.protocol.as_str())]);
    }
    let config = serde_json::to_string_pretty(c).unwrap_or_default();
    format!(
        "{}<details><summary>configuration</summary><pre class=\"mono\">{}</pre></details>\n",
        table(&["", ""], &rows),
        esc(&config)
    )
}

fn reference(r: &EvidenceRef) -> String {
    match r {
        EvidenceRef::TimelineRow { index, event } => {
            format!("timeline[{index}] {}", event.as_str())
        }
        EvidenceRef::Flow { id } => format!("flow {id}"),
        EvidenceRef::AttachFailure { index } => format!("attach.failures[{index}]"),
        EvidenceRef::Pod { pod } => format!("pod {pod}"),
        EvidenceRef::Field { path } => path.clone(),
    }
}

/// References shown per finding; the rest are counted.
const SHOWN_REFS: usize = 12;

/// The findings: id, severity, what happened, why, the change and its derived number.
pub(super) fn findings(list: &[Finding]) -> String {
    let mut o = String::from("<h3>Findings</h3>\n");
    if list.is_empty() {
        o.push_str(
            "<p class=\"nm\">No finding: the report holds too little evidence to state one.</p>\n",
        );
        return o;
    }
    for f in list {
        let _ = writeln!(
            o,
            "<div class=\"finding {}\" data-finding=\"{}\" data-severity=\"{}\">\
             <p><span class=\"sev\">{}</span><span class=\"id\">{}</span></p>\
             <p><b>{}</b></p><p>Why: {}</p>",
            f.severity.as_str(),
            f.id.as_str(),
            f.severity.as_str(),
            f.severity.as_str(),
            f.id.as_str(),
            esc(&f.title),
            esc(&f.why)
        );
        if let Some(rec) = &f.recommendation {
            let _ = write!(o, "<p>Change: {}", esc(&rec.text));
            if let Some(d) = &rec.derived {
                let _ = write!(
                    o,
                    " <b>{} {}</b> <span class=\"refs\">(rule: {})</span>",
                    d.value,
                    d.unit.as_str(),
                    esc(&d.rule)
                );
            }
            o.push_str("</p>");
        }
        let mut refs: Vec<String> = f
            .evidence
            .iter()
            .take(SHOWN_REFS)
            .map(|r| esc(&reference(r)))
            .collect();
        if f.evidence.len() > SHOWN_REFS {
            refs.push(format!("and {} more", f.evidence.len() - SHOWN_REFS));
        }
        let _ = writeln!(
            o,
            "<p class=\"refs\">Evidence: {}</p></div>",
            refs.join(", ")
        );
    }
    o
}

/// The trial's intervals, "not measured" where an end was not observed.
pub(super) fn intervals(r: &Report) -> String {
    let s = &r.trial.summary;
    let rows = vec![
        vec!["trigger → SIGTERM".into(), ms(s.trigger_to_sigterm_ms)],
        vec![
            "SIGTERM → endpoint not ready".into(),
            ms(s.sigterm_to_ready_false_ms),
        ],
        vec![
            "SIGTERM → last flow ended".into(),
            ms(s.sigterm_to_last_flow_terminal_ms),
        ],
        vec![
            "trigger → endpoint removed".into(),
            ms(s.trigger_to_endpoint_removed_ms),
        ],
        vec![
            "trigger → container terminated".into(),
            ms(s.trigger_to_container_terminated_ms),
        ],
        vec!["container exit code".into(), opt(s.container_exit_code)],
    ];
    let mut o = format!(
        "<h3>Intervals</h3>\n{}",
        table(&["interval", "value"], &rows)
    );
    o.push_str(&notes(&s.notes));
    o
}

/// Sentences a reader needs, as a list.
pub(super) fn notes(notes: &[String]) -> String {
    if notes.is_empty() {
        return String::new();
    }
    let mut o = String::from("<ul class=\"refs\">");
    for n in notes {
        let _ = write!(o, "<li>{}</li>", esc(n));
    }
    o.push_str("</ul>\n");
    o
}

fn counts_row(name: &str, c: &Counts) -> Vec<String> {
    let mut row = vec![esc(name), c.total.to_string()];
    row.extend(Outcome::ALL.iter().map(|o| c.get(*o).to_string()));
    row
}

/// A probe trial's outcomes, mechanisms and flows.
pub(super) fn probe(r: &Report) -> String {
    let s = &r.trial.summary;
    let mut head = vec!["proto", "total"];
    head.extend(Outcome::ALL.iter().map(|o| o.as_str()));
    let mut o = format!(
        "<h3>Outcomes</h3>\n{}",
        table(
            &head,
            &[counts_row("tcp", &s.tcp), counts_row("udp", &s.udp)]
        )
    );
    let mut rows = Vec::new();
    for (proto, m) in &s.mechanisms {
        for (mech, n) in m {
            rows.push(vec![esc(proto.as_str()), esc(mech.as_str()), n.to_string()]);
        }
    }
    o.push_str("<h3>Mechanisms</h3>\n");
    if rows.is_empty() {
        o.push_str("<p class=\"nm\">No flow.</p>\n");
    } else {
        o.push_str(&table(&["proto", "mechanism", "flows"], &rows));
    }
    let rows: Vec<Vec<String>> = r
        .trial
        .flows
        .iter()
        .map(|f| {
            let seq = match f.proto {
                Proto::Tcp => opt(f.last_heartbeat_seq),
                Proto::Udp => opt(f.last_answered_seq),
            };
            let rehomed = f.rehomed.as_ref().map_or_else(
                || "–".to_string(),
                |h| {
                    esc(&format!(
                        "{} → {} at {} ms",
                        h.from_instance, h.to_instance, h.first_new_reply_t_ms
                    ))
                },
            );
            vec![
                format!("<span class=\"mono\">{}</span>", esc(&f.id)),
                esc(f.proto.as_str()),
                esc(f.outcome.as_str()),
                esc(f.mechanism.as_str()),
                ms(f.connected_t_ms),
                match (f.t_terminal_ms, f.outcome) {
                    (None, Outcome::SurvivedObservationWindow) => "open at the window's end".into(),
                    (t, _) => ms(t),
                },
                ms(f.last_data_t_ms),
                seq,
                text(f.instance.as_deref()),
                rehomed,
                text(f.detail.as_deref()),
            ]
        })
        .collect();
    let _ = write!(
        o,
        "<details open><summary>Flows ({})</summary>\n{}</details>\n",
        rows.len(),
        table(
            &[
                "flow",
                "proto",
                "outcome",
                "mechanism",
                "connected",
                "ended",
                "last data",
                "last seq",
                "instance",
                "re-homed",
                "detail"
            ],
            &rows
        )
    );
    o
}

/// Every timeline row, folded away.
pub(super) fn timeline_rows(r: &Report) -> String {
    let rows: Vec<Vec<String>> = r
        .trial
        .timeline
        .iter()
        .enumerate()
        .map(|(i, e)| {
            vec![
                i.to_string(),
                format!("{}{}", e.t_ms, if e.approximate { " ≈" } else { "" }),
                esc(e.source.as_str()),
                format!("<span class=\"mono\">{}</span>", esc(e.event.as_str())),
                text(e.flow_id.as_deref()),
                text(e.detail.as_deref()),
            ]
        })
        .collect();
    format!(
        "<details><summary>Timeline rows ({}; t in ms from the trigger, ≈ approximate)</summary>\n{}</details>\n",
        rows.len(),
        table(&["#", "t_ms", "source", "event", "flow", "detail"], &rows)
    )
}

/// What the run ran on.
pub(super) fn environment(e: &Environment) -> String {
    let mut rows = vec![
        vec!["platform".into(), esc(&e.platform)],
        vec!["kubernetes".into(), opt(e.kubernetes_version.as_deref())],
        vec!["nodes".into(), opt(e.node_count)],
        vec!["kube-proxy mode".into(), opt(e.kube_proxy_mode.as_deref())],
        vec!["CNI".into(), opt(e.cni.as_deref())],
        vec![
            "drainwatch".into(),
            esc(&format!("{} ({})", e.drainwatch_version, e.git_commit)),
        ],
        vec![
            "orchestrator host".into(),
            esc(&format!("{} {} {} {}", e.hostname, e.os, e.arch, e.kernel)),
        ],
        vec!["probe image".into(), text(e.probe_image.as_deref())],
        vec!["started".into(), esc(&e.wall_clock_start)],
        vec!["run id".into(), text(e.run_id.as_deref())],
    ];
    if let Some(c) = &e.cluster {
        rows.insert(
            2,
            vec![
                "cluster".into(),
                esc(&format!(
                    "{} (context {})",
                    c.server,
                    c.context.as_deref().unwrap_or("in-cluster")
                )),
            ],
        );
    }
    if let Some(t) = &e.cluster_timing {
        rows.push(vec![
            "cluster timing".into(),
            format!(
                "<span class=\"mono\">{}</span>",
                esc(&serde_json::Value::Object(t.clone()).to_string())
            ),
        ]);
    }
    let mut o = format!("<h2>Environment</h2>\n{}", table(&["", ""], &rows));
    if !e.nodes.is_empty() {
        let nodes: Vec<Vec<String>> = e
            .nodes
            .iter()
            .map(|n| {
                vec![
                    esc(&n.name),
                    opt(n.kubelet_version.as_deref()),
                    opt(n.container_runtime.as_deref()),
                    opt(n.os_image.as_deref()),
                    opt(n.kernel_version.as_deref()),
                    opt(n.architecture.as_deref()),
                ]
            })
            .collect();
        o.push_str(&table(
            &["node", "kubelet", "runtime", "OS image", "kernel", "arch"],
            &nodes,
        ));
    }
    if !e.warnings.is_empty() {
        o.push_str("<h3>Not recorded</h3>\n");
        o.push_str(&notes(&e.warnings));
    }
    o
}
