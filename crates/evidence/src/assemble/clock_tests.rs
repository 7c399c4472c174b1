//! Client shards on several kernels: each kernel's lines placed by its own clock, and the
//! report's `trial.clock.client` and `client_domains`.

use super::build_report;
use super::tests::header;
use crate::clock::Mapping;
use crate::event::{EventLine, EventName, Source};

const MS: i64 = 1_000_000;

/// A relayed client line of `flow`, written at `mono_ms` on kernel `boot`, received at `at_ms`.
fn relayed(event: EventName, flow: &str, mono_ms: i64, at_ms: i64, boot: &str) -> EventLine {
    let mut l = EventLine::new(Source::Client, event, at_ms * MS).flow(flow);
    l.mono_ns = Some(mono_ms * MS);
    l.boot_id = Some(boot.into());
    l
}

fn two_kernels() -> Vec<EventLine> {
    let mut lines = vec![header(2, 0)];
    lines.push(EventLine::new(
        Source::Orchestrator,
        EventName::TriggerIssued,
        1_000 * MS,
    ));
    // tcp-0001 on the orchestrator's kernel ("boot-a"): exact, whenever its lines arrive.
    lines.push(relayed(
        EventName::FlowConnected,
        "tcp-0001",
        990,
        1_400,
        "boot-a",
    ));
    lines.push(relayed(
        EventName::FlowEof,
        "tcp-0001",
        1_010,
        1_500,
        "boot-a",
    ));
    // tcp-0002 on a kernel whose clock reads 5,000 ms less than ours; its lines took 3 and
    // 4 ms to arrive, so its offset is 5,003 ms (the faster line's delivery delay included).
    let mut dial = relayed(EventName::FlowConnected, "tcp-0002", -4_000, 1_003, "far");
    dial.node = Some("node2".into());
    lines.push(dial);
    lines.push(relayed(
        EventName::FlowEof,
        "tcp-0002",
        -3_980,
        1_024,
        "far",
    ));
    lines
}

#[test]
fn each_kernel_is_placed_by_its_own_clock_and_only_the_foreign_rows_are_approximate() {
    let r = build_report(&two_kernels()).unwrap();
    let flows: Vec<(&str, Option<i64>, Option<i64>)> = r
        .trial
        .flows
        .iter()
        .map(|f| (f.id.as_str(), f.connected_t_ms, f.t_terminal_ms))
        .collect();
    // tcp-0002: connected at −4,000 + 5,003 = 1,003 ms (t = 3), ended at 1,023 ms (t = 23).
    assert_eq!(
        flows,
        vec![
            ("tcp-0001", Some(-10), Some(10)),
            ("tcp-0002", Some(3), Some(23))
        ]
    );
    let terminal: Vec<(Option<&str>, bool)> = r
        .trial
        .timeline
        .iter()
        .filter(|e| e.event == EventName::FlowTerminal)
        .map(|e| (e.flow_id.as_deref(), e.approximate))
        .collect();
    assert_eq!(
        terminal,
        vec![(Some("tcp-0001"), false), (Some("tcp-0002"), true)]
    );
    let c = r.trial.clock.client.as_ref().unwrap();
    assert_eq!(
        (c.mapping, c.approximate, c.error_bound_ms, c.samples),
        (Mapping::OffsetOneSided, true, None, 4)
    );
    assert!(c.note.contains("2 kernels"), "{}", c.note);
    let domains = r.trial.clock.client_domains.as_ref().unwrap();
    let got: Vec<_> = domains
        .iter()
        .map(|d| {
            (
                d.boot_id.as_str(),
                d.mapping,
                d.offset_ns,
                d.error_bound_ms,
                d.approximate,
                d.lines,
                d.node.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "boot-a",
                Mapping::SameHostMonotonic,
                Some(0),
                Some(0.0),
                false,
                2,
                None
            ),
            (
                "far",
                Mapping::OffsetOneSided,
                Some(5_003 * MS),
                None,
                true,
                2,
                Some("node2")
            ),
        ]
    );
    // Null, not absent, where the bound or the node is unknown.
    let v = serde_json::to_value(&r.trial.clock).unwrap();
    assert_eq!(
        v["client_domains"][1]["error_bound_ms"],
        serde_json::Value::Null
    );
    assert_eq!(v["client_domains"][0]["node"], serde_json::Value::Null);
}

