//! Retries the ingress hid: an attempt that failed on one upstream and was sent again to
//! another, so the client got an answer and never saw the failure (Traefik's ingress-nginx
//! provider retries every route so by default). The access log has one line per client request,
//! naming only the last attempt's upstream; the controller's request counters count every
//! attempt. Each replica is scraped before the trial's first request and after its last
//! (`ingress_metric` lines): over the services the trial's requests went through, the counters'
//! growth in 5xx less the 5xx the replica sent the trial's clients is the attempts it retried.
//! That holds only when the trial's requests are all those services handled between the
//! scrapes: a request of another client in the counters, a counter that went back (a restarted
//! controller) or a scrape missing leaves the replica's figure not measured, never 0.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::event::{EventLine, EventName, Source};

/// One service's requests answered with one status in one scrape, summed over method and
/// protocol (each attempt of a retry counts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceRequests {
    /// The service, as the controller names it (its access log's `ServiceName`).
    pub service: String,
    /// The status code.
    pub code: u16,
    /// Requests (attempts) until the scrape.
    pub count: u64,
}

/// The `ingress_metric` lines of scrape `seq` of `replica`, received at `at_ns`: the scrape's
/// marker, then each counter of `samples`.
pub fn scrape_lines(
    samples: &[ServiceRequests],
    replica: &str,
    seq: u64,
    at_ns: i64,
) -> Vec<EventLine> {
    let line = || {
        let mut l = EventLine::new(Source::Ingress, EventName::IngressMetric, at_ns).seq(seq);
        l.replica = Some(replica.to_string());
        l
    };
    let counters = samples.iter().map(|s| {
        let mut l = line();
        l.service = Some(s.service.clone());
        l.status = Some(s.code);
        l.count = Some(s.count);
        l
    });
    std::iter::once(line()).chain(counters).collect()
}

/// The retries every scraped replica hid (`trial.attach.ingress.hidden_retries`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HiddenRetries {
    /// Per controller replica that was scraped or logged a request, by name.
    pub replicas: Vec<ReplicaRetries>,
    /// The failed attempts the ingress retried, over every replica; null when any replica's
    /// figure is not measured.
    pub hidden: Option<u64>,
}

/// One replica's counters against its access lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaRetries {
    /// The controller pod; null when the recording does not name it.
    pub replica: Option<String>,
    /// The services the trial's logged requests went through on it.
    pub services: Vec<String>,
    /// The trial's requests it logged for those services.
    pub requests_logged: u64,
    /// ... of which it answered with a 5xx.
    pub failed_logged: u64,
    /// The counters' growth over those services between the scrapes, every status; null when
    /// it was not scraped before and after, or a counter went back.
    pub requests_counted: Option<u64>,
    /// ... 5xx only.
    pub failed_counted: Option<u64>,
    /// `failed_counted - failed_logged`: the attempts it retried; null when the counters are
    /// not measured or hold requests the log does not (another client's, or a line not read).
    pub hidden: Option<u64>,
}

impl ReplicaRetries {
    /// Requests in the counters that are not the trial's logged requests or their retried
    /// attempts; null when the counters are not measured.
    pub fn other_requests(&self) -> Option<i64> {
        let counted = i64::try_from(self.requests_counted?).ok()?;
        let failed = i64::try_from(self.failed_counted?).ok()?;
        let logged = i64::try_from(self.requests_logged).ok()?;
        let failed_logged = i64::try_from(self.failed_logged).ok()?;
        Some(counted - logged - (failed - failed_logged))
    }
}

/// The retries hidden in `lines`; `None` when no replica's counters were scraped.
pub fn hidden_retries(lines: &[EventLine]) -> Option<HiddenRetries> {
    if !lines.iter().any(|l| l.event == EventName::IngressMetric) {
        return None;
    }
    let names: BTreeSet<Option<&str>> = lines
        .iter()
        .filter(|l| matches!(l.event, EventName::IngressMetric | EventName::IngressAccess))
        .map(|l| l.replica.as_deref())
        .collect();
    let replicas: Vec<ReplicaRetries> = names.into_iter().map(|r| replica(lines, r)).collect();
    let hidden = replicas.iter().map(|r| r.hidden).sum::<Option<u64>>();
    Some(HiddenRetries { replicas, hidden })
}

/// Counters by (service, code) of one scrape.
type Counters<'a> = BTreeMap<(&'a str, u16), u64>;

fn replica(lines: &[EventLine], name: Option<&str>) -> ReplicaRetries {
    let mine = |l: &&EventLine| l.replica.as_deref() == name;
    let logged: Vec<&EventLine> = lines
        .iter()
        .filter(|l| l.event == EventName::IngressAccess)
        .filter(mine)
        .filter(|l| l.service.is_some())
        .collect();
    let services: BTreeSet<&str> = logged.iter().filter_map(|l| l.service.as_deref()).collect();
    let failed_logged = logged
        .iter()
        .filter(|l| l.status.is_some_and(|s| s >= 500))
        .count() as u64;
    let metrics: Vec<&EventLine> = lines
        .iter()
        .filter(|l| l.event == EventName::IngressMetric)
        .filter(mine)
        .collect();
    let scrapes: BTreeSet<u64> = metrics
        .iter()
        .filter(|l| l.service.is_none())
        .filter_map(|l| l.seq)
        .collect();
    let counters = |seq: u64| -> Counters<'_> {
        metrics
            .iter()
            .filter(|l| l.seq == Some(seq))
            .filter_map(|l| Some(((l.service.as_deref()?, l.status?), l.count?)))
            .filter(|((s, _), _)| services.contains(s))
            .collect()
    };
    let grown = match (scrapes.first(), scrapes.last()) {
        (Some(&first), Some(&last)) if first < last => growth(&counters(first), &counters(last)),
        _ => None,
    };
    let requests_logged = logged.len() as u64;
    let hidden = grown.and_then(|(all, failed)| {
        let h = failed.checked_sub(failed_logged)?;
        (all == requests_logged + h).then_some(h)
    });
    ReplicaRetries {
        replica: name.map(str::to_string),
        services: services.iter().map(|s| s.to_string()).collect(),
        requests_logged,
        failed_logged,
        requests_counted: grown.map(|(all, _)| all),
        failed_counted: grown.map(|(_, failed)| failed),
        hidden,
    }
}

