//! Retries the ingress hid, read from its access log alone where each line counts the attempts
//! the ingress made upstream (Envoy's `upstream_request_attempt_count`, on the `ingress_access`
//! line's `count`): a request tried `n` times failed `n - 1` attempts before the last, which
//! decided what the client saw, so the hidden attempts are exact per request, with no counters
//! to scrape. The figures fill the same [`HiddenRetries`] the counters do: `requests_counted`
//! is the attempts made, `failed_counted` the failures the clients saw plus those hidden.
//!
//! Where the log also has a line per attempt (`ingress_attempt`, Envoy's upstream log), each
//! retried attempt names the upstream it failed on: [`retried_upstreams`].

use std::collections::{BTreeMap, BTreeSet};

use super::retries::{CountedFrom, HiddenRetries, ReplicaRetries, RetriedUpstream};
use crate::event::{EventLine, EventName};

/// The retries hidden in `lines`, from the attempt counts of their `ingress_access` lines;
/// `None` when no line carries one (the log does not count attempts: not measured). A replica
/// with a line that does not say is not measured, never 0.
pub fn hidden_retries(lines: &[EventLine]) -> Option<HiddenRetries> {
    let logged: Vec<&EventLine> = lines
        .iter()
        .filter(|l| l.event == EventName::IngressAccess)
        .collect();
    if !logged.iter().any(|l| l.count.is_some()) {
        return None;
    }
    let services: Vec<String> = logged
        .iter()
        .filter_map(|l| l.service.clone())
        .collect::<BTreeSet<String>>()
        .into_iter()
        .collect();
    let names: BTreeSet<Option<&str>> = logged.iter().map(|l| l.replica.as_deref()).collect();
    let replicas: Vec<ReplicaRetries> = names
        .into_iter()
        .map(|name| {
            let mine: Vec<&&EventLine> = logged
                .iter()
                .filter(|l| l.replica.as_deref() == name)
                .collect();
            let failed_logged = mine
                .iter()
                .filter(|l| l.status.is_some_and(|s| s >= 500))
                .count() as u64;
            let attempts: Option<u64> = mine.iter().map(|l| l.count).sum();
            // Each attempt before a request's last one failed (a request with no upstream
            // chosen made none).
            let hidden: Option<u64> = mine
                .iter()
                .map(|l| l.count.map(|n| n.saturating_sub(1)))
                .sum();
            ReplicaRetries {
                replica: name.map(str::to_string),
                services: services.clone(),
                requests_logged: mine.len() as u64,
                failed_logged,
                requests_counted: attempts,
                failed_counted: hidden.map(|h| h + failed_logged),
                hidden,
            }
        })
        .collect();
    let hidden = replicas.iter().map(|r| r.hidden).sum::<Option<u64>>();
    Some(HiddenRetries {
        counted_from: Some(CountedFrom::AttemptCounts),
        replicas,
        hidden,
        upstreams: None,
    })
}

/// One request of one replica: the replica, and the request's flow and number.
type Request<'a> = (Option<&'a str>, Option<&'a str>, Option<u64>);

