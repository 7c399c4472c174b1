//! The ingress thresholds from recorded lines: the client's requests, the ingress's access
//! lines naming the upstream and the replica, the EndpointSlice lines mapping addresses to
//! pods, and the terminated pod's lane.

use super::CheckState;
use super::attach_tests::{attach_report, line};
use super::measure::check;
use crate::attach::AttachProtocol;
use crate::event::{EventLine, EventName, Source};
use crate::ingress::IngressOutcome;
use crate::policy::threshold::parse;
use crate::report::Report;

/// web-a (10.0.0.1) is deleted at 0 and its endpoint turns not ready at 200 ms; web-b
/// (10.0.0.2) serves throughout.
fn signals() -> Vec<EventLine> {
    let k8s = |event: EventName, at_ms: i64, pod: &str| {
        let mut l = EventLine::new(Source::K8s, event, at_ms * 1_000_000);
        l.instance = Some(pod.into());
        l
    };
    let mut added_a = k8s(EventName::EndpointsliceEndpointAdded, -5_000, "web-a");
    added_a.address = Some("10.0.0.1".into());
    let mut added_b = k8s(EventName::EndpointsliceEndpointAdded, -5_000, "web-b");
    added_b.address = Some("10.0.0.2".into());
    vec![
        added_a,
        added_b,
        k8s(EventName::PodDeletionTimestampSet, 0, "web-a"),
        k8s(EventName::EndpointsliceReadyFalse, 200, "web-a"),
    ]
}

/// What the ingress logged of a request: the replica, the pod it went to, the status.
type Logged<'a> = Option<(&'a str, &'a str, u16)>;

/// A request: when it was sent (ms) and what was logged of it.
type Sent<'a> = (i64, Logged<'a>);

/// Request `seq` of http-0001, sent at `at_ms` (recorded 5 ms later), and what the ingress's
/// `replica` logged for it: sent to `pod`'s address with `status` (499: the client gave up, its
/// request timed out); `None`: not logged.
fn request(seq: u64, at_ms: i64, logged: Logged<'_>) -> Vec<EventLine> {
    let result = match logged {
        Some((_, _, 502)) => "status-5xx",
        Some((_, _, 499)) => "timeout",
        _ => "ok",
    };
    let mut client = line(EventName::AttachRequest, at_ms + 5, "http-0001", result);
    client.seq = Some(seq);
    client.latency_ns = Some(5_000_000);
    let mut out = vec![client];
    if let Some((replica, pod, status)) = logged {
        let mut a = EventLine::new(
            Source::Ingress,
            EventName::IngressAccess,
            (at_ms + 50) * 1_000_000,
        )
        .flow("http-0001");
        a.seq = Some(seq);
        a.status = Some(status);
        a.result = Some(
            match status {
                502 => IngressOutcome::UpstreamError,
                499 => IngressOutcome::ClientClosed,
                _ => IngressOutcome::UpstreamStatus,
            }
            .as_str()
            .into(),
        );
        a.upstream = Some(
            if pod == "web-a" {
                "10.0.0.1:80"
            } else {
                "10.0.0.2:80"
            }
            .into(),
        );
        a.replica = Some(replica.into());
        out.push(a);
    }
    out
}

/// A report from `requests` (seq, sent at ms, what was logged) beside the signals.
fn report(requests: &[Sent<'_>]) -> Report {
    let mut lines = signals();
    for (i, (at, logged)) in requests.iter().enumerate() {
        lines.extend(request(i as u64 + 1, *at, *logged));
    }
    attach_report(AttachProtocol::Http, &lines)
}

/// Five requests in a row that web-b answered through `replica`, from `from_ms`, 50 ms apart:
/// enough (0.5^5 ≤ 5 %) to show a replica choosing between two pods stopped choosing web-a.
fn run_b(replica: &str, from_ms: i64) -> Vec<Sent<'_>> {
    (0..5)
        .map(|i| (from_ms + 50 * i, Some((replica, "web-b", 200))))
        .collect()
}

fn judge(threshold: &str, r: &Report) -> super::Check {
    check(&parse(threshold).unwrap(), "trial-001", Some(r))
}

