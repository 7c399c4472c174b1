//! What is particular to each ingress controller, in one place: which container's log holds
//! its access log and how a line of it reads, how long that log may hold lines back, whether
//! its request counters are scraped for the retries it hides, and how its own endpoint view is
//! read. Everything else on the
//! ingress path (the join, the routing, the view's lags, the hidden retries, the findings) reads
//! only what these give it, the same for every controller; a new controller is a new entry here
//! and its parsers.

use super::retries::CountedFrom;
use super::{IngressAccess, envoy, traefik};
use crate::plan::attach::ingress::IngressController;

/// How a controller's own endpoint view is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewSource {
    /// Its API (`GET /api/http/services`) on the container port named
    /// [`super::traefik_api::API_PORT_NAME`], through the API server's pod proxy.
    TraefikApi,
    /// Its admin interface (`GET /clusters?format=json`) on the loopback-only
    /// [`super::envoy_admin::ADMIN_PORT`], through a port-forward.
    EnvoyAdmin,
}

/// One controller as drainwatch reads it.
#[derive(Debug)]
pub struct Adapter {
    /// The container of its pods whose log holds the access log (the name its Helm chart, or
    /// Envoy Gateway, gives it).
    pub log_container: &'static str,
    /// One line of that log read as a request (or an upstream attempt); `None` for its other
    /// lines.
    pub parse: fn(&str) -> Option<IngressAccess>,
    /// How long the access log must stay quiet after the trial's last request before every
    /// line of it is in, ms: longer than the controller may hold written lines back.
    pub log_quiet_ms: u64,
    /// Where the retries it hides can be counted: its request counters (scraped around the
    /// trial), or the attempt count its log gives each request (nothing to scrape). Which one a
    /// report used is read from what was recorded ([`super::hidden_retries`]).
    pub retries: CountedFrom,
    /// How its own endpoint view is read.
    pub view: ViewSource,
}

/// Traefik: a JSON access log line per request as its response ends; its counters hold the
/// attempts its retries made.
const TRAEFIK: Adapter = Adapter {
    log_container: "traefik",
    parse: traefik::parse,
    log_quiet_ms: 2_000,
    retries: CountedFrom::Counters,
    view: ViewSource::TraefikApi,
};

/// Envoy (under Envoy Gateway): it flushes its access-log file every 10 s unless told otherwise
/// (`--file-flush-interval-msec`, which Envoy Gateway leaves at its default); its log gives each
/// request's attempt count.
const ENVOY: Adapter = Adapter {
    log_container: "envoy",
    parse: envoy::parse,
    log_quiet_ms: 11_000,
    retries: CountedFrom::AttemptCounts,
    view: ViewSource::EnvoyAdmin,
};

/// The adapter of `controller`.
pub const fn adapter(controller: IngressController) -> &'static Adapter {
    match controller {
        IngressController::Traefik => &TRAEFIK,
        IngressController::Envoy => &ENVOY,
    }
}

#[cfg(test)]
mod tests {
    use super::{CountedFrom, adapter};
    use crate::plan::attach::ingress::IngressController;

    // Which parser reads which log: `ingress::tests`.
    #[test]
    fn each_controller_says_where_its_log_is_and_where_its_retries_are_counted() {
        let (t, e) = (
            adapter(IngressController::Traefik),
            adapter(IngressController::Envoy),
        );
        assert_eq!((t.log_container, e.log_container), ("traefik", "envoy"));
        assert_eq!(
            (t.retries, e.retries),
            (CountedFrom::Counters, CountedFrom::AttemptCounts)
        );
        // Envoy's log waits out its 10 s flush; Traefik's writes each line as it answers.
        assert!(e.log_quiet_ms > 10_000 && t.log_quiet_ms < e.log_quiet_ms);
    }
}