/// Per upstream tried, the attempts there that were retried: of each request's attempt lines
/// (one replica's, in the order logged), every one before the last; the pod at the address
/// from `pods` (endpoint IP to pod). `None` when the recording has no attempt line, or when
/// its attempt lines are not every request's attempts: a request logged with a count of
/// attempts that its attempt lines do not match (one not yet flushed, or not counted) would
/// move a retried attempt to the last place, so nothing is said rather than a part.
pub fn retried_upstreams(
    lines: &[EventLine],
    pods: &BTreeMap<String, String>,
) -> Option<Vec<RetriedUpstream>> {
    let tried: Vec<&EventLine> = lines
        .iter()
        .filter(|l| l.event == EventName::IngressAttempt)
        .collect();
    if tried.is_empty() {
        return None;
    }
    // A request's attempts, in the order its replica logged them.
    let mut requests: BTreeMap<Request<'_>, Vec<&EventLine>> = BTreeMap::new();
    for l in tried {
        let key = (l.replica.as_deref(), l.flow_id.as_deref(), l.seq);
        requests.entry(key).or_default().push(l);
    }
    let counted = lines
        .iter()
        .filter(|l| l.event == EventName::IngressAccess)
        .map(|l| {
            let key = (l.replica.as_deref(), l.flow_id.as_deref(), l.seq);
            let lines_of = requests.get(&key).map_or(0, Vec::len) as u64;
            (l.count == Some(lines_of)).then_some(key)
        })
        .collect::<Option<BTreeSet<Request<'_>>>>()?;
    if requests.keys().any(|k| !counted.contains(k)) {
        return None;
    }
    let mut retried: BTreeMap<&str, u64> = BTreeMap::new();
    for attempts in requests.values() {
        let before_last = &attempts[..attempts.len().saturating_sub(1)];
        for a in before_last {
            if let Some(up) = a.upstream.as_deref() {
                *retried.entry(up).or_default() += 1;
            }
        }
    }
    let mut out: Vec<RetriedUpstream> = retried
        .into_iter()
        .map(|(up, n)| RetriedUpstream {
            pod: pods.get(super::join::upstream_ip(up)).cloned(),
            upstream: up.to_string(),
            retried: n,
        })
        .collect();
    out.sort_by_key(|u| (u.pod.is_none(), u.pod.clone(), u.upstream.clone()));
    Some(out)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{hidden_retries, retried_upstreams};
    use crate::event::{EventLine, EventName, Source};

    fn attempt(flow: &str, seq: u64, upstream: &str) -> EventLine {
        let mut l = EventLine::new(Source::Ingress, EventName::IngressAttempt, 0).flow(flow);
        l.seq = Some(seq);
        l.replica = Some("envoy-a".into());
        l.upstream = Some(upstream.into());
        l
    }

    fn access(replica: &str, status: u16, attempts: Option<u64>) -> EventLine {
        let mut l = EventLine::new(Source::Ingress, EventName::IngressAccess, 0).flow("http-0001");
        l.replica = Some(replica.into());
        l.service = Some("httproute/shop/web/rule/0".into());
        l.status = Some(status);
        l.count = attempts;
        l
    }

    /// The request line of `flow`/`seq` on `envoy-a`, tried `count` times.
    fn request(flow: &str, seq: u64, count: Option<u64>) -> EventLine {
        let mut l = access("envoy-a", 200, count);
        l.flow_id = Some(flow.into());
        l.seq = Some(seq);
        l
    }

    #[test]
    fn each_attempt_before_a_requests_last_is_retried_on_the_pod_it_went_to() {
        let pods: BTreeMap<String, String> = [
            ("10.244.0.4".to_string(), "web-old".to_string()),
            ("10.244.1.2".to_string(), "web-new".to_string()),
            ("fd00::4".to_string(), "web-v6".to_string()),
        ]
        .into();
        let lines = vec![
            // Refused by the old pod, answered by the new one.
            attempt("http-0001", 3, "10.244.0.4:8080"),
            attempt("http-0001", 3, "10.244.1.2:8080"),
            request("http-0001", 3, Some(2)),
            // Answered at once.
            attempt("http-0002", 3, "10.244.0.4:8080"),
            request("http-0002", 3, Some(1)),
            // Twice on addresses, the second no endpoint had, then answered.
            attempt("http-0003", 3, "10.244.0.4:8080"),
            attempt("http-0003", 3, "10.244.9.9:8080"),
            attempt("http-0003", 3, "10.244.1.2:8080"),
            request("http-0003", 3, Some(3)),
            // An IPv6 pod, refused, then the new pod.
            attempt("http-0004", 3, "[fd00::4]:8080"),
            attempt("http-0004", 3, "10.244.1.2:8080"),
            request("http-0004", 3, Some(2)),
        ];
        assert_eq!(lines.len(), 12);
        let u = retried_upstreams(&lines, &pods).unwrap();
        assert_eq!(u.len(), 3, "{u:#?}");
        let seen: Vec<(Option<&str>, &str, u64)> = u
            .iter()
            .map(|u| (u.pod.as_deref(), u.upstream.as_str(), u.retried))
            .collect();
        assert_eq!(
            seen,
            [
                (Some("web-old"), "10.244.0.4:8080", 2),
                (Some("web-v6"), "[fd00::4]:8080", 1),
                (None, "10.244.9.9:8080", 1)
            ]
        );
        // No attempt lines: not measured, never an empty list.
        assert_eq!(retried_upstreams(&[], &pods), None);
        // One attempt per request: none retried, measured.
        assert_eq!(retried_upstreams(&lines[3..5], &pods), Some(Vec::new()));
    }

    #[test]
    fn attempt_lines_that_are_not_every_attempt_leave_where_they_went_not_measured() {
        let pods = BTreeMap::new();
        // The request counted two attempts; only its second was logged (the first's line was
        // lost): the retried one would be taken for the last.
        let lost = [
            attempt("http-0001", 1, "10.244.1.2:8080"),
            request("http-0001", 1, Some(2)),
        ];
        assert_eq!(retried_upstreams(&lost, &pods), None);
        // A request the log does not count: nothing to check the lines against.
        let uncounted = [
            attempt("http-0001", 1, "10.244.1.2:8080"),
            request("http-0001", 1, None),
        ];
        assert_eq!(retried_upstreams(&uncounted, &pods), None);
        // Attempt lines of a request that was not logged.
        let orphan = [attempt("http-0009", 1, "10.244.1.2:8080")];
        assert_eq!(retried_upstreams(&orphan, &pods), None);
    }

    #[test]
    fn each_attempt_before_a_requests_last_is_a_hidden_failure() {
        let lines = [
            access("envoy-a", 200, Some(1)),
            // Retried once after a refused connection, then answered.
            access("envoy-a", 200, Some(2)),
            // Tried three times, all refused: the client saw the last one.
            access("envoy-a", 503, Some(3)),
            // No upstream to choose: no attempt.
            access("envoy-b", 503, Some(0)),
            access("envoy-b", 200, Some(1)),
        ];
        let h = hidden_retries(&lines).unwrap();
        assert_eq!(h.replicas.len(), 2, "{h:#?}");
        let a = &h.replicas[0];
        assert_eq!(a.replica.as_deref(), Some("envoy-a"));
        assert_eq!((a.requests_logged, a.failed_logged), (3, 1));
        assert_eq!((a.requests_counted, a.failed_counted), (Some(6), Some(4)));
        assert_eq!(a.hidden, Some(3));
        let b = &h.replicas[1];
        assert_eq!((b.hidden, b.failed_counted), (Some(0), Some(1)));
        assert_eq!(h.hidden, Some(3));
    }

    #[test]
    fn a_log_that_does_not_count_attempts_leaves_them_not_measured() {
        // Traefik's lines (and an Envoy format without the field) carry no count.
        assert_eq!(hidden_retries(&[access("traefik-a", 502, None)]), None);
        assert_eq!(hidden_retries(&[]), None);
        // One line that does not say leaves its replica, and the total, not measured.
        let h = hidden_retries(&[
            access("envoy-a", 200, Some(2)),
            access("envoy-a", 200, None),
        ])
        .unwrap();
        assert_eq!((h.replicas[0].hidden, h.hidden), (None, None));
    }
}