/// Every counter's growth from `before` to `after` (a counter absent before is 0), summed:
/// (every status, 5xx only); `None` when a counter went back.
fn growth(before: &Counters<'_>, after: &Counters<'_>) -> Option<(u64, u64)> {
    let keys: BTreeSet<&(&str, u16)> = before.keys().chain(after.keys()).collect();
    let mut all = 0u64;
    let mut failed = 0u64;
    for k in keys {
        let d = after
            .get(k)
            .copied()
            .unwrap_or(0)
            .checked_sub(before.get(k).copied().unwrap_or(0))?;
        all += d;
        if k.1 >= 500 {
            failed += d;
        }
    }
    Some((all, failed))
}

#[cfg(test)]
mod tests {
    use super::{ServiceRequests, hidden_retries, scrape_lines};
    use crate::event::{EventLine, EventName, Source};

    fn counters(service: &str, ok: u64, failed: u64) -> Vec<ServiceRequests> {
        let c = |code, count| ServiceRequests {
            service: service.into(),
            code,
            count,
        };
        [c(200, ok), c(502, failed)]
            .into_iter()
            .filter(|s| s.count > 0)
            .collect()
    }

    fn access(replica: &str, service: &str, status: u16) -> EventLine {
        let mut l = EventLine::new(Source::Ingress, EventName::IngressAccess, 0).flow("http-0001");
        l.replica = Some(replica.into());
        l.service = Some(service.into());
        l.status = Some(status);
        l
    }

    fn trial(
        before: &[ServiceRequests],
        after: &[ServiceRequests],
        logged: &[u16],
    ) -> Vec<EventLine> {
        let mut lines = scrape_lines(before, "traefik-a", 1, 0);
        lines.extend(logged.iter().map(|s| access("traefik-a", "shop@k", *s)));
        lines.extend(scrape_lines(after, "traefik-a", 2, 0));
        lines
    }

    #[test]
    fn failed_attempts_the_client_never_saw_are_hidden_retries() {
        // 10 requests logged, every one answered 200 to the client; the counters grew by 10
        // answered and 9 failed attempts.
        let lines = trial(&[], &counters("shop@k", 10, 9), &[200; 10]);
        let h = hidden_retries(&lines).unwrap();
        assert_eq!(h.replicas.len(), 1);
        let r = &h.replicas[0];
        assert_eq!(r.services, ["shop@k"]);
        assert_eq!((r.requests_logged, r.failed_logged), (10, 0));
        assert_eq!((r.requests_counted, r.failed_counted), (Some(19), Some(9)));
        assert_eq!(
            (r.hidden, h.hidden, r.other_requests()),
            (Some(9), Some(9), Some(0))
        );
    }

    #[test]
    fn failures_the_client_saw_are_not_hidden() {
        // Counters before the trial (another run's) are subtracted; two 502s reached the
        // client and were not retried.
        let lines = trial(
            &counters("shop@k", 50, 5),
            &counters("shop@k", 58, 7),
            &[[200; 8].as_slice(), &[502, 502]].concat(),
        );
        let h = hidden_retries(&lines).unwrap();
        assert_eq!(h.hidden, Some(0));
    }

    #[test]
    fn another_clients_requests_a_restart_or_a_missing_scrape_leave_it_not_measured() {
        let busy = trial(&[], &counters("shop@k", 12, 1), &[200; 10]);
        let h = hidden_retries(&busy).unwrap();
        assert_eq!((h.hidden, h.replicas[0].other_requests()), (None, Some(2)));

        let restarted = trial(
            &counters("shop@k", 50, 0),
            &counters("shop@k", 10, 0),
            &[200; 10],
        );
        let h = hidden_retries(&restarted).unwrap();
        assert_eq!((h.hidden, h.replicas[0].requests_counted), (None, None));

        let mut once = scrape_lines(&[], "traefik-a", 1, 0);
        once.push(access("traefik-a", "shop@k", 200));
        let h = hidden_retries(&once).unwrap();
        assert_eq!((h.hidden, h.replicas[0].failed_counted), (None, None));

        // A second replica that logged the trial's requests but was never scraped.
        let mut two = trial(&[], &counters("shop@k", 10, 0), &[200; 10]);
        two.push(access("traefik-b", "shop@k", 200));
        let h = hidden_retries(&two).unwrap();
        assert_eq!(h.replicas.len(), 2);
        assert_eq!(
            (h.replicas[0].hidden, h.replicas[1].hidden, h.hidden),
            (Some(0), None, None)
        );
    }

    #[test]
    fn other_services_counters_are_not_the_trials_and_no_scrape_is_no_figure() {
        let mut other = counters("admin@k", 100, 40);
        other.extend(counters("shop@k", 10, 3));
        let lines = trial(&[], &other, &[200; 10]);
        assert_eq!(hidden_retries(&lines).unwrap().hidden, Some(3));
        let unscraped = [access("traefik-a", "shop@k", 200)];
        assert!(hidden_retries(&unscraped).is_none());
    }
}
