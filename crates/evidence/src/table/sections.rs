//! The sections of one trial's text table, each a function of the report.

use std::fmt::Write;

use crate::attach;
use crate::classify::Outcome;
use crate::environment::Environment;
use crate::format::{header, kebab, ms, or_nm, tabulate, wrap};
use crate::report::{Summary, Trial, TrialKind};

/// ENVIRONMENT: where the trial ran.
pub(super) fn environment(e: &Environment) -> String {
    let mut o = String::from("ENVIRONMENT\n");
    let mut env = vec![
        vec!["platform".to_string(), e.platform.clone()],
        vec!["kubernetes".into(), or_nm(e.kubernetes_version.as_deref())],
        vec!["nodes".into(), or_nm(e.node_count)],
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
    o
}

/// CONFIG: what the trial was asked to do, and how it ended.
pub(super) fn config(t: &Trial) -> String {
    let c = &t.config;
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
        vec!["trigger".into(), c.trigger.to_string()],
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
    format!("\nCONFIG\n{}", tabulate(&cfg, "  "))
}

/// CONFIG of an attach trial: what was dialled and how the pods were terminated; no probe
/// flows, drain behaviour or probe ports, which an attach trial does not have.
pub(super) fn config_attach(t: &Trial) -> String {
    let c = &t.config;
    let ns = c
        .namespace
        .as_deref()
        .map_or_else(String::new, |n| format!(" (client ns {n})"));
    let mut cfg = Vec::new();
    if let Some(a) = &c.attach {
        cfg.push(vec![
            "attach".to_string(),
            format!(
                "{} {}:{}{}",
                a.protocol,
                a.host,
                a.port,
                a.path.as_deref().unwrap_or("")
            ),
        ]);
        cfg.push(vec![
            "clients".into(),
            format!(
                "{} held connections every {} ms, new-connection prober {} dials/s",
                a.tcp_flows, a.interval_ms, a.dial_rate
            ),
        ]);
    }
    cfg.extend([
        vec!["trigger".into(), c.trigger.to_string()],
        vec![
            "grace period".into(),
            format!("{} s", c.grace_period_seconds),
        ],
        vec![
            "settle / observe".into(),
            format!("{} s / {} s", c.settle_seconds, c.observe_timeout_seconds),
        ],
        vec!["target".into(), format!("{}{ns}", c.target_host)],
        vec![
            "status".into(),
            match &t.status_detail {
                Some(d) => format!("{} ({d})", t.status.as_str()),
                None => t.status.as_str().to_string(),
            },
        ],
    ]);
    format!("\nCONFIG\n{}", tabulate(&cfg, "  "))
}

/// TIMELINE: every event, in trigger-relative time.
pub(super) fn timeline(t: &Trial) -> String {
    let mut o = String::from("\nTIMELINE (t_ms relative to trigger_issued)\n");
    if t.timeline.is_empty() {
        o.push_str("  not-measured: no timeline events were recorded\n");
        return o;
    }
    let mut rows = vec![header(&["T_MS", "SOURCE", "EVENT", "DETAIL"])];
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
        o.push_str("  (~ marks an approximate timestamp mapped from another clock; see CLOCKS)\n");
    }
    o
}

/// ATTACH: what the user's clients saw; "not-measured" when the trial ended before its
/// attach section was built.
pub(super) fn attach(t: &Trial) -> String {
    let Some(a) = &t.attach else {
        return "ATTACH\n  not-measured: the clients recorded nothing\n".into();
    };
    let c = &t.config;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "ATTACH ({} {}:{})",
        a.protocol,
        c.attach.as_ref().map_or("?", |x| x.host.as_str()),
        c.attach.as_ref().map_or(0, |x| x.port)
    );
    o.push_str(&attach::render::text(a));
    o
}

fn counts_rows(s: &Summary) -> Vec<Vec<String>> {
    let mut rows = vec![header(&[
        "PROTO",
        "TOTAL",
        "DRAINED",
        "SEVERED",
        "READ_TIMEOUT",
        "SURVIVED_WINDOW",
        "NOT_MEASURED",
    ])];
    for (name, c) in [("tcp", &s.tcp), ("udp", &s.udp)] {
        let mut r = vec![name.to_string(), c.total.to_string()];
        r.extend(Outcome::ALL.iter().map(|o| c.get(*o).to_string()));
        rows.push(r);
    }
    rows
}

/// SUMMARY: outcome counts per protocol and the measured intervals.
pub(super) fn summary(s: &Summary) -> String {
    let mut o = String::from("\nSUMMARY\n");
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
        vec!["container exit code".into(), or_nm(s.container_exit_code)],
    ];
    o.push_str(&tabulate(&intervals, "  "));
    for n in &s.notes {
        let _ = writeln!(o, "  NOTE: {n}");
    }
    o
}

/// CLOCKS: how each source's times were placed on the runner's clock; an attach trial runs
/// no probe, so only its client's clock is shown.
pub(super) fn clocks(t: &Trial) -> String {
    let mut o = String::from("\nCLOCKS\n");
    o.push_str(&wrap(&t.clock_note, 74, "  "));
    if t.kind() == TrialKind::Attach {
        match &t.clock.client {
            Some(c) => {
                let _ = writeln!(
                    o,
                    "  client clock: mapping {} lines {}",
                    kebab(&c.mapping),
                    c.samples
                );
                o.push_str(&wrap(&c.note, 74, "  "));
            }
            None => o.push_str("  client clock: not-measured\n"),
        }
        return o;
    }
    let p = &t.clock.probe;
    let _ = writeln!(
        o,
        "  probe clock: mapping {} offset {} bound {} samples {}",
        kebab(&p.mapping),
        ms(p.offset_ms),
        p.error_bound_ms
            .map_or_else(|| "not-measured".to_string(), |v| format!("±{v} ms")),
        p.samples
    );
    o.push_str(&wrap(&t.probe_clock_offset_note, 74, "  "));
    if let Some(c) = &t.clock.client {
        let _ = writeln!(
            o,
            "  client clock: mapping {} lines {}",
            kebab(&c.mapping),
            c.samples
        );
        o.push_str(&wrap(&c.note, 74, "  "));
    }
    o
}
