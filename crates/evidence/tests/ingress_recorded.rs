//! The join on a recorded run: the attach client through a real Traefik, one backend gone
//! (results/2026-12-05-ingress-traefik-loopback, whose README states every count checked here).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on a broken fixture

use std::collections::BTreeMap;
use std::path::PathBuf;

use drainwatch_evidence::attach::attach_section;
use drainwatch_evidence::attach::section::Phase;
use drainwatch_evidence::event::{EventLine, EventName, Source};
use drainwatch_evidence::ingress::{self, IngressOutcome, join};
use drainwatch_evidence::plan::attach::config::AttachConfig;
use drainwatch_evidence::plan::attach::ingress::IngressController;
use drainwatch_evidence::request_id::Spelling;
use drainwatch_evidence::shard::Losses;

fn recorded(file: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../results/2026-12-05-ingress-traefik-loopback")
        .join(file);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The client's recorded lines, then each access-log line as the orchestrator records it.
fn client_and_ingress_lines() -> Vec<EventLine> {
    let mut lines: Vec<EventLine> = recorded("events.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let end = lines.iter().filter_map(|l| l.at_ns).max().unwrap();
    let accesses = ingress::accesses(IngressController::Traefik, &recorded("access.jsonl"));
    assert_eq!(accesses.len(), 92);
    let ingress: Vec<EventLine> = accesses
        .iter()
        .filter_map(|a| a.line(end, &Spelling::default()))
        .collect();
    // The test's own readiness request carried no id: not this client's evidence.
    assert_eq!(ingress.len(), 91);
    lines.extend(ingress);
    lines
}

/// The two backends' addresses, as dynamic.yml gave them to Traefik.
fn backends() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("127.0.0.2".to_string(), "shop-a".to_string()),
        ("127.0.0.3".to_string(), "shop-b".to_string()),
    ])
}

#[test]
fn every_recorded_request_is_joined_and_the_502s_are_the_gone_backends() {
    let lines = client_and_ingress_lines();
    let j = join::join(&lines, &backends());
    assert_eq!(j.requests.len(), 91);
    assert_eq!((j.not_logged, j.unclaimed, j.duplicates), (0, 0, 0));
    let by_pod = j.outcomes_by_pod();
    let want = BTreeMap::from([
        (
            Some("shop-a".to_string()),
            BTreeMap::from([(IngressOutcome::UpstreamStatus, 46)]),
        ),
        (
            Some("shop-b".to_string()),
            BTreeMap::from([
                (IngressOutcome::UpstreamStatus, 5),
                (IngressOutcome::UpstreamError, 40),
            ]),
        ),
    ]);
    assert_eq!(by_pod, want);
    // What the client saw agrees with the ingress, request by request.
    for r in &j.requests {
        let g = r.ingress.as_ref().unwrap();
        assert_eq!(r.status, g.status, "{r:?}");
        let failed = g.outcome == IngressOutcome::UpstreamError;
        assert_eq!(r.result == "status-5xx", failed, "{r:?}");
    }
}

/// The report's attach section of the recording, with the lines a Kubernetes watch would
/// have added: each backend's endpoint and its address, and shop-b's exit. These are made up
/// for the test (on loopback there is no control plane) and placed where the recording puts
/// them: the exit 1 ms before the first failure.
#[test]
fn through_the_ingress_each_failure_is_attributed_to_the_pod_it_went_to() {
    let config: AttachConfig = serde_json::from_value(
        serde_json::from_str::<serde_json::Value>(&recorded("report.json")).unwrap()["trial"]
            ["config"]["attach"]
            .clone(),
    )
    .unwrap();
    let client = client_and_ingress_lines();
    let first_failure = client
        .iter()
        .filter(|l| {
            l.event == EventName::AttachRequest && l.result.as_deref() == Some("status-5xx")
        })
        .filter_map(|l| l.at_ns)
        .min()
        .unwrap();
    let t0 = client.iter().filter_map(|l| l.at_ns).min().unwrap();
    let k8s = |event: EventName, pod: &str, at: i64| {
        let mut l = EventLine::new(Source::K8s, event, at);
        l.instance = Some(pod.into());
        l
    };
    let mut lines = Vec::new();
    for (ip, pod) in backends() {
        let mut added = k8s(EventName::EndpointsliceEndpointAdded, &pod, t0);
        added.ready = Some(true);
        added.address = Some(ip);
        lines.push(added);
    }
    let mut exited = k8s(
        EventName::ContainerTerminated,
        "shop-b",
        first_failure - 1_000_000,
    );
    exited.exit_code = Some(0);
    lines.push(exited);
    let without_ingress: Vec<EventLine> = lines
        .iter()
        .chain(client.iter().filter(|l| l.source != Some(Source::Ingress)))
        .cloned()
        .collect();
    lines.extend(client);

    let a = attach_section(&lines, &Losses::of(&lines, 0, 0, 1), &config, t0);
    assert_eq!(a.failures.len(), 40);
    for f in &a.failures {
        assert_eq!(f.pod.as_deref(), Some("shop-b"), "{f:?}");
        assert_eq!(f.phase, Phase::AfterExit, "{f:?}");
        assert_eq!(f.ingress, Some(IngressOutcome::UpstreamError), "{f:?}");
        assert!(
            f.upstream.as_deref().unwrap().starts_with("127.0.0.3:"),
            "{f:?}"
        );
    }
    let ingress = a.ingress.unwrap();
    assert_eq!((ingress.logged, ingress.not_logged), (91, 0));
    let pods: Vec<Option<&str>> = ingress.upstreams.iter().map(|u| u.pod.as_deref()).collect();
    assert_eq!(pods, [Some("shop-a"), Some("shop-b")]);

    // Without the ingress's record the failures carry no upstream (bad-shutdown's 502s came
    // from Traefik, which names no upstream in its response), and no ingress summary is made.
    let a = attach_section(
        &without_ingress,
        &Losses::of(&without_ingress, 0, 0, 1),
        &config,
        t0,
    );
    assert_eq!(a.failures.len(), 40);
    assert!(a.ingress.is_none());
    assert!(
        a.failures
            .iter()
            .all(|f| f.ingress.is_none() && f.upstream.is_none())
    );
}
