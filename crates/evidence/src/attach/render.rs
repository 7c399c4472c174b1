//! The attach section in the text table and in the Markdown summary: pure, so a replay prints
//! the same bytes.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::section::{AttachReport, ConnectionCounts, FailureMechanism};
use super::watch::WatchReport;
use crate::format::{header, kebab, ms, or_nm, tabulate};

/// Failure rows shown in the text table; the report holds them all.
const FAILURE_ROWS: usize = 20;

fn by_mechanism(m: &BTreeMap<FailureMechanism, u32>) -> String {
    if m.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = m.iter().map(|(k, n)| format!("{k} {n}")).collect();
    format!(" ({})", parts.join(", "))
}

fn requests_line(a: &AttachReport) -> String {
    match &a.requests {
        None => format!("not-measured (a {} arm sends no requests)", a.protocol),
        Some(r) => format!(
            "{} total, {} ok, {} failed{}; latency p50 {} p99 {} max {}",
            r.total,
            r.ok,
            r.failed,
            by_mechanism(&r.failed_by_mechanism),
            ms(r.latency_p50_ms),
            ms(r.latency_p99_ms),
            ms(r.latency_max_ms)
        ),
    }
}

/// The connections the server ended without a break, split by whether it announced the
/// close: a bare FIN is not called graceful, since a dying process's kernel sends one too.
pub fn closed_phrase(c: &ConnectionCounts) -> String {
    match (c.closed_announced, c.closed_unannounced_fin) {
        (Some(a), Some(f)) => {
            let unknown = c.graceful_close.saturating_sub(a + f);
            format!(
                "{} closed by the server ({a} announced, {f} by an unannounced FIN{})",
                c.graceful_close,
                if unknown > 0 {
                    format!(", {unknown} not-measured")
                } else {
                    String::new()
                }
            )
        }
        _ => format!(
            "{} closed by the server (announced or by a bare FIN: not-measured)",
            c.graceful_close
        ),
    }
}

fn connections_line(a: &AttachReport) -> String {
    let c = &a.connections;
    format!(
        "{} total: {}, {} severed{}, {} survived-observation-window, {} not-measured; {} reopened",
        c.total,
        closed_phrase(c),
        c.severed,
        by_mechanism(&c.severed_by_mechanism),
        c.survived_observation_window,
        c.not_measured,
        c.reopened
    )
}

fn dials_line(a: &AttachReport) -> String {
    match &a.dials {
        None => "not-measured (the prober was off or recorded nothing)".into(),
        Some(d) => format!(
            "{} total, {} served, {} failed{}",
            d.total,
            d.served,
            d.failed,
            by_mechanism(&d.failed_by_result)
        ),
    }
}

fn window_line(a: &AttachReport) -> String {
    match &a.longest_failure_window {
        // Cut Watches are counted apart (their own row), not in the failure window.
        None if a.watches.as_ref().is_some_and(|w| w.cut > 0) => {
            "none (no request, dial or held connection failed; the cut Watches are counted on their own row)".into()
        }
        None => "none (nothing failed)".into(),
        Some(w) => format!(
            "{} ms .. {} ms ({} ms, {} failures)",
            w.start_t_ms, w.end_t_ms, w.duration_ms, w.failures
        ),
    }
}

fn phases_line(a: &AttachReport) -> String {
    let phases: Vec<String> = a
        .failures_by_phase
        .iter()
        .map(|(p, n)| format!("{p} {n}"))
        .collect();
    if phases.is_empty() {
        "none".into()
    } else {
        phases.join(", ")
    }
}

fn watches_line(w: &WatchReport) -> String {
    format!(
        "{} total: {} drained, {} ended-with-status, {} cut{}, {} survived-observation-window, {} not-measured",
        w.total,
        w.drained,
        w.ended_with_status,
        w.cut,
        by_mechanism(&w.cut_by_mechanism),
        w.survived_observation_window,
        w.not_measured
    )
}

/// The Watches that did not survive the window, first [`FAILURE_ROWS`]: how each ended, and
/// when NOT_SERVING came first.
fn watch_rows(a: &AttachReport) -> String {
    let Some(w) = &a.watches else {
        return String::new();
    };
    let ended: Vec<_> = w
        .records
        .iter()
        .filter(|r| r.ended_t_ms.is_some())
        .collect();
    if ended.is_empty() {
        return String::new();
    }
    let mut o = format!(
        "\n  gRPC WATCHES ENDED ({} of {})\n",
        ended.len().min(FAILURE_ROWS),
        ended.len()
    );
    let mut rows = vec![header(&[
        "FLOW",
        "GEN",
        "OUTCOME",
        "HOW",
        "NOT_SERVING",
        "ENDED",
        "POD",
        "PHASE",
    ])];
    for r in ended.into_iter().take(FAILURE_ROWS) {
        let how = match (&r.mechanism, &r.grpc_code) {
            (Some(m), _) => m.to_string(),
            (None, Some(c)) => format!("status {c}"),
            (None, None) => "-".into(),
        };
        rows.push(vec![
            r.flow_id.clone(),
            r.generation.to_string(),
            r.outcome.as_str().to_string(),
            how,
            r.not_serving_t_ms
                .map_or_else(|| "none".to_string(), |t| format!("{t} ms")),
            ms(r.ended_t_ms),
            r.pod.clone().unwrap_or_else(|| "-".into()),
            r.phase.map_or_else(|| "-".to_string(), |p| p.to_string()),
        ]);
    }
    o.push_str(&tabulate(&rows, "  "));
    o
}

