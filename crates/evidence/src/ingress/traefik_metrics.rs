//! Traefik's request counters (`--metrics.prometheus=true`, served at `/metrics` on its
//! `traefik` entry point): `traefik_service_requests_total` counts each request a service
//! handled, by status code, and a retry's every attempt on its own, where the access log has one
//! line per client request with only the last attempt's upstream. The difference between the
//! two is what a retry hid from the client ([`super::retries`]).

use std::collections::BTreeMap;

use prometheus_parse::{Scrape, Value};

use super::retries::ServiceRequests;

/// The counter read.
pub const SERVICE_REQUESTS: &str = "traefik_service_requests_total";

/// The flag a Traefik needs for drainwatch to read its counters, as a user adds it.
pub const METRICS_FLAG: &str = "--metrics.prometheus=true";

/// The path Traefik serves them on.
pub const METRICS_PATH: &str = "/metrics";

/// Why a scrape's text was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricsError {
    /// No metric of Traefik's in it: another server's page, or metrics not enabled.
    #[error(
        "no traefik_ metric in the page (is {METRICS_FLAG} set, and is this Traefik's metrics port?)"
    )]
    NotTraefik,
    /// A counter that is not a whole count.
    #[error("{SERVICE_REQUESTS} holds {0}, not a count")]
    NotACount(String),
}

/// Each service's requests by status code in one scrape's text, summed over method and
/// protocol, in service then code order. A service with no request yet has no counter: it is
/// absent, which is a count of 0.
pub fn service_requests(text: &str) -> Result<Vec<ServiceRequests>, MetricsError> {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    // The samples' time is not read: a fixed one (the epoch) keeps the core off the clock.
    let scrape = Scrape::parse_at(lines, chrono::DateTime::<chrono::Utc>::default())
        .map_err(|_| MetricsError::NotTraefik)?;
    let traefik = scrape.docs.keys().any(|m| m.starts_with("traefik_"))
        || scrape
            .samples
            .iter()
            .any(|s| s.metric.starts_with("traefik_"));
    if !traefik {
        return Err(MetricsError::NotTraefik);
    }
    let mut sums: BTreeMap<(String, u16), u64> = BTreeMap::new();
    for s in scrape
        .samples
        .iter()
        .filter(|s| s.metric == SERVICE_REQUESTS)
    {
        let (Some(service), Some(code)) = (
            s.labels.get("service"),
            s.labels.get("code").and_then(|c| c.parse::<u16>().ok()),
        ) else {
            continue;
        };
        let v = match s.value {
            Value::Counter(v) | Value::Untyped(v) => v,
            _ => continue,
        };
        let count = whole(v).ok_or_else(|| MetricsError::NotACount(v.to_string()))?;
        *sums.entry((service.to_string(), code)).or_default() += count;
    }
    Ok(sums
        .into_iter()
        .map(|((service, code), count)| ServiceRequests {
            service,
            code,
            count,
        })
        .collect())
}

/// `v` as a count, when it is one.
fn whole(v: f64) -> Option<u64> {
    let ok = v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 2f64.powi(53);
    // In range and whole, checked above: the cast is exact.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    ok.then_some(v as u64)
}

#[cfg(test)]
mod tests {
    use super::{MetricsError, service_requests};
    use crate::ingress::retries::ServiceRequests;

    /// Scraped from Traefik v3.7.13 (`make traefik`) after ten GETs through a service with a
    /// retry middleware (attempts 3) and two servers, one of them refusing: every client got
    /// 200, and nine attempts had failed first.
    const RETRIED: &str = include_str!("testdata/traefik-metrics-retried.txt");

    #[test]
    fn a_retried_services_failed_attempts_are_counted_by_code() {
        let got = service_requests(RETRIED).unwrap();
        assert_eq!(
            got,
            [
                ServiceRequests {
                    service: "shop@file".into(),
                    code: 200,
                    count: 10
                },
                ServiceRequests {
                    service: "shop@file".into(),
                    code: 502,
                    count: 9
                },
            ]
        );
    }

    #[test]
    fn methods_and_protocols_are_summed_and_a_page_without_traefik_is_refused() {
        let text = "# TYPE traefik_service_requests_total counter\n\
            traefik_service_requests_total{code=\"200\",method=\"GET\",protocol=\"http\",service=\"a@k\"} 3\n\
            traefik_service_requests_total{code=\"200\",method=\"POST\",protocol=\"http\",service=\"a@k\"} 2\n\
            traefik_service_requests_total{code=\"200\",method=\"GET\",protocol=\"websocket\",service=\"a@k\"} 1\n";
        let got = service_requests(text).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].count, 6);
        assert_eq!(
            service_requests("# TYPE go_goroutines gauge\ngo_goroutines 12\n"),
            Err(MetricsError::NotTraefik)
        );
        assert_eq!(service_requests(""), Err(MetricsError::NotTraefik));
        let half = "traefik_service_requests_total{code=\"200\",service=\"a@k\"} 1.5\n";
        assert!(matches!(
            service_requests(half),
            Err(MetricsError::NotACount(_))
        ));
    }
}