#[test]
fn the_last_request_to_a_terminated_pod_is_read_from_the_access_log_per_replica() {
    const R0: &str = "traefik-0";
    // traefik-0 sent web-a a request 100 ms before its endpoint turned not ready and, with a
    // 502, 400 ms after it; then five to web-b.
    let mut requests = vec![
        (100, Some((R0, "web-a", 200))),
        (600, Some((R0, "web-a", 502))),
    ];
    requests.extend(run_b(R0, 700));
    let r = report(&requests);
    let ingress = r.trial.attach.as_ref().unwrap().ingress.as_ref().unwrap();
    let routing = ingress
        .routing
        .as_ref()
        .expect("a pod answered through the ingress");
    assert_eq!(routing.replicas.len(), 1);
    let rep = &routing.replicas[0];
    assert_eq!(rep.replica.as_deref(), Some(R0));
    assert_eq!(rep.requests_answered, 6);
    assert_eq!(rep.pods.len(), 1);
    assert_eq!(rep.pods[0].pod, "web-a");
    assert_eq!(rep.pods[0].last_served_t_ms, Some(100));
    assert_eq!(rep.pods[0].last_routed_t_ms, Some(600));
    // web-a's request at 100 ms came before its not-ready edge (at 200 ms), the 502 after it.
    assert_eq!(rep.pods[0].routed_after_not_ready, Some(1));
    assert_eq!(
        (rep.lag_at_least_ms, rep.lag_at_most_ms),
        (Some(400), Some(500))
    );
    assert_eq!(
        (
            routing.last_request_lag_ms,
            routing.logged_after_not_ready,
            routing.not_logged_after_not_ready
        ),
        (Some(400), Some(6), Some(0))
    );

    let c = judge("ingress-last-request-lag <= 300ms", &r);
    assert_eq!((c.state, c.value), (CheckState::Missed, Some(400)), "{c:?}");
    let c = judge("ingress-last-request-lag <= 400ms", &r);
    assert_eq!((c.state, c.value), (CheckState::Held, Some(400)), "{c:?}");
    let c = judge("ingress-propagation-lag <= 300ms", &r);
    assert_eq!((c.state, c.value), (CheckState::Missed, Some(400)), "{c:?}");
    assert!(c.message.contains("traefik-0"), "{}", c.message);
    let c = judge("ingress-propagation-lag <= 500ms", &r);
    assert_eq!((c.state, c.value), (CheckState::Held, Some(500)), "{c:?}");
}

#[test]
fn a_request_the_ingress_did_not_log_after_the_edge_leaves_the_lag_not_measured() {
    const R0: &str = "traefik-0";
    let mut requests = vec![(100, Some((R0, "web-a", 200))), (300, None)];
    requests.extend(run_b(R0, 400));
    let r = report(&requests);
    let c = judge("ingress-last-request-lag <= 1s", &r);
    assert_eq!(c.state, CheckState::NotMeasured, "{c:?}");
    assert!(c.message.contains("1 request(s)"), "{}", c.message);
    // The unlogged request broke no run here (it came before the five), so the bound stands.
    let c = judge("ingress-propagation-lag <= 1s", &r);
    assert_eq!(c.state, CheckState::Held, "{c:?}");
    // One inside the run breaks it: four in a row do not bound the lag.
    let mut requests = vec![(100, Some((R0, "web-a", 200)))];
    requests.extend(run_b(R0, 400));
    requests.insert(3, (480, None));
    let r = report(&requests);
    let c = judge("ingress-propagation-lag <= 1s", &r);
    assert_eq!(c.state, CheckState::NotMeasured, "{c:?}");
    assert!(c.message.contains("no upper bound"), "{}", c.message);
}