/// The section's key/value lines: what the clients saw, in totals.
fn totals(a: &AttachReport) -> String {
    let mut rows = vec![
        vec!["requests".to_string(), requests_line(a)],
        vec!["connections".into(), connections_line(a)],
        vec!["new connections".into(), dials_line(a)],
        vec!["data plane".into(), data_plane_line(a)],
        vec!["longest failure window".into(), window_line(a)],
        vec!["failures by phase".into(), phases_line(a)],
        vec![
            "window".into(),
            format!("{} .. {}", ms(a.window_start_t_ms), ms(a.window_end_t_ms)),
        ],
    ];
    if let Some(w) = &a.watches {
        rows.insert(2, vec!["grpc watches".into(), watches_line(w)]);
    }
    if let Some(i) = &a.ingress {
        let after = rows
            .iter()
            .position(|r| r[0] == "data plane")
            .map_or(rows.len(), |i| i + 1);
        rows.insert(
            after,
            vec!["ingress".into(), crate::ingress::render::line(i)],
        );
        if let Some(s) = crate::ingress::render::beside_kube_proxy(i, a.kube_proxy_views()) {
            rows.insert(after + 1, vec!["ingress vs kube-proxy".into(), s]);
        }
    }
    tabulate(&rows, "  ")
}

/// The `data plane` row; through an ingress with the direct prober on, it says its dials went
/// to the Service itself (kube-proxy), not through the ingress.
fn data_plane_line(a: &AttachReport) -> String {
    let views = super::data_plane::line(a.data_plane.as_deref());
    match &a.direct_dials {
        Some(d) => format!(
            "the Service dialled directly ({} of {} served): {views}",
            d.served, d.total
        ),
        None => views,
    }
}

/// One row per replaced pod: when each control-plane step happened to it.
fn pods(a: &AttachReport) -> String {
    if a.pods.is_empty() {
        return String::new();
    }
    let mut rows = vec![header(&[
        "POD",
        "DELETION",
        "NOT_READY",
        "REMOVED",
        "EXITED",
        "EXIT",
        "FAILURES",
    ])];
    for p in &a.pods {
        rows.push(vec![
            p.pod.clone(),
            ms(p.deletion_requested_t_ms),
            ms(p.endpoint_not_ready_t_ms),
            ms(p.endpoint_removed_t_ms),
            ms(p.exited_t_ms),
            or_nm(p.exit_code),
            p.failures.to_string(),
        ]);
    }
    format!("\n{}", tabulate(&rows, "  "))
}

/// The first [`FAILURE_ROWS`] failures in time order.
fn failures(a: &AttachReport) -> String {
    if a.failures.is_empty() {
        return String::new();
    }
    let mut o = format!(
        "\n  FAILURES ({} of {}, in time order)\n",
        a.failures.len().min(FAILURE_ROWS),
        a.failures.len()
    );
    let mut rows = vec![header(&[
        "T_MS",
        "KIND",
        "FLOW",
        "MECHANISM",
        "STATUS",
        "POD",
        "PHASE",
    ])];
    for f in a.failures.iter().take(FAILURE_ROWS) {
        rows.push(vec![
            f.t_ms.to_string(),
            kebab(&f.kind),
            f.flow_id.clone(),
            f.mechanism.to_string(),
            f.status.map_or_else(|| "-".to_string(), |s| s.to_string()),
            f.pod.clone().unwrap_or_else(|| "-".into()),
            f.phase.to_string(),
        ]);
    }
    o.push_str(&tabulate(&rows, "  "));
    o
}

/// The ATTACH section of the text table.
pub fn text(a: &AttachReport) -> String {
    let mut o = totals(a);
    o.push_str(&pods(a));
    o.push_str(&failures(a));
    o.push_str(&watch_rows(a));
    for n in &a.notes {
        let _ = writeln!(o, "  NOTE: {n}");
    }
    o
}

