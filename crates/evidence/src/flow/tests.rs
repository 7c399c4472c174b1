use super::*;
use proptest::prelude::*;

fn data(seq: u64, instance: &str) -> Observation {
    Observation::Data {
        seq: Some(seq),
        instance: Some(instance.into()),
    }
}

fn run(proto: Proto, obs: &[(i64, Observation)]) -> FlowState {
    let mut f = FlowState::new(flow_id(proto, 1), proto);
    for (at, o) in obs {
        f.step(*at, o);
    }
    f
}

#[test]
fn fin_after_bye_is_drained() {
    let f = run(
        Proto::Tcp,
        &[
            (0, Observation::Connected),
            (500, data(0, "a")),
            (1000, Observation::Bye { seq: Some(1) }),
            (1001, Observation::Eof),
        ],
    );
    let v = f.verdict();
    assert_eq!(v.outcome, Outcome::DrainedCleanClose);
    assert_eq!(v.mechanism, Mechanism::FinAfterAnnouncement);
    assert_eq!(v.at_ns, Some(1001));
    assert_eq!(f.last_seq, Some(1));
}

#[test]
fn fin_without_bye_is_severed_unannounced() {
    let f = run(
        Proto::Tcp,
        &[(0, Observation::Connected), (9, Observation::Eof)],
    );
    assert_eq!(f.verdict().outcome, Outcome::Severed);
    assert_eq!(f.verdict().mechanism, Mechanism::FinUnannounced);
    assert_eq!(f.verdict().detail, "eof-without-drain-announcement");
}

#[test]
fn first_terminal_latches() {
    let mut f = run(
        Proto::Tcp,
        &[
            (0, Observation::Connected),
            (
                5,
                Observation::SocketError {
                    op: Op::Read,
                    errno: Some("ECONNRESET".into()),
                    message: None,
                },
            ),
        ],
    );
    assert_eq!(f.step(6, &Observation::Eof), Step::Ignored);
    assert_eq!(f.verdict().mechanism, Mechanism::Rst);
    assert_eq!(f.verdict().at_ns, Some(5));
}

#[test]
fn bye_then_rst_is_severed() {
    let f = run(
        Proto::Tcp,
        &[
            (0, Observation::Bye { seq: Some(3) }),
            (
                1,
                Observation::SocketError {
                    op: Op::Read,
                    errno: Some("ECONNRESET".into()),
                    message: None,
                },
            ),
        ],
    );
    assert_eq!(f.verdict().outcome, Outcome::Severed);
}

#[test]
fn rehome_records_both_ends_and_keeps_original_seq() {
    let f = run(
        Proto::Udp,
        &[
            (0, Observation::Connected),
            (100, data(7, "old")),
            (200, data(8, "old")),
            (900, data(9, "new")),
        ],
    );
    let v = f.verdict();
    assert_eq!(v.outcome, Outcome::Severed);
    assert_eq!(v.mechanism, Mechanism::Rehomed);
    assert_eq!(v.detail, "answered by probe instance new, was old");
    assert_eq!(f.last_seq, Some(8));
    let r = f.rehome.unwrap();
    assert_eq!(r.last_original_ns, Some(200));
    assert_eq!(r.first_new_ns, 900);
}

#[test]
fn window_close_is_survived_without_time() {
    let f = run(
        Proto::Tcp,
        &[
            (0, Observation::Connected),
            (70, Observation::ObservationEnd),
        ],
    );
    assert_eq!(f.verdict().outcome, Outcome::SurvivedObservationWindow);
    assert_eq!(f.verdict().at_ns, None);
}

#[test]
fn absence_is_not_measured() {
    let f = FlowState::new("tcp-0001", Proto::Tcp);
    assert_eq!(f.verdict().outcome, Outcome::NotMeasured);
    let open = run(Proto::Tcp, &[(0, Observation::Connected)]);
    assert_eq!(open.verdict().outcome, Outcome::NotMeasured);
    let unknown = run(
        Proto::Tcp,
        &[
            (0, Observation::Unknown("flow_teleported".into())),
            (1, Observation::Eof),
        ],
    );
    assert_eq!(unknown.verdict().outcome, Outcome::NotMeasured);
    assert!(unknown.verdict().detail.contains("flow_teleported"));
}

