//! The held gRPC Watch's fold: NOT_SERVING then a status is drained, a status alone is
//! ended-with-status, an end without a status is cut with its mechanism (and counted apart
//! from the requests), an open one survived; the section is absent without `--grpc-watch`.

use super::watch::{ENDED_WITH_STATUS, ServingStatus, WatchOutcome, outcome};
use super::*;
use crate::attach::tests::{client, config};
use crate::event::{EventLine, EventName};
use crate::shard::Losses;

fn opened(at_ms: i64, flow: &str, generation: u64, stream: u32) -> EventLine {
    let mut l = client(EventName::AttachGrpcWatchOpened, at_ms, flow, generation);
    l.stream_id = Some(stream);
    l.instance = Some("grpc-good-a".into());
    l
}

fn status(at_ms: i64, flow: &str, generation: u64, s: ServingStatus) -> EventLine {
    let mut l = client(EventName::AttachGrpcWatchStatus, at_ms, flow, generation);
    l.result = Some(s.as_str().into());
    l
}

fn ended(at_ms: i64, flow: &str, generation: u64, result: &str, code: &str) -> EventLine {
    let mut l = client(EventName::AttachGrpcWatchEnded, at_ms, flow, generation);
    l.result = Some(result.into());
    if result == ENDED_WITH_STATUS {
        l.grpc_code = Some(code.into());
    } else {
        l.h2_code = Some(code.into()).filter(|c: &String| !c.is_empty());
    }
    l
}

fn goaway(at_ms: i64, flow: &str, generation: u64, last: u32) -> EventLine {
    let mut l = client(EventName::AttachGoaway, at_ms, flow, generation);
    l.last_stream_id = Some(last);
    l.h2_code = Some("NO_ERROR".into());
    l
}

fn grpc_watch() -> AttachConfig {
    let mut c = config(AttachProtocol::Grpc, 0);
    c.grpc = Some(AttachGrpc {
        method: None,
        service: Some(String::new()),
        watch: true,
    });
    c
}

#[test]
fn the_outcome_is_read_from_the_end_and_the_statuses_before_it() {
    let status_end = ended(9, "grpc-0001", 1, ENDED_WITH_STATUS, "OK");
    let cut = ended(9, "grpc-0001", 1, "rst-stream", "CANCEL");
    let announced = [ServingStatus::Serving, ServingStatus::NotServing];
    assert_eq!(
        outcome(Some(&status_end), &announced, false),
        WatchOutcome::Drained
    );
    assert_eq!(
        outcome(Some(&status_end), &[ServingStatus::Serving], false),
        WatchOutcome::EndedWithStatus
    );
    // NOT_SERVING announced does not make a cut Watch graceful.
    assert_eq!(outcome(Some(&cut), &announced, false), WatchOutcome::Cut);
    assert_eq!(
        outcome(None, &announced, true),
        WatchOutcome::SurvivedObservationWindow
    );
    assert_eq!(outcome(None, &[], false), WatchOutcome::NotMeasured);
    for s in ServingStatus::ALL {
        assert_eq!(ServingStatus::parse(s.as_str()), Some(s));
    }
    assert_eq!(ServingStatus::of(2), ServingStatus::NotServing);
    assert_eq!(ServingStatus::of(9), ServingStatus::Unknown);
}

