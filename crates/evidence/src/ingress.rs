//! Through an ingress: what a proxy in front of the pods made of each request. The client's
//! connection ends at the proxy, so a failed request says nothing about a pod until the
//! proxy's own record names the upstream it chose. Each controller's log format has a parser
//! (`traefik`, `envoy`, chosen by its [`adapter`]) that reads one access-log line into an
//! [`IngressAccess`] and decides its outcome from what that controller logs. The orchestrator
//! records each as an `ingress_access` line ([`IngressAccess::line`]); [`join`] ties those to
//! the client's requests by the `X-Drainwatch-Request` id ([`crate::request_id`]) and maps
//! each upstream address to its pod. A request the ingress did not log is not measured, never
//! a pass.

pub mod adapter;
pub mod attempts;
pub mod envoy;
pub mod envoy_admin;
pub mod join;
pub mod render;
pub mod retries;
pub mod routing;
pub mod summary;
pub mod traefik;
pub mod traefik_api;
pub mod traefik_metrics;
pub mod view;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::event::{EventLine, EventName, Source};
use crate::plan::attach::ingress::IngressController;
use crate::request_id::{RequestId, Spelling};

/// One request as the ingress logged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngressAccess {
    /// The `X-Drainwatch-Request` value the ingress kept; `None` when the request carried none
    /// (another client's) or the ingress was not configured to log it.
    pub request_id: Option<String>,
    /// The upstream `IP:PORT` the ingress sent the request to; `None` when it chose none.
    pub upstream: Option<String>,
    /// The routing rule that matched; `None` when no rule did.
    pub router: Option<String>,
    /// The status the client was sent.
    pub downstream_status: u16,
    /// The ingress's service the router sent the request to; `None` when none.
    pub service: Option<String>,
    /// What the ingress made of the request: its controller's parser decides it, from what that
    /// controller logs (Traefik's statuses and chosen upstream, Envoy's response flags and
    /// details).
    pub outcome: IngressOutcome,
    /// The attempts the ingress made upstream for the request, retries included, when its log
    /// says (Envoy's `upstream_request_attempt_count`); `None` when it does not (Traefik).
    pub attempts: Option<u32>,
    /// The line is one upstream attempt of the request (Envoy's upstream log), not the request
    /// as the client was answered: recorded as `ingress_attempt`, never joined as a request.
    pub attempt: bool,
}

/// What the ingress made of one request: the closed set a report states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IngressOutcome {
    /// An upstream answered; its status went to the client.
    UpstreamStatus,
    /// 502 (Envoy: 503) from the upstream the ingress chose: it refused, reset or closed before
    /// answering, and the log does not say which (Traefik's access log never does; its
    /// debug-level error line does). Rarely the upstream itself answered 502.
    UpstreamError,
    /// The upstream the ingress chose refused the connection (Envoy: `UF`, its details
    /// `Connection_refused`): nothing listened at the pod's address, an app gone from a pod that
    /// is still there.
    UpstreamRefused,
    /// The connection to the upstream the ingress chose was not answered within the ingress's
    /// connect timeout (Envoy: `UF`, its details `connection_timeout`): an address that drops
    /// SYNs, usually a pod that is gone.
    UpstreamConnectTimeout,
    /// The upstream closed or reset the connection before its response started (Envoy: `UC`,
    /// which does not tell a FIN from a RST): a server exiting with the request in flight, or
    /// closing a kept-alive connection as the ingress sent on it.
    UpstreamClosed,
    /// The upstream reset the request's stream (Envoy: `UR`).
    UpstreamReset,
    /// 504 from the upstream the ingress chose: no answer in time.
    UpstreamTimeout,
    /// 499: the client gave up before the upstream the ingress chose answered (a request
    /// held on a pod that no longer answers, where the client's timeout is the shorter).
    ClientClosed,
    /// A rule matched but the ingress had no upstream to choose (503: every endpoint fenced
    /// as terminating, or none eligible).
    NoAvailableServer,
    /// No rule matched (404 with no router: no Ingress for the host, or the service had no
    /// serving endpoint and its rule was dropped).
    NoRoute,
    /// Another status the ingress produced itself, without an upstream's answer.
    IngressStatus,
}