#[test]
fn udp_silence_and_eof() {
    let f = run(Proto::Udp, &[(0, Observation::Silence { unanswered: 6 })]);
    assert_eq!(f.verdict().detail, "udp-silence-6-datagrams");
    let e = run(Proto::Udp, &[(0, Observation::Eof)]);
    assert_eq!(e.verdict().outcome, Outcome::Severed);
    assert_eq!(e.verdict().detail, "unexpected eof on udp socket");
}

#[test]
fn reordered_acks_keep_the_highest_seq() {
    let f = run(Proto::Udp, &[(0, data(5, "a")), (1, data(3, "a"))]);
    assert_eq!(f.last_seq, Some(5));
}

fn arb_observation() -> impl Strategy<Value = Observation> {
    prop_oneof![
        Just(Observation::Connected),
        Just(Observation::DialFailed("x".into())),
        (0u64..5, prop::sample::select(vec!["a", "b", ""])).prop_map(|(s, i)| data(s, i)),
        (0u64..5).prop_map(|s| Observation::Bye { seq: Some(s) }),
        Just(Observation::Gap),
        Just(Observation::Unrecognised),
        Just(Observation::Eof),
        prop::sample::select(vec!["ECONNRESET", "EPIPE", "ECONNREFUSED", "EIO"]).prop_map(|e| {
            Observation::SocketError {
                op: Op::Read,
                errno: Some(e.into()),
                message: None,
            }
        }),
        (1u64..9).prop_map(|n| Observation::Silence { unanswered: n }),
        Just(Observation::ReadTimeout(None)),
        Just(Observation::ObservationEnd),
        Just(Observation::Unknown("flow_x".into())),
    ]
}

proptest! {
    /// Every history gets exactly one outcome, and nothing after the first terminal matters.
    #[test]
    fn every_history_has_one_verdict_fixed_by_its_first_terminal(
        obs in prop::collection::vec(arb_observation(), 0..20),
        tcp in any::<bool>(),
    ) {
        let proto = if tcp { Proto::Tcp } else { Proto::Udp };
        let timed: Vec<_> = obs.into_iter().enumerate().map(|(i, o)| (i as i64, o)).collect();
        let full = run(proto, &timed);
        let v = full.verdict();
        prop_assert!(Outcome::ALL.contains(&v.outcome));
        if proto == Proto::Udp {
            prop_assert_ne!(v.outcome, Outcome::DrainedCleanClose);
        }
        // Cut the history right after the step that latched: the verdict must not change.
        let mut f = FlowState::new("x", proto);
        let mut cut = timed.len();
        for (i, (at, o)) in timed.iter().enumerate() {
            if f.step(*at, o) == Step::Terminal {
                cut = i + 1;
                break;
            }
        }
        let prefix = run(proto, &timed[..cut]);
        prop_assert_eq!(prefix.verdict(), v);
    }
}

#[test]
fn flow_order_is_numeric_within_a_protocol() {
    let mut ids = vec!["tcp-10000", "udp-0002", "tcp-1001", "tcp-1000", "tcp-0002"];
    ids.sort_by_key(|id| flow_order(Proto::of_flow_id(id).unwrap(), id));
    assert_eq!(
        ids,
        ["tcp-0002", "tcp-1000", "tcp-1001", "tcp-10000", "udp-0002"]
    );
}

#[test]
fn every_registered_flow_name_is_classified_or_deliberately_not_an_observation() {
    use crate::event::{EventLine, EventName, Source};
    // Not observations: a clock sample, the Go client's send log, and the core's own
    // timeline row.
    let not_observations = [
        EventName::FlowClockSample,
        EventName::FlowSent,
        EventName::FlowTerminal,
    ];
    let flow_names: Vec<&EventName> = EventName::ALL
        .iter()
        .filter(|n| n.as_str().starts_with("flow_"))
        .collect();
    assert_eq!(flow_names.len(), 14);
    for n in flow_names {
        let got = Observation::from_line(&EventLine::new(Source::Client, n.clone(), 1));
        if not_observations.contains(n) {
            assert_eq!(got, None, "{n}");
        } else {
            assert!(
                got.is_some_and(|o| !matches!(o, Observation::Unknown(_))),
                "{n} is registered but the flow machine does not read it"
            );
        }
    }
    let unknown = EventName::parse("flow_teleported");
    assert_eq!(
        Observation::from_line(&EventLine::new(Source::Client, unknown, 1)),
        Some(Observation::Unknown("flow_teleported".into()))
    );
}
