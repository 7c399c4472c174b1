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

/// What the hidden retries were counted from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CountedFrom {
    /// Each replica's request counters, scraped around the trial, against its access log
    /// (Traefik's).
    Counters,
    /// The attempt count the access log gives each request (Envoy's).
    AttemptCounts,
}

/// The retries every scraped replica hid (`trial.attach.ingress.hidden_retries`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HiddenRetries {
    /// What they were counted from (schema 5.2); absent in reports written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_from: Option<CountedFrom>,
    /// Per controller replica that was scraped or logged a request, by name.
    pub replicas: Vec<ReplicaRetries>,
    /// The failed attempts the ingress retried, over every replica; null when any replica's
    /// figure is not measured.
    pub hidden: Option<u64>,
    /// Where the retried attempts went, when the log has a line per attempt (Envoy's upstream
    /// log, `ingress_attempt`): per upstream tried, the pod at its address and how many
    /// attempts there were retried; absent when the log has no attempt lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstreams: Option<Vec<RetriedUpstream>>,
}

/// The retried attempts that went to one upstream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetriedUpstream {
    /// The pod at the address; null when no endpoint of the recording had it.
    pub pod: Option<String>,
    /// The `IP:PORT` tried.
    pub upstream: String,
    /// The attempts there that failed and were retried, unseen by the clients.
    pub retried: u64,
}

/// One replica's counters against its access lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaRetries {
    /// The controller pod; null when the recording does not name it.
    pub replica: Option<String>,
    /// The services the trial's logged requests went through (on any replica).
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
    /// not measured or do not hold the same requests as the log (another client's, a line not
    /// read, a 5xx the log has and the counters do not).
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

/// The retries hidden in `lines`, from the counters; `None` when no replica's counters were
/// scraped.
pub fn hidden_retries(lines: &[EventLine]) -> Option<HiddenRetries> {
    if !lines.iter().any(|l| l.event == EventName::IngressMetric) {
        return None;
    }
    // The services the trial's requests went through, from every replica's lines: a replica
    // whose own lines are missing is still judged on the services the others name.
    let services: BTreeSet<&str> = lines
        .iter()
        .filter(|l| l.event == EventName::IngressAccess)
        .filter_map(|l| l.service.as_deref())
        .collect();
    let names: BTreeSet<Option<&str>> = lines
        .iter()
        .filter(|l| matches!(l.event, EventName::IngressMetric | EventName::IngressAccess))
        .map(|l| l.replica.as_deref())
        .collect();
    let replicas: Vec<ReplicaRetries> = names
        .into_iter()
        .map(|r| replica(lines, r, &services))
        .collect();
    let hidden = replicas.iter().map(|r| r.hidden).sum::<Option<u64>>();
    Some(HiddenRetries {
        counted_from: Some(CountedFrom::Counters),
        replicas,
        hidden,
        upstreams: None,
    })
}

/// Counters by (service, code) of one scrape.
type Counters<'a> = BTreeMap<(&'a str, u16), u64>;

fn replica(lines: &[EventLine], name: Option<&str>, services: &BTreeSet<&str>) -> ReplicaRetries {
    let mine = |l: &&EventLine| l.replica.as_deref() == name;
    let logged: Vec<&EventLine> = lines
        .iter()
        .filter(|l| l.event == EventName::IngressAccess)
        .filter(mine)
        .filter(|l| l.service.as_deref().is_some_and(|s| services.contains(s)))
        .collect();
    // The 5xx the replica sent the trial's clients, by status.
    let mut failed_by_code: BTreeMap<u16, u64> = BTreeMap::new();
    for s in logged.iter().filter_map(|l| l.status).filter(|s| *s >= 500) {
        *failed_by_code.entry(s).or_default() += 1;
    }
    let failed_logged: u64 = failed_by_code.values().sum();
    let requests_logged = logged.len() as u64;
    let metrics: Vec<&EventLine> = lines
        .iter()
        .filter(|l| l.event == EventName::IngressMetric)
        .filter(mine)
        .collect();
    let scrapes: Vec<u64> = metrics
        .iter()
        .filter(|l| l.service.is_none())
        .filter_map(|l| l.seq)
        .collect::<BTreeSet<u64>>()
        .into_iter()
        .collect();
    let counters = |seq: u64| -> Counters<'_> {
        metrics
            .iter()
            .filter(|l| l.seq == Some(seq))
            .filter_map(|l| Some(((l.service.as_deref()?, l.status?), l.count?)))
            .filter(|((s, _), _)| services.contains(s))
            .collect()
    };
    // A third scrape after the access log went quiet must equal the second: counters still
    // moving mean a request was counted whose line may not have come.
    let settled = match scrapes.as_slice() {
        [.., second, last] if scrapes.len() >= 3 => counters(*second) == counters(*last),
        _ => true,
    };
    let grown = match (scrapes.first(), scrapes.last()) {
        (Some(&first), Some(&last)) if first < last && settled && !services.is_empty() => {
            growth(&counters(first), &counters(last))
        }
        _ => None,
    };
    let hidden = grown.as_ref().and_then(|by_code| {
        let non_5xx: u64 = by_code
            .iter()
            .filter(|(c, _)| **c < 500)
            .map(|(_, n)| n)
            .sum();
        // Every response that was not a 5xx is one request, counted once, whatever status
        // the log gives it (Traefik logs 0 where its counters say 499); each 5xx status the
        // log gave the clients must be in the counters, and what the counters hold beyond it
        // is the attempts retried.
        if non_5xx != requests_logged - failed_logged {
            return None;
        }
        let mut hidden = 0u64;
        for (code, n) in by_code.iter().filter(|(c, _)| **c >= 500) {
            hidden += n.checked_sub(failed_by_code.get(code).copied().unwrap_or(0))?;
        }
        let logged_codes_counted = failed_by_code.keys().all(|c| by_code.contains_key(c));
        logged_codes_counted.then_some(hidden)
    });
    ReplicaRetries {
        replica: name.map(str::to_string),
        services: services.iter().map(|s| s.to_string()).collect(),
        requests_logged,
        failed_logged,
        requests_counted: grown.as_ref().map(|g| g.values().sum()),
        failed_counted: grown
            .as_ref()
            .map(|g| g.iter().filter(|(c, _)| **c >= 500).map(|(_, n)| n).sum()),
        hidden,
    }
}