impl IngressOutcome {
    /// Whether the upstream the ingress logged decided the outcome: it answered, failed the
    /// connection or ran out the ingress's timeout. Not so for a client that gave up: with the
    /// ingress retrying, the logged upstream is only the last try's, which may have begun as the
    /// client left.
    pub fn decided_by_upstream(self) -> bool {
        self == Self::UpstreamStatus || self == Self::UpstreamTimeout || self.upstream_failed()
    }

    /// Whether the connection to the upstream the ingress chose failed before any answer: the
    /// outcomes a log that says how (Envoy's details) tells apart, and the one that does not.
    pub fn upstream_failed(self) -> bool {
        matches!(
            self,
            Self::UpstreamError
                | Self::UpstreamRefused
                | Self::UpstreamConnectTimeout
                | Self::UpstreamClosed
                | Self::UpstreamReset
        )
    }

    /// The kebab-case name reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UpstreamStatus => "upstream-status",
            Self::UpstreamError => "upstream-error",
            Self::UpstreamRefused => "upstream-refused",
            Self::UpstreamConnectTimeout => "upstream-connect-timeout",
            Self::UpstreamClosed => "upstream-closed",
            Self::UpstreamReset => "upstream-reset",
            Self::UpstreamTimeout => "upstream-timeout",
            Self::ClientClosed => "client-closed",
            Self::NoAvailableServer => "no-available-server",
            Self::NoRoute => "no-route",
            Self::IngressStatus => "ingress-status",
        }
    }

    /// Every outcome, in the order reports list them.
    pub const ALL: [Self; 11] = [
        Self::UpstreamStatus,
        Self::UpstreamError,
        Self::UpstreamRefused,
        Self::UpstreamConnectTimeout,
        Self::UpstreamClosed,
        Self::UpstreamReset,
        Self::UpstreamTimeout,
        Self::ClientClosed,
        Self::NoAvailableServer,
        Self::NoRoute,
        Self::IngressStatus,
    ];

    /// The outcome named `s` (as [`Self::as_str`] spells it).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

/// One line of `controller`'s log read as a request it logged (or one upstream attempt of a
/// request, [`IngressAccess::attempt`]); `None` for its other lines.
pub fn access(controller: IngressController, line: &str) -> Option<IngressAccess> {
    (adapter::adapter(controller).parse)(line)
}

/// Every request (and attempt) `controller` logged in `text`, in order.
pub fn accesses(controller: IngressController, text: &str) -> Vec<IngressAccess> {
    text.lines().filter_map(|l| access(controller, l)).collect()
}

/// The retries the ingress hid in `lines`: from its counters where a replica was scraped
/// (Traefik), else from the attempt counts its log gives each request (Envoy); `None` when
/// neither was recorded. Where its log has a line per attempt, the upstreams the retried
/// attempts went to, each named as a pod by `pods` (endpoint IP to pod).
pub fn hidden_retries(
    lines: &[EventLine],
    pods: &BTreeMap<String, String>,
) -> Option<retries::HiddenRetries> {
    let mut h = retries::hidden_retries(lines).or_else(|| attempts::hidden_retries(lines))?;
    h.upstreams = attempts::retried_upstreams(lines, pods);
    Some(h)
}

impl IngressAccess {
    /// The `ingress_access` line of this request, received at `at_ns`; `None` when it carries
    /// no id of this trial's `ids` (another client's, run's or trial's request: not this
    /// trial's evidence).
    pub fn line(&self, at_ns: i64, ids: &Spelling) -> Option<EventLine> {
        let id = ids.read(self.request_id.as_deref()?)?;
        let (flow, seq) = match id {
            RequestId::Request { flow, seq } => (flow, Some(seq)),
            RequestId::Dial { flow } => (flow, None),
        };
        let name = if self.attempt {
            EventName::IngressAttempt
        } else {
            EventName::IngressAccess
        };
        let mut l = EventLine::new(Source::Ingress, name, at_ns).flow(flow);
        l.seq = seq;
        // An attempt that had no answer has no status (its result says why), never 0.
        l.status = (!self.attempt || self.downstream_status != 0).then_some(self.downstream_status);
        l.result = Some(self.outcome.as_str().to_string());
        l.upstream = self.upstream.clone();
        l.detail = self.router.clone();
        l.service = self.service.clone();
        l.count = self.attempts.map(u64::from);
        Some(l)
    }
}

