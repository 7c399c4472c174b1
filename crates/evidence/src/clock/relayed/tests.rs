use proptest::prelude::*;

use super::*;
use crate::event::{EventName, seed_lines};

fn relayed(at: i64, mono: i64, boot: &str) -> EventLine {
    let mut l = EventLine::new(Source::Client, EventName::FlowData, at).flow("tcp-0001");
    l.mono_ns = Some(mono);
    l.boot_id = Some(boot.into());
    l
}

/// A UDP ack of the probe as a relayed line: sent at `sent`, the probe's wall clock `wall`,
/// written at `mono` (all on the emitter's clock), received by the orchestrator at `at`.
fn sample(at: i64, mono: i64, sent: i64, wall: i64, boot: &str) -> EventLine {
    let mut l = relayed(at, mono, boot).flow("udp-0001");
    l.sent_ns = Some(sent);
    l.peer_wall_ns = Some(wall);
    l
}

#[test]
fn relayed_client_lines_on_our_kernel_are_exact() {
    let mut lines = vec![relayed(1_500, 1_000, "b"), relayed(2_900, 2_000, "b")];
    let c = place_relayed_client(&mut lines, "b").unwrap();
    assert_eq!(c.mapping(), Mapping::SameHostMonotonic);
    assert_eq!(c.domains.len(), 1);
    assert_eq!(lines[0].at_ns, Some(1_000));
    assert_eq!(lines[1].at_ns, Some(2_000));
    assert!(!c.approximate(&lines[0]));
}

#[test]
fn relayed_client_lines_from_another_kernel_use_the_smallest_delay() {
    let mut sample = relayed(10_400, 400, "other");
    sample.sent_ns = Some(300);
    let mut lines = vec![
        relayed(10_500, 100, "other"),
        sample,
        EventLine::new(Source::Client, EventName::FlowData, 7),
    ];
    let c = place_relayed_client(&mut lines, "ours").unwrap();
    assert_eq!(c.mapping(), Mapping::OffsetOneSided);
    assert_eq!(c.domains[0].offset_ns, Some(10_000));
    assert_eq!((c.bound_ns(), c.lines()), (None, 2));
    assert_eq!(lines[0].at_ns, Some(10_100));
    assert_eq!(lines[1].at_ns, Some(10_400));
    assert_eq!(lines[1].sent_ns, Some(10_300));
    // An in-process line is untouched.
    assert_eq!(lines[2].at_ns, Some(7));
    assert_eq!(place_relayed_client(&mut [], "ours"), None);
}