#[test]
fn each_replica_is_judged_on_its_own_view() {
    // traefik-0 stopped choosing web-a at once; traefik-1 sent it one 900 ms after the edge
    // and has no run after that: its lag is at least 900 ms and has no upper bound.
    let mut requests = vec![(100, Some(("traefik-0", "web-a", 200)))];
    requests.extend(run_b("traefik-0", 300));
    requests.push((1_100, Some(("traefik-1", "web-a", 502))));
    let r = report(&requests);
    let routing = r
        .trial
        .attach
        .as_ref()
        .unwrap()
        .ingress
        .as_ref()
        .unwrap()
        .routing
        .clone();
    let routing = routing.unwrap();
    let names: Vec<Option<&str>> = routing
        .replicas
        .iter()
        .map(|r| r.replica.as_deref())
        .collect();
    assert_eq!(names, [Some("traefik-0"), Some("traefik-1")]);
    assert_eq!(routing.last_request_lag_ms, Some(900));
    let c = judge("ingress-propagation-lag <= 2s", &r);
    assert_eq!(c.state, CheckState::NotMeasured, "{c:?}");
    assert!(c.message.contains("traefik-1"), "{}", c.message);
    let c = judge("ingress-propagation-lag <= 500ms", &r);
    assert_eq!((c.state, c.value), (CheckState::Missed, Some(900)), "{c:?}");
}

#[test]
fn without_an_ingress_or_traffic_after_the_edge_nothing_is_passed() {
    // No ingress line: the Service path.
    let plain = attach_report(
        AttachProtocol::Http,
        &[line(EventName::AttachRequest, 1, "http-0001", "ok")],
    );
    for t in [
        "ingress-last-request-lag <= 1s",
        "ingress-propagation-lag <= 1s",
    ] {
        let c = judge(t, &plain);
        assert_eq!(c.state, CheckState::NotMeasured, "{t}: {c:?}");
    }
    // Every request went before the edge: whether the ingress still chose web-a after it was
    // not seen.
    let r = report(&[
        (50, Some(("traefik-0", "web-a", 200))),
        (100, Some(("traefik-0", "web-b", 200))),
    ]);
    let c = judge("ingress-last-request-lag <= 1s", &r);
    assert_eq!(c.state, CheckState::NotMeasured, "{c:?}");
    assert!(
        c.message
            .contains("no request the ingress logged was sent after"),
        "{}",
        c.message
    );
}

#[test]
fn every_terminated_pods_edge_needs_traffic_after_it() {
    // web-b is terminated too, its endpoint not ready at 2,000 ms, after the last request:
    // whether the ingress still chose web-b was not seen, whatever web-a's lag.
    let mut lines = signals();
    let mut b = EventLine::new(
        Source::K8s,
        EventName::PodDeletionTimestampSet,
        1_900_000_000,
    );
    b.instance = Some("web-b".into());
    let mut b_nr = EventLine::new(
        Source::K8s,
        EventName::EndpointsliceReadyFalse,
        2_000_000_000,
    );
    b_nr.instance = Some("web-b".into());
    lines.extend([b, b_nr]);
    let mut requests = vec![(100, Some(("traefik-0", "web-a", 200)))];
    requests.extend(run_b("traefik-0", 300));
    for (i, (at, logged)) in requests.iter().enumerate() {
        lines.extend(request(i as u64 + 1, *at, *logged));
    }
    let r = attach_report(AttachProtocol::Http, &lines);
    let c = judge("ingress-last-request-lag <= 1s", &r);
    assert_eq!(c.state, CheckState::NotMeasured, "{c:?}");
    assert!(
        c.message.contains("after the last terminated pod"),
        "{}",
        c.message
    );
}

/// The report of ten requests through traefik-0 to web-b's service, all answered 200, beside
/// traefik-0's counters scraped before (`before`: none yet) and after (`after`: 200s, 502s).
fn scraped(after: (u64, u64), scrapes: &[u64]) -> Report {
    use crate::ingress::retries::{ServiceRequests, scrape_lines};
    let mut lines = signals();
    for i in 0..10u64 {
        let mut sent = request(
            i + 1,
            300 + 50 * i as i64,
            Some(("traefik-0", "web-b", 200)),
        );
        for l in sent
            .iter_mut()
            .filter(|l| l.event == EventName::IngressAccess)
        {
            l.service = Some("shop-web-80@kubernetes".into());
        }
        lines.extend(sent);
    }
    let counters = |ok: u64, failed: u64| {
        [(200, ok), (502, failed)]
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(code, count)| ServiceRequests {
                service: "shop-web-80@kubernetes".into(),
                code,
                count,
            })
            .collect::<Vec<_>>()
    };
    for &seq in scrapes {
        let (ok, failed) = if seq == 1 { (0, 0) } else { after };
        lines.extend(scrape_lines(&counters(ok, failed), "traefik-0", seq, 0));
    }
    attach_report(AttachProtocol::Http, &lines)
}

