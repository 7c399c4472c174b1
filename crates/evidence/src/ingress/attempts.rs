//! Retries the ingress hid, read from its access log alone where each line counts the attempts
//! the ingress made upstream (Envoy's `upstream_request_attempt_count`, on the `ingress_access`
//! line's `count`): a request tried `n` times failed `n - 1` attempts before the last, which
//! decided what the client saw, so the hidden attempts are exact per request, with no counters
//! to scrape. The figures fill the same [`HiddenRetries`] the counters do: `requests_counted`
//! is the attempts made, `failed_counted` the failures the clients saw plus those hidden.

use std::collections::BTreeSet;

use super::retries::{HiddenRetries, ReplicaRetries};
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
    Some(HiddenRetries { replicas, hidden })
}

#[cfg(test)]
mod tests {
    use super::hidden_retries;
    use crate::event::{EventLine, EventName, Source};

    fn access(replica: &str, status: u16, attempts: Option<u64>) -> EventLine {
        let mut l = EventLine::new(Source::Ingress, EventName::IngressAccess, 0).flow("http-0001");
        l.replica = Some(replica.into());
        l.service = Some("httproute/shop/web/rule/0".into());
        l.status = Some(status);
        l.count = attempts;
        l
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