fn sum(reports: &[&AttachReport]) -> Sums {
    // A report that cannot split its closes (older than schema 3.3) leaves the sum unknown.
    let mut s = Sums {
        announced: Some(0),
        unannounced: Some(0),
        ..Sums::default()
    };
    for a in reports {
        if let Some(r) = &a.requests {
            let (ok, failed) = s.requests.get_or_insert((0, 0));
            *ok += r.ok;
            *failed += r.failed;
        }
        s.announced = s
            .announced
            .zip(a.connections.closed_announced)
            .map(|(x, y)| x + y);
        s.unannounced = s
            .unannounced
            .zip(a.connections.closed_unannounced_fin)
            .map(|(x, y)| x + y);
        s.severed += a.connections.severed;
        if let Some(d) = &a.dials {
            let (served, refused, other) = s.dials.get_or_insert((0, 0, 0));
            let r = d
                .failed_by_result
                .get(&FailureMechanism::Refused)
                .copied()
                .unwrap_or(0);
            *served += d.served;
            *refused += r;
            *other += d.failed - r;
        }
        if let Some(w) = &a.longest_failure_window {
            s.longest = Some(
                s.longest
                    .map_or(w.duration_ms, |l: i64| l.max(w.duration_ms)),
            );
        }
    }
    s
}

#[derive(Default)]
struct Sums {
    requests: Option<(u32, u32)>,
    announced: Option<u32>,
    unannounced: Option<u32>,
    severed: u32,
    dials: Option<(u32, u32, u32)>,
    longest: Option<i64>,
}

/// The Markdown table of attach arms (name, the arm's attach sections); empty when no arm
/// has one.
pub fn markdown_table(arms: &[(String, Vec<&AttachReport>)]) -> String {
    let with: Vec<_> = arms.iter().filter(|(_, r)| !r.is_empty()).collect();
    if with.is_empty() {
        return String::new();
    }
    let mut o = String::from(
        "\n| attach arm | requests ok / failed | connections closed announced / unannounced FIN / severed | new connections served / refused / other failed | longest failure window |\n|---|---:|---:|---:|---:|\n",
    );
    for (name, reports) in with {
        let s = sum(reports);
        let _ = writeln!(
            o,
            "| `{name}` | {} | {} / {} / {} | {} | {} |",
            s.requests.map_or_else(
                || "not measured".to_string(),
                |(ok, f)| format!("{ok} / {f}")
            ),
            s.announced
                .map_or_else(|| "not measured".to_string(), |n| n.to_string()),
            s.unannounced
                .map_or_else(|| "not measured".to_string(), |n| n.to_string()),
            s.severed,
            s.dials.map_or_else(
                || "not measured".to_string(),
                |(a, b, c)| format!("{a} / {b} / {c}")
            ),
            s.longest
                .map_or_else(|| "none".to_string(), |ms| format!("{ms} ms")),
        );
    }
    o.push_str("\n<sub>summed over the arm's trials; the longest failure window is the longest of any trial. An announced close is one the server said first (`Connection: close`, GOAWAY, a WebSocket close frame); an unannounced FIN is also what the kernel sends when the process dies.</sub>\n");
    o.push_str(&markdown_watches(arms));
    for (name, reports) in arms {
        let views: Vec<&[super::data_plane::NodeView]> = reports
            .iter()
            .filter_map(|a| a.data_plane.as_deref())
            .collect();
        if let Some(s) = super::data_plane::summary(name, &views) {
            let _ = writeln!(o, "\n{s}");
        }
        let through: Vec<&crate::ingress::summary::IngressReport> =
            reports.iter().filter_map(|a| a.ingress.as_ref()).collect();
        if let Some(s) = crate::ingress::render::summary(name, &through) {
            let _ = writeln!(o, "\n{s}");
        }
    }
    o
}

/// One line per arm that held gRPC Watches: how they ended, summed over its trials.
fn markdown_watches(arms: &[(String, Vec<&AttachReport>)]) -> String {
    let mut o = String::new();
    for (name, reports) in arms {
        let held: Vec<&WatchReport> = reports.iter().filter_map(|a| a.watches.as_ref()).collect();
        if held.is_empty() {
            continue;
        }
        let mut cut_by = BTreeMap::new();
        let (mut total, mut drained, mut status, mut cut) = (0, 0, 0, 0);
        for w in held {
            total += w.total;
            drained += w.drained;
            status += w.ended_with_status;
            cut += w.cut;
            for (m, n) in &w.cut_by_mechanism {
                *cut_by.entry(*m).or_insert(0) += n;
            }
        }
        let _ = writeln!(
            o,
            "\ngRPC Watches of `{name}`: {total} held, {drained} drained (NOT_SERVING, then a status), {status} ended-with-status, {cut} cut{}.",
            by_mechanism(&cut_by)
        );
    }
    o
}