#[test]
fn each_kernel_is_a_domain_of_its_own() {
    // Shard 1 on the orchestrator's kernel, shard 2 on a kernel whose clock is 1,000,000 ns
    // behind ours and whose lines arrive 50 and 20 ns late. One offset over both (the smallest
    // at − mono, here shard 1's 5) would have put shard 2 a million ns early.
    let mut dial = relayed(1_000_050, 50, "far");
    dial.node = Some("node2".into());
    let mut lines = vec![
        relayed(105, 100, "ours"),
        dial,
        relayed(1_000_220, 200, "far").flow("tcp-0002"),
        relayed(306, 300, "ours"),
    ];
    let c = place_relayed_client(&mut lines, "ours").unwrap();
    let got: Vec<_> = c
        .domains
        .iter()
        .map(|d| {
            (
                d.boot_id.as_str(),
                d.mapping,
                d.offset_ns,
                d.lines,
                d.node.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("ours", Mapping::SameHostMonotonic, Some(0), 2, None),
            (
                "far",
                Mapping::OffsetOneSided,
                Some(1_000_000),
                2,
                Some("node2")
            ),
        ]
    );
    let at: Vec<Option<i64>> = lines.iter().map(|l| l.at_ns).collect();
    assert_eq!(
        at,
        vec![Some(100), Some(1_000_050), Some(1_000_200), Some(300)]
    );
    let approximate: Vec<bool> = lines.iter().map(|l| c.approximate(l)).collect();
    assert_eq!(approximate, vec![false, true, true, false]);
    // The summary: the worst mapping, and no bound since the far one's is unknown.
    assert_eq!(
        (c.mapping(), c.bound_ns(), c.exact(), c.lines()),
        (Mapping::OffsetOneSided, None, false, 4)
    );
}

#[test]
fn a_domain_naming_two_nodes_is_tied_to_none() {
    let mut a = relayed(10, 5, "shared");
    a.node = Some("node1".into());
    let mut b = relayed(20, 15, "shared");
    b.node = Some("node2".into());
    let c = place_relayed_client(&mut [a, b], "ours").unwrap();
    assert_eq!(c.domains[0].node, None);
}

#[test]
fn the_probe_clock_bridges_a_foreign_domain_to_two_sides() {
    // Truth: orchestrator − probe wall θ = −1,000; the far kernel's φ = orchestrator − far = 500.
    // An exact line brackets θ: sent 100, probe read at our 150 (wall 1,150), written 200:
    // θ ∈ [100 − 1,150, 200 − 1,150] = [−1,050, −950].
    let exact = sample(210, 200, 100, 1_150, "ours");
    // A far line: sent at our 400 (far 400 − 500 = −100), probe read at our 420 (wall 1,420),
    // written at our 460 (far −40), received at our 900.
    // φ ≥ 1,420 − 1,050 − (−40) = 410; φ ≤ 1,420 − 950 − (−100) = 570; delivery: φ ≤ 940.
    let far = sample(900, -40, -100, 1_420, "far");
    let mut lines = vec![exact, far];
    let c = place_relayed_client(&mut lines, "ours").unwrap();
    let d = &c.domains[1];
    assert_eq!(
        (d.mapping, d.offset_ns, d.bound_ns),
        (Mapping::OffsetTwoSided, Some(490), Some(80))
    );
    // Placed at 450 against the true 460: within the stated 80.
    assert_eq!(lines[1].at_ns, Some(450));
    assert!((450_i64 - 460).abs() <= 80);
    assert_eq!(
        (c.mapping(), c.bound_ns()),
        (Mapping::OffsetTwoSided, Some(80))
    );
}

#[test]
fn crossed_bridged_bounds_fall_back_to_the_delivery_bound() {
    // The far line's probe reading says φ ≥ 1,000, its delivery says φ ≤ 940: the probe's wall
    // clock stepped (or another replica answered), so only the delivery bound is kept.
    let exact = sample(210, 200, 100, 1_150, "ours");
    let far = sample(900, -40, -100, 2_010, "far");
    let c = place_relayed_client(&mut [exact, far], "ours").unwrap();
    let d = &c.domains[1];
    assert_eq!(
        (d.mapping, d.offset_ns, d.bound_ns),
        (Mapping::OffsetOneSided, Some(940), None)
    );
}

/// The committed events of a probe trial whose client pod ran on the orchestrator's kernel:
/// every relayed line's exact time is its `mono_ns`.
fn committed_probe_trial() -> (Vec<EventLine>, String) {
    let lines = seed_lines(include_str!(
        "../../../../../results/2026-11-30-local-cluster-v0.2.0/drain/trial-001/events.jsonl"
    ));
    let boot = lines
        .iter()
        .find_map(|l| l.header.as_ref().map(|h| h.boot_id.clone()))
        .unwrap_or_default();
    (lines, boot)
}

/// Relabels the relayed lines `pick` chooses as from another kernel; returns each relabelled
/// line's index with its exact time.
fn relabel(lines: &mut [EventLine], pick: impl Fn(&EventLine) -> bool) -> Vec<(usize, i64)> {
    let mut exact = Vec::new();
    for (i, l) in lines.iter_mut().enumerate() {
        if l.source == Some(Source::Client) && l.boot_id.is_some() && pick(l) {
            l.boot_id = Some("relabelled".into());
            exact.extend(l.mono_ns.map(|m| (i, m)));
        }
    }
    exact
}

#[test]
fn forced_one_sided_placement_never_puts_a_line_before_its_exact_time() {
    let (mut lines, boot) = committed_probe_trial();
    let exact = relabel(&mut lines, |_| true);
    assert!(exact.len() > 50, "{} relabelled lines", exact.len());
    let c = place_relayed_client(&mut lines, &boot).unwrap();
    assert_eq!(c.domains.len(), 1);
    assert_eq!(c.domains[0].mapping, Mapping::OffsetOneSided);
    let offset = c.domains[0].offset_ns.unwrap_or(-1);
    assert!(offset >= 0, "offset {offset}: the true one is 0");
    for (i, t) in exact {
        let placed = lines[i].at_ns.unwrap_or(i64::MIN);
        assert!(placed >= t, "line {i} placed at {placed}, before {t}");
    }
}

#[test]
fn forced_bridged_placement_stays_within_its_bound_of_the_exact_time() {
    // The odd flows' lines relabelled as another kernel's; the even flows stay exact and carry
    // the probe's clock across.
    let (mut lines, boot) = committed_probe_trial();
    let odd = |l: &EventLine| {
        l.flow_id
            .as_deref()
            .and_then(|f| f.rsplit('-').next())
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|n| n % 2 == 1)
    };
    let exact = relabel(&mut lines, odd);
    assert!(exact.len() > 20, "{} relabelled lines", exact.len());
    let c = place_relayed_client(&mut lines, &boot).unwrap();
    let mappings: Vec<(&str, Mapping)> = c
        .domains
        .iter()
        .map(|d| (d.boot_id.as_str(), d.mapping))
        .collect();
    assert_eq!(
        mappings,
        vec![
            ("relabelled", Mapping::OffsetTwoSided),
            (boot.as_str(), Mapping::SameHostMonotonic)
        ]
    );
    let d = &c.domains[0];
    let bound = d.bound_ns.unwrap_or(-1);
    assert!(bound >= 0, "bound {bound}");
    for (i, t) in exact {
        let placed = lines[i].at_ns.unwrap_or(i64::MIN);
        assert!(
            (placed - t).abs() <= bound,
            "line {i} placed at {placed}, {} ns from {t}, bound {bound}",
            placed - t
        );
    }
}