#[cfg(test)]
mod tests {
    use super::{IngressAccess, IngressOutcome, Spelling};

    fn refused() -> IngressAccess {
        IngressAccess {
            request_id: None,
            upstream: Some("10.1.0.7:8080".into()),
            router: Some("shop-web@kubernetes".into()),
            downstream_status: 502,
            service: None,
            outcome: IngressOutcome::UpstreamError,
            attempts: None,
            attempt: false,
        }
    }

    #[test]
    fn every_outcome_reads_back_from_its_name() {
        for o in IngressOutcome::ALL {
            assert_eq!(IngressOutcome::parse(o.as_str()), Some(o));
            let json = serde_json::to_string(&o).unwrap();
            assert_eq!(json, format!("\"{}\"", o.as_str()));
        }
        assert_eq!(IngressOutcome::parse("upstream"), None);
    }

    #[test]
    fn an_access_line_is_recorded_under_the_requests_own_id() {
        let mut a = refused();
        a.request_id = Some("http-0002/9".into());
        let bare = Spelling::default();
        let l = a.line(42, &bare).unwrap();
        assert_eq!(l.event, crate::event::EventName::IngressAccess);
        assert_eq!((l.flow_id.as_deref(), l.seq), (Some("http-0002"), Some(9)));
        assert_eq!(
            (l.status, l.result.as_deref()),
            (Some(502), Some("upstream-error"))
        );
        assert_eq!(l.upstream.as_deref(), Some("10.1.0.7:8080"));
        a.request_id = Some("dial-000003".into());
        let d = a.line(43, &bare).unwrap();
        assert_eq!((d.flow_id.as_deref(), d.seq), (Some("dial-000003"), None));
        a.request_id = Some("someone-elses".into());
        assert!(a.line(44, &bare).is_none());
        a.request_id = None;
        assert!(a.line(45, &bare).is_none());
        // Under a trial's prefix: its own ids, not another trial's.
        let prefix: crate::request_id::RequestIdPrefix = "run-001".parse().unwrap();
        let ours = Spelling::new(Some(&prefix));
        a.request_id = Some("run-001.http-0002/9".into());
        let l = a.line(46, &ours).unwrap();
        assert_eq!((l.flow_id.as_deref(), l.seq), (Some("http-0002"), Some(9)));
        a.request_id = Some("run-002.http-0002/9".into());
        assert!(a.line(47, &ours).is_none());
        a.request_id = Some("http-0002/9".into());
        assert!(a.line(48, &ours).is_none());
    }
    #[test]
    fn each_controllers_lines_are_read_by_its_own_adapter() {
        use crate::plan::attach::ingress::IngressController;
        let traefik = r#"{"DownstreamStatus":502,"ServiceAddr":"10.1.0.7:8080","RouterName":"r","request_X-Drainwatch-Request":"http-0001/1"}"#;
        let envoy = r#"{"response_code":503,"response_flags":"UF","upstream_host":"10.1.0.7:8080","route_name":"r","x-drainwatch-request":"http-0001/1"}"#;
        let read = |c, l| super::access(c, l).map(|a| a.outcome);
        assert_eq!(
            read(IngressController::Traefik, traefik),
            Some(IngressOutcome::UpstreamError)
        );
        assert_eq!(
            read(IngressController::Envoy, envoy),
            Some(IngressOutcome::UpstreamError)
        );
        // Neither reads the other's lines as requests.
        assert_eq!(read(IngressController::Traefik, envoy), None);
        assert_eq!(read(IngressController::Envoy, traefik), None);
    }
}