#[test]
fn one_kernel_writes_no_client_domains() {
    let far_only: Vec<EventLine> = two_kernels()
        .into_iter()
        .filter(|l| l.boot_id.as_deref() != Some("boot-a"))
        .collect();
    let r = build_report(&far_only).unwrap();
    assert_eq!(r.trial.clock.client.as_ref().map(|c| c.samples), Some(2));
    assert_eq!(r.trial.clock.client_domains, None);
    let v = serde_json::to_value(&r.trial.clock).unwrap();
    assert!(v.get("client_domains").is_none(), "{v}");
}

/// A probe on another host whose wall clock reads 10,000 ms ahead of the orchestrator's clock
/// (θ = orchestrator − probe wall = −10,000 ms), and clock samples of `udp-0001`: `exact` adds
/// one taken on the orchestrator's kernel (ping sent at 1,000 ms, ack at 1,004 ms, the probe's
/// clock read at 1,002 ms); the other is taken on kernel "far", whose clock reads 5,000 ms less
/// (ping sent at 1,001 ms, the probe read at 1,002 ms, ack at 1,003 ms, relayed 3 ms later).
fn probe_elsewhere(exact: bool) -> Vec<EventLine> {
    let mut lines = vec![header(0, 1)];
    // The orchestrator's wall clock reads as its monotonic one, so offset_ms (probe wall −
    // orchestrator wall) is −θ.
    let mut trigger = EventLine::new(Source::Orchestrator, EventName::TriggerIssued, 2_000 * MS);
    trigger.wall = Some(crate::timeline::format_wall_ns(2_000 * MS));
    lines.push(trigger);
    let mut started = EventLine::new(Source::Probe, EventName::ProbeStarted, 10 * MS);
    started.boot_id = Some("probe-kernel".into());
    started.wall = Some(crate::timeline::format_wall_ns(10_005 * MS));
    lines.push(started);
    let sample = |sent_ms: i64, mono_ms: i64, at_ms: i64, boot: &str| {
        let mut l = relayed(EventName::FlowClockSample, "udp-0001", mono_ms, at_ms, boot);
        l.sent_ns = Some(sent_ms * MS);
        l.peer_wall_ns = Some(11_002 * MS);
        l
    };
    if exact {
        lines.push(sample(1_000, 1_004, 1_010, "boot-a"));
    }
    lines.push(sample(-3_999, -3_997, 1_006, "far"));
    lines
}

#[test]
fn a_shard_on_a_one_sided_clock_bounds_the_probe_from_above_only() {
    let r = build_report(&probe_elsewhere(false)).unwrap();
    let p = &r.trial.clock.probe;
    // Placed by "far"'s one-sided offset (5,003 ms: its delivery delay included), the sample's
    // times are 3 ms late. Read as exact they gave θ in [−9,998, −9,996] ms, which excludes
    // the true −10,000; as upper bounds they give θ ≤ −9,996 ms, which holds.
    assert_eq!(
        (p.mapping, p.offset_ms, p.error_bound_ms, p.samples),
        (Mapping::OffsetOneSided, Some(9_996.0), None, 1)
    );
}

#[test]
fn a_shard_on_a_two_sided_clock_bounds_the_probe_no_tighter_than_its_own_clock() {
    let r = build_report(&probe_elsewhere(true)).unwrap();
    let far = &r.trial.clock.client_domains.as_ref().unwrap()[1];
    // "far" is bridged through the exact sample: φ in [4,997, 5,003] ms, 5,000 ± 3.
    assert_eq!(
        (far.mapping, far.offset_ns, far.error_bound_ms),
        (Mapping::OffsetTwoSided, Some(5_000 * MS), Some(3.0))
    );
    let p = &r.trial.clock.probe;
    // The exact sample alone: θ in [−10,002, −9,998] ms. The far one, widened by its domain's
    // 3 ms, is [−10,004, −9,996] and tightens nothing (read as exact it claimed ± 1 ms).
    assert_eq!(
        (p.mapping, p.offset_ms, p.error_bound_ms, p.samples),
        (Mapping::OffsetTwoSided, Some(10_000.0), Some(2.0), 2)
    );
}