#[test]
fn a_shard_relabelled_as_another_kernel_is_tied_to_its_node() {
    // Two attach shards, one per node, both on the orchestrator's kernel; node2's dials
    // relabelled as another kernel's, which leaves node1's dials alone in the exact domain.
    // Attach lines carry no probe clock: one-sided.
    let mut lines = seed_lines(include_str!(
        "../../../../../results/2026-12-03-shards-two-nodes/events.jsonl"
    ));
    let boot = lines
        .iter()
        .find_map(|l| l.header.as_ref().map(|h| h.boot_id.clone()))
        .unwrap_or_default();
    let exact = relabel(&mut lines, |l| l.node.as_deref() == Some("node2"));
    assert!(exact.len() > 100, "{} relabelled lines", exact.len());
    let c = place_relayed_client(&mut lines, &boot).unwrap();
    let got: Vec<(&str, Mapping, Option<&str>)> = c
        .domains
        .iter()
        .map(|d| (d.boot_id.as_str(), d.mapping, d.node.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![
            (boot.as_str(), Mapping::SameHostMonotonic, Some("node1")),
            ("relabelled", Mapping::OffsetOneSided, Some("node2")),
        ]
    );
    for (i, t) in exact {
        let placed = lines[i].at_ns.unwrap_or(i64::MIN);
        assert!(placed >= t, "line {i} placed at {placed}, before {t}");
        assert!(c.approximate(&lines[i]));
    }
}

/// One domain's generated lines: its true offset φ, and per line the true orchestrator time
/// of writing, its delivery delay, and, for a clock sample, how long before writing it was
/// sent and where between send and write the probe read its clock.
type Domain = (i64, Vec<(i64, i64, Option<(i64, u8)>)>);

fn arb_domain() -> impl Strategy<Value = Domain> {
    (
        -1_000_000_000_000_i64..1_000_000_000_000,
        prop::collection::vec(
            (
                0_i64..10_000_000_000,
                0_i64..100_000_000,
                prop::option::of((0_i64..10_000_000, any::<u8>())),
            ),
            1..12,
        ),
    )
}

proptest! {
    /// Lines generated from known clocks: exact lines land on their true time, two-sided ones
    /// within their bound of it, one-sided ones never before it; whatever the domains' order.
    #[test]
    fn every_placed_line_keeps_its_domains_promise(
        exact in prop::option::of(arb_domain()),
        foreign in prop::collection::vec(arb_domain(), 1..4),
        theta in -1_000_000_000_000_i64..1_000_000_000_000,
    ) {
        let mut lines = Vec::new();
        let mut truth = Vec::new();
        let domains = exact.iter().map(|d| ("ours".to_string(), 0, &d.1)).chain(
            foreign.iter().enumerate().map(|(i, d)| (format!("far-{i}"), d.0, &d.1)),
        );
        for (boot, phi, ls) in domains {
            for &(t, delay, s) in ls {
                let mut l = relayed(t + delay, t - phi, &boot);
                if let Some((rtt, frac)) = s {
                    let read = t - rtt + rtt * i64::from(frac) / 255;
                    l.sent_ns = Some(t - rtt - phi);
                    l.peer_wall_ns = Some(read - theta);
                }
                lines.push(l);
                truth.push(t);
            }
        }
        let c = place_relayed_client(&mut lines, "ours").unwrap();
        prop_assert_eq!(c.domains.len(), usize::from(exact.is_some()) + foreign.len());
        prop_assert_eq!(lines.len(), truth.len());
        for (l, t) in lines.iter().zip(&truth) {
            let d = c.domains.iter().find(|d| Some(d.boot_id.as_str()) == l.boot_id.as_deref());
            let d = d.unwrap();
            let placed = l.at_ns.unwrap();
            match d.mapping {
                Mapping::SameHostMonotonic => prop_assert_eq!(placed, *t),
                Mapping::OffsetTwoSided => prop_assert!((placed - t).abs() <= d.bound_ns.unwrap()),
                Mapping::OffsetOneSided => prop_assert!(placed >= *t),
                m => prop_assert!(false, "unexpected mapping {:?}", m),
            }
        }
    }
}