/// Every counter's growth from `before` to `after` (a counter absent before is 0), summed over
/// the services by status code; `None` when a counter went back.
fn growth(before: &Counters<'_>, after: &Counters<'_>) -> Option<BTreeMap<u16, u64>> {
    let keys: BTreeSet<&(&str, u16)> = before.keys().chain(after.keys()).collect();
    let mut by_code: BTreeMap<u16, u64> = BTreeMap::new();
    for k in keys {
        let d = after
            .get(k)
            .copied()
            .unwrap_or(0)
            .checked_sub(before.get(k).copied().unwrap_or(0))?;
        *by_code.entry(k.1).or_default() += d;
    }
    Some(by_code)
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
    fn a_replica_is_judged_on_every_replicas_services_and_no_service_is_no_figure() {
        // traefik-b's lines were lost: its counters still hold the trial's service.
        let mut lines = trial(&[], &counters("shop@k", 10, 0), &[200; 10]);
        lines.extend(scrape_lines(&[], "traefik-b", 1, 0));
        lines.extend(scrape_lines(&counters("shop@k", 4, 2), "traefik-b", 2, 0));
        let h = hidden_retries(&lines).unwrap();
        assert_eq!(h.replicas.len(), 2);
        assert_eq!(h.replicas[1].services, ["shop@k"]);
        assert_eq!((h.replicas[1].hidden, h.hidden), (None, None));

        // No access line names a service (a log without ServiceName): nothing to match.
        let mut bare = trial(&[], &counters("shop@k", 10, 0), &[]);
        let mut l = access("traefik-a", "shop@k", 200);
        l.service = None;
        bare.push(l);
        let h = hidden_retries(&bare).unwrap();
        assert_eq!((h.replicas[0].hidden, h.hidden), (None, None));
    }

    #[test]
    fn a_5xx_the_log_has_and_the_counters_do_not_is_no_figure_nor_a_moving_counter() {
        // Two 502s logged, one counted: the counters miss a request the log has.
        let lines = trial(
            &[],
            &counters("shop@k", 8, 1),
            &[[200; 8].as_slice(), &[502, 502]].concat(),
        );
        assert_eq!(hidden_retries(&lines).unwrap().hidden, None);
        // A 504 logged, none counted though 502s were: not the same requests.
        let lines = trial(
            &[],
            &counters("shop@k", 8, 3),
            &[[200; 8].as_slice(), &[504]].concat(),
        );
        assert_eq!(hidden_retries(&lines).unwrap().hidden, None);
        // A third scrape after the log went quiet that moved: a request still counted then.
        let mut moving = trial(&[], &counters("shop@k", 10, 2), &[200; 10]);
        moving.extend(scrape_lines(&counters("shop@k", 11, 2), "traefik-a", 3, 0));
        assert_eq!(hidden_retries(&moving).unwrap().hidden, None);
        let mut settled = trial(&[], &counters("shop@k", 10, 2), &[200; 10]);
        settled.extend(scrape_lines(&counters("shop@k", 10, 2), "traefik-a", 3, 0));
        assert_eq!(hidden_retries(&settled).unwrap().hidden, Some(2));
        // Traefik logs a request whose client left during a retry with status 0 and counts it
        // as 499: one non-5xx response either way.
        let mut c = counters("shop@k", 9, 1);
        c.push(ServiceRequests {
            service: "shop@k".into(),
            code: 499,
            count: 1,
        });
        let lines = trial(&[], &c, &[[200; 9].as_slice(), &[0]].concat());
        assert_eq!(hidden_retries(&lines).unwrap().hidden, Some(1));
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