#[test]
fn a_good_drain_and_the_bad_ends_are_told_apart() {
    let lines = vec![
        client(EventName::AttachWindowStarted, 0, "grpc-0001", 1),
        client(EventName::AttachConnOpened, 5, "grpc-0001", 1),
        opened(6, "grpc-0001", 1, 1),
        status(6, "grpc-0001", 1, ServingStatus::Serving),
        status(400, "grpc-0001", 1, ServingStatus::NotServing),
        ended(900, "grpc-0001", 1, ENDED_WITH_STATUS, "OK"),
        goaway(950, "grpc-0001", 1, 41),
        client(EventName::AttachConnReopened, 960, "grpc-0001", 2),
        opened(961, "grpc-0001", 2, 1),
        status(961, "grpc-0001", 2, ServingStatus::Serving),
        // Flow 2: the server reset the Watch's stream after its GOAWAY named it processed.
        client(EventName::AttachConnOpened, 5, "grpc-0002", 1),
        opened(7, "grpc-0002", 1, 1),
        goaway(500, "grpc-0002", 1, 9),
        ended(600, "grpc-0002", 1, "goaway-then-reset", "CANCEL"),
        // Flow 3: the connection reset under it, no GOAWAY.
        client(EventName::AttachConnOpened, 5, "grpc-0003", 1),
        opened(8, "grpc-0003", 1, 1),
        {
            let mut l = ended(700, "grpc-0003", 1, "no-goaway", "");
            l.errno = Some("ECONNRESET".into());
            l
        },
        // Flow 4: a status without NOT_SERVING first.
        client(EventName::AttachConnOpened, 5, "grpc-0004", 1),
        opened(9, "grpc-0004", 1, 1),
        ended(800, "grpc-0004", 1, ENDED_WITH_STATUS, "UNAVAILABLE"),
        client(
            EventName::AttachGrpcWatchObservationEnd,
            3000,
            "grpc-0001",
            2,
        ),
        client(EventName::AttachWindowEnded, 3000, "grpc-0001", 1),
    ];
    let a = attach_section(&lines, &Losses::unsharded(&lines), &grpc_watch(), 0);
    let w = a.watches.expect("the Watch was asked for");
    assert_eq!(w.records.len(), 5);
    assert_eq!(
        (
            w.total,
            w.drained,
            w.ended_with_status,
            w.cut,
            w.survived_observation_window,
            w.not_measured
        ),
        (5, 1, 1, 2, 1, 0)
    );
    assert_eq!(
        w.cut_by_mechanism.get(&FailureMechanism::GoawayThenReset),
        Some(&1)
    );
    assert_eq!(
        w.cut_by_mechanism.get(&FailureMechanism::NoGoaway),
        Some(&1)
    );
    let good = &w.records[0];
    assert_eq!(
        (good.flow_id.as_str(), good.generation, good.outcome),
        ("grpc-0001", 1, WatchOutcome::Drained)
    );
    assert_eq!(good.not_serving_t_ms, Some(400));
    assert_eq!((good.opened_t_ms, good.ended_t_ms), (Some(6), Some(900)));
    assert_eq!(good.grpc_code.as_deref(), Some("OK"));
    assert_eq!((good.mechanism, good.within_goaway), (None, Some(true)));
    assert_eq!(good.statuses.len(), 2);
    let reopened = &w.records[1];
    assert_eq!(reopened.outcome, WatchOutcome::SurvivedObservationWindow);
    assert_eq!((reopened.ended_t_ms, reopened.pod.as_deref()), (None, None));
    let reset = &w.records[2];
    assert_eq!(reset.outcome, WatchOutcome::Cut);
    assert_eq!(reset.mechanism, Some(FailureMechanism::GoawayThenReset));
    assert_eq!(
        (
            reset.h2_code.as_deref(),
            reset.within_goaway,
            reset.grpc_code.as_deref()
        ),
        (Some("CANCEL"), Some(true), None)
    );
    let rst = &w.records[3];
    assert_eq!(rst.mechanism, Some(FailureMechanism::NoGoaway));
    assert_eq!(
        (rst.errno.as_deref(), rst.within_goaway),
        (Some("ECONNRESET"), None)
    );
    assert_eq!(w.records[4].outcome, WatchOutcome::EndedWithStatus);
    assert_eq!(w.records[4].grpc_code.as_deref(), Some("UNAVAILABLE"));
    // A cut Watch is not a failed request, and not one of the failures the window reads.
    assert!(a.failures.is_empty(), "{:?}", a.failures);
    assert_eq!(a.requests.map(|r| r.failed), Some(0));
}

#[test]
fn the_section_is_absent_without_the_flag_and_an_unended_watch_is_not_measured() {
    let lines = vec![
        client(EventName::AttachConnOpened, 5, "grpc-0001", 1),
        opened(6, "grpc-0001", 1, 3),
    ];
    assert_eq!(
        attach_section(
            &lines,
            &Losses::unsharded(&lines),
            &config(AttachProtocol::Grpc, 0),
            0
        )
        .watches,
        None
    );
    let w = attach_section(&lines, &Losses::unsharded(&lines), &grpc_watch(), 0)
        .watches
        .unwrap();
    assert_eq!((w.total, w.not_measured), (1, 1));
    assert_eq!(w.records[0].stream_id, Some(3));
    assert_eq!(w.records[0].instance.as_deref(), Some("grpc-good-a"));
}