#[test]
fn no_ingress_hidden_retry_misses_on_attempts_the_counters_saw_and_the_clients_did_not() {
    let held = judge("no-ingress-hidden-retry", &scraped((10, 0), &[1, 2]));
    assert_eq!(held.state, CheckState::Held, "{held:?}");
    assert_eq!(
        held.message,
        "trial-001: 0 failed attempt(s) the ingress retried behind 10 logged request(s)"
    );

    let missed = judge("no-ingress-hidden-retry", &scraped((10, 9), &[1, 2]));
    assert_eq!(missed.state, CheckState::Missed, "{missed:?}");
    assert!(
        missed
            .message
            .starts_with("trial-001: 9 failed attempt(s) the ingress retried behind 10 logged request(s) (traefik-0 9);"),
        "{}",
        missed.message
    );
    assert_eq!(missed.value, Some(9));

    // Another client's two requests in the counters: not the trial's alone.
    let busy = judge("no-ingress-hidden-retry", &scraped((12, 0), &[1, 2]));
    assert_eq!(busy.state, CheckState::NotMeasured, "{busy:?}");
    assert!(
        busy.message.contains("hold 2 request(s)"),
        "{}",
        busy.message
    );

    // Scraped once only, and never: not measured, never a pass.
    let once = judge("no-ingress-hidden-retry", &scraped((10, 0), &[1]));
    assert_eq!(once.state, CheckState::NotMeasured, "{once:?}");
    let never = judge("no-ingress-hidden-retry", &scraped((10, 0), &[]));
    assert_eq!(never.state, CheckState::NotMeasured, "{never:?}");
    assert!(never.message.contains("not scraped"), "{}", never.message);
}

#[test]
fn a_502_the_ingress_had_from_a_pod_the_trial_did_not_terminate_is_that_pods() {
    // web-b serves throughout; web-a was deleted at 0. The ingress names web-b's address as
    // the failed request's upstream: the failure is web-b's, before any termination of it, not
    // the terminating web-a's that the time alone would suggest.
    let r = report(&[(600, Some(("traefik-0", "web-b", 502)))]);
    let a = r.trial.attach.as_ref().unwrap();
    assert_eq!(a.failures.len(), 1, "{:#?}", a.failures);
    let f = &a.failures[0];
    assert_eq!(f.upstream.as_deref(), Some("10.0.0.2:80"));
    assert_eq!(f.pod.as_deref(), Some("web-b"), "{f:#?}");
    assert_eq!(f.phase, crate::attach::section::Phase::BeforeTermination);
    // ... which the findings say is context, and no endpoint lag of the terminated pod.
    let ids: Vec<_> = crate::findings::findings(&r).iter().map(|f| f.id).collect();
    assert!(
        ids.contains(&crate::findings::FindingId::IngressErrorOnServingPod),
        "{ids:?}"
    );
    assert!(
        !ids.contains(&crate::findings::FindingId::EndpointLag),
        "{ids:?}"
    );
}

#[test]
fn a_client_that_gave_up_on_a_last_try_at_a_serving_pod_is_not_that_pods_failure() {
    // The ingress logged a request the client gave up on with web-b as its upstream: with the
    // ingress retrying, web-b is only the last try's upstream, begun as the client left. The
    // failure stays where the time puts it, not on the serving pod.
    let r = report(&[(2_600, Some(("traefik-0", "web-b", 499)))]);
    let failures = &r.trial.attach.as_ref().unwrap().failures;
    assert_eq!(failures.len(), 1, "{failures:#?}");
    assert_eq!(failures[0].ingress, Some(IngressOutcome::ClientClosed));
    assert_eq!(failures[0].pod.as_deref(), Some("web-a"), "{failures:#?}");
}
