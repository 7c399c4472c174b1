use super::*;

#[test]
fn the_issue_examples_parse() {
    assert_eq!(
        parse("tcp drained-clean-close >= 100%").unwrap(),
        Threshold::Count {
            scope: Scope::Proto(Proto::Tcp),
            counted: Counted::Outcome(Outcome::DrainedCleanClose),
            op: Op::AtLeast,
            amount: Amount::PerMille(1000),
        }
    );
    assert_eq!(
        parse("severed ≤ 0").unwrap().to_string(),
        "severed ≤ 0",
        "unscoped counts look at every flow"
    );
    assert_eq!(
        parse("UDP rehomed<=0").unwrap().to_string(),
        "udp rehomed ≤ 0"
    );
    assert_eq!(
        parse("sigterm-to-last-flow-end <= 25s").unwrap(),
        Threshold::Interval {
            interval: Interval::SigtermToLastFlowEnd,
            max_ms: 25_000
        }
    );
    assert_eq!(
        parse("endpoint-not-ready-before-exit").unwrap(),
        Threshold::EndpointNotReadyBeforeExit
    );
    assert!(parse("no-request-failed").unwrap().attach_only());
    for t in ["no-stream-reset", "goaway-before-close"] {
        let t = parse(t).unwrap();
        assert!(t.attach_only() && t.h2_only(), "{t}");
        assert_eq!(parse(&t.to_string()).unwrap(), t);
    }
    assert!(!parse("no-request-failed").unwrap().h2_only());
    let f = parse("no-new-connection-failed").unwrap();
    assert_eq!(f, Threshold::NoNewConnectionFailed);
    assert!(f.attach_only() && !f.h2_only() && !f.arm_level());
    assert_ne!(f, parse("no-new-connection-refused").unwrap());
    assert_eq!(
        parse("no-new-connection-failed <= 0").unwrap_err(),
        ThresholdError::Misplaced("no-new-connection-failed".into())
    );
    assert!(
        ThresholdError::Shape
            .to_string()
            .contains("no-new-connection-refused, no-new-connection-failed,"),
        "the hint names every predicate"
    );
    let w = parse("no-watch-cut").unwrap();
    assert_eq!(w, Threshold::NoWatchCut);
    assert!(w.attach_only() && !w.h2_only());
    assert_eq!(parse(&w.to_string()).unwrap(), w);
}

#[test]
fn display_round_trips() {
    for s in [
        "tcp drained-clean-close ≥ 99.5%",
        "udp severed ≤ 2",
        "read-timeout ≤ 10%",
        "trigger-to-container-exit ≤ 1500ms",
        "sigterm-to-endpoint-not-ready ≤ 2s",
        "no-new-connection-refused",
        "no-new-connection-failed",
    ] {
        assert_eq!(parse(s).unwrap().to_string(), s);
    }
}

#[test]
fn refusals_say_what_is_wrong() {
    let e = |s: &str| parse(s).unwrap_err();
    assert_eq!(
        e("tcp drained >= 100%"),
        ThresholdError::UnknownMeasure("drained".into())
    );
    assert_eq!(e("severed > 0"), ThresholdError::StrictOp(">".into()));
    assert_eq!(e("severed = 0"), ThresholdError::StrictOp("=".into()));
    assert_eq!(
        e("tcp drained-clean-close >= 101%"),
        ThresholdError::PercentOver100("101%".into())
    );
    assert_eq!(e("severed <= -1"), ThresholdError::BadAmount("-1".into()));
    assert_eq!(e("severed <= 1.5"), ThresholdError::BadAmount("1.5".into()));
    assert_eq!(
        e("severed <= 99.55%"),
        ThresholdError::BadAmount("99.55%".into())
    );
    assert_eq!(
        e("sigterm-to-last-flow-end >= 1s"),
        ThresholdError::LowerBoundOnTime("sigterm-to-last-flow-end")
    );
    assert_eq!(
        e("sigterm-to-last-flow-end <= 25"),
        ThresholdError::BadDuration("25".into())
    );
    assert_eq!(
        e("tcp sigterm-to-last-flow-end <= 2s"),
        ThresholdError::Misplaced("sigterm-to-last-flow-end".into())
    );
    assert_eq!(
        e("endpoint-not-ready-before-exit <= 1"),
        ThresholdError::Misplaced("endpoint-not-ready-before-exit".into())
    );
    assert_eq!(e("severed >= 0"), ThresholdError::Vacuous);
    assert_eq!(e("severed <= 100%"), ThresholdError::Vacuous);
    assert_eq!(e("   "), ThresholdError::Empty);
    assert_eq!(e("drain please"), ThresholdError::Shape);
    assert!(e("sctp severed <= 0").to_string().contains("sctp severed"));
}
