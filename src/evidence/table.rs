//! The text table: ENVIRONMENT, CONFIG, TIMELINE, FLOWS, SUMMARY and CLOCKS, in the Go tool's
//! layout. A pure function of the report, so replays print the same bytes.

use std::fmt::Write;

use super::classify::Outcome;
use super::report::{Counts, Report, RunSummary, Summary};

/// Columns padded to the widest cell plus two, as Go's tabwriter with padding 2 does.
pub fn tabulate(rows: &[Vec<String>], indent: &str) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; cols];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let mut line = String::from(indent);
        for (i, c) in r.iter().enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                let pad = widths[i] + 2 - c.chars().count();
                line.push_str(c);
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn ms(v: Option<i64>) -> String {
    v.map_or_else(|| "not-measured".to_string(), |n| format!("{n} ms"))
}

fn or_nm(v: Option<&str>) -> String {
    v.map_or_else(|| "not-measured".to_string(), str::to_string)
}

/// Wraps text at `width` columns, each line prefixed by `indent`.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            let _ = writeln!(out, "{indent}{line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        let _ = writeln!(out, "{indent}{line}");
    }
    out
}

fn counts_rows(s: &Summary) -> Vec<Vec<String>> {
    let mut rows = vec![
        [
            "PROTO",
            "TOTAL",
            "DRAINED",
            "SEVERED",
            "READ_TIMEOUT",
            "SURVIVED_WINDOW",
            "NOT_MEASURED",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
    ];
    for (name, c) in [("tcp", &s.tcp), ("udp", &s.udp)] {
        let mut r = vec![name.to_string(), c.total.to_string()];
        r.extend(Outcome::ALL.iter().map(|o| c.get(*o).to_string()));
        rows.push(r);
    }
    rows
}

/// Renders one trial's report as the text table.
pub fn render(report: &Report) -> String {
    let mut o = String::new();
    let t = &report.trial;
    let e = &report.environment;
    let c = &t.config;
    let _ = writeln!(
        o,
        "drainwatch {} ({})  trial {}",
        report.drainwatch_version, report.git_commit, t.id
    );
    o.push_str(&"=".repeat(78));
    o.push('\n');

    o.push_str("ENVIRONMENT\n");
    let mut env = vec![
        vec!["platform".to_string(), e.platform.clone()],
        vec!["kubernetes".into(), or_nm(e.kubernetes_version.as_deref())],
        vec![
            "nodes".into(),
            e.node_count
                .map_or_else(|| "not-measured".to_string(), |n| n.to_string()),
        ],
    ];
    for n in &e.nodes {
        env.push(vec![
            format!("  {}", n.name),
            format!(
                "{} / {} / {}",
                or_nm(n.container_runtime.as_deref()),
                or_nm(n.kubelet_version.as_deref()),
                or_nm(n.os_image.as_deref())
            ),
        ]);
    }
    env.push(vec![
        "kube-proxy mode".into(),
        or_nm(e.kube_proxy_mode.as_deref()),
    ]);
    env.push(vec!["cni".into(), or_nm(e.cni.as_deref())]);
    env.push(vec![
        "host".into(),
        format!("{}/{} kernel {} ({})", e.os, e.arch, e.kernel, e.hostname),
    ]);
    env.push(vec!["started".into(), e.wall_clock_start.clone()]);
    o.push_str(&tabulate(&env, "  "));
    for w in &e.warnings {
        let _ = writeln!(o, "  WARNING: {w}");
    }

    o.push_str("\nCONFIG\n");
    let ns = c
        .namespace
        .as_deref()
        .map_or_else(String::new, |n| format!(" (ns {n})"));
    let cfg = vec![
        vec![
            "flows".to_string(),
            format!("{} tcp, {} udp", c.tcp_flows, c.udp_flows),
        ],
        vec![
            "drain behavior".into(),
            format!(
                "{} (DRAIN_MAX_SECONDS={})",
                c.drain_behavior
                    .map_or("not-measured (not drainwatch's probe)", |b| b.as_str()),
                c.drain_max_seconds
            ),
        ],
        vec!["trigger".into(), c.trigger.clone()],
        vec![
            "grace period".into(),
            format!("{} s", c.grace_period_seconds),
        ],
        vec![
            "settle / observe".into(),
            format!("{} s / {} s", c.settle_seconds, c.observe_timeout_seconds),
        ],
        vec![
            "target".into(),
            format!(
                "{} tcp:{} udp:{}{ns}",
                c.target_host, c.tcp_port, c.udp_port
            ),
        ],
        vec![
            "status".into(),
            match &t.status_detail {
                Some(d) => format!("{} ({d})", t.status.as_str()),
                None => t.status.as_str().to_string(),
            },
        ],
    ];
    o.push_str(&tabulate(&cfg, "  "));

    o.push_str("\nTIMELINE (t_ms relative to trigger_issued)\n");
    if t.timeline.is_empty() {
        o.push_str("  not-measured: no timeline events were recorded\n");
    } else {
        let mut rows = vec![vec![
            "T_MS".to_string(),
            "SOURCE".into(),
            "EVENT".into(),
            "DETAIL".into(),
        ]];
        for ev in &t.timeline {
            let tms = if ev.approximate {
                format!("{} ~", ev.t_ms)
            } else {
                ev.t_ms.to_string()
            };
            let detail = match (&ev.flow_id, &ev.detail) {
                (Some(f), Some(d)) => format!("{f} {d}"),
                (Some(f), None) => f.clone(),
                (None, Some(d)) => d.clone(),
                (None, None) => String::new(),
            };
            rows.push(vec![
                tms,
                ev.source.to_string(),
                ev.event.to_string(),
                detail,
            ]);
        }
        o.push_str(&tabulate(&rows, "  "));
        if t.timeline.iter().any(|e| e.approximate) {
            o.push_str(
                "  (~ marks an approximate timestamp mapped from another clock; see CLOCKS)\n",
            );
        }
    }

    if let Some(a) = &t.attach {
        let _ = writeln!(
            o,
            "\nATTACH ({} {}:{})",
            a.protocol,
            c.attach.as_ref().map_or("?", |x| x.host.as_str()),
            c.attach.as_ref().map_or(0, |x| x.port)
        );
        o.push_str(&super::attach::render::text(a));
    }

    o.push_str("\nFLOWS\n");
    if t.attach.is_some() {
        o.push_str("  none: an attach trial holds no probe flows (see ATTACH)\n");
    } else if t.flows.is_empty() {
        o.push_str("  not-measured: no flows were produced\n");
    } else {
        let mut rows = vec![
            [
                "ID",
                "PROTO",
                "OUTCOME",
                "MECHANISM",
                "T_TERMINAL",
                "LAST_SEQ",
                "DETAIL",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>(),
        ];
        for f in &t.flows {
            rows.push(vec![
                f.id.clone(),
                f.proto.as_str().into(),
                f.outcome.to_string(),
                f.mechanism.to_string(),
                ms(f.t_terminal_ms),
                f.last_heartbeat_seq
                    .or(f.last_answered_seq)
                    .map_or_else(|| "-".to_string(), |s| s.to_string()),
                f.detail.clone().unwrap_or_else(|| "-".into()),
            ]);
        }
        o.push_str(&tabulate(&rows, "  "));
    }

    o.push_str("\nSUMMARY\n");
    let s = &t.summary;
    o.push_str(&tabulate(&counts_rows(s), "  "));
    o.push('\n');
    let intervals = vec![
        vec![
            "trigger -> sigterm".to_string(),
            ms(s.trigger_to_sigterm_ms),
        ],
        vec![
            "sigterm -> endpoint ready:false".into(),
            ms(s.sigterm_to_ready_false_ms),
        ],
        vec![
            "trigger -> endpoint removed".into(),
            ms(s.trigger_to_endpoint_removed_ms),
        ],
        vec![
            "trigger -> container terminated".into(),
            ms(s.trigger_to_container_terminated_ms),
        ],
        vec![
            "sigterm -> last flow terminal".into(),
            ms(s.sigterm_to_last_flow_terminal_ms),
        ],
        vec![
            "container exit code".into(),
            s.container_exit_code
                .map_or_else(|| "not-measured".to_string(), |c| c.to_string()),
        ],
    ];
    o.push_str(&tabulate(&intervals, "  "));
    for n in &s.notes {
        let _ = writeln!(o, "  NOTE: {n}");
    }

    o.push_str("\nCLOCKS\n");
    o.push_str(&wrap(&t.clock_note, 74, "  "));
    let p = &t.clock.probe;
    let _ = writeln!(
        o,
        "  probe clock: mapping {} offset {} bound {} samples {}",
        serde_json::to_value(p.mapping)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        p.offset_ms
            .map_or_else(|| "not-measured".to_string(), |v| format!("{v} ms")),
        p.error_bound_ms
            .map_or_else(|| "not-measured".to_string(), |v| format!("±{v} ms")),
        p.samples
    );
    o.push_str(&wrap(&t.probe_clock_offset_note, 74, "  "));
    if let Some(c) = &t.clock.client {
        let _ = writeln!(
            o,
            "  client clock: mapping {} lines {}",
            serde_json::to_value(c.mapping)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            c.samples
        );
        o.push_str(&wrap(&c.note, 74, "  "));
    }
    o
}

fn dsrtsw(c: &Counts) -> String {
    format!(
        "{}/{}/{}/{}/{}",
        c.drained, c.severed, c.read_timeout, c.survived_window, c.not_measured
    )
}

/// Renders the cross-trial table of a run with several trials.
pub fn render_run(run: &RunSummary) -> String {
    let mut rows = vec![
        [
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
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
    ];
    for t in &run.trials {
        rows.push(vec![
            t.trial_id.clone(),
            t.status.as_str().into(),
            t.drain_behavior
                .map_or_else(|| "-".into(), |b| b.to_string()),
            t.trigger.clone(),
            dsrtsw(&t.tcp),
            dsrtsw(&t.udp),
            t.container_exit_code
                .map_or_else(|| "not-measured".to_string(), |c| c.to_string()),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tabulate_pads_like_tabwriter() {
        let rows = vec![
            vec!["ID".to_string(), "PROTO".into(), "X".into()],
            vec!["tcp-0001".to_string(), "tcp".into(), "".into()],
        ];
        assert_eq!(
            tabulate(&rows, "  "),
            "  ID        PROTO  X\n  tcp-0001  tcp\n"
        );
    }

    #[test]
    fn wrap_respects_width() {
        let w = wrap("aaa bbb ccc", 7, "> ");
        assert_eq!(w, "> aaa bbb\n> ccc\n");
    }
}
