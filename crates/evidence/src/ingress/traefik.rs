//! Traefik's JSON access log (`--accesslog.format=json`, with
//! `--accesslog.fields.headers.names.X-Drainwatch-Request=keep`): one line per request the
//! client sent, naming the upstream (`ServiceAddr`) and the request id it carried. Traefik
//! writes its own log to the same stream when both go to stdout; those lines are not access
//! lines and are passed over.

use serde::Deserialize;

use super::{IngressAccess, IngressOutcome};

/// The flags a Traefik needs for drainwatch to read its access log, as a user adds them.
pub const ACCESS_LOG_FLAGS: [&str; 3] = [
    "--accesslog.format=json",
    "--accesslog.fields.headers.defaultmode=drop",
    "--accesslog.fields.headers.names.X-Drainwatch-Request=keep",
];

/// The fields read; Traefik omits a field it has no value for.
#[derive(Deserialize)]
struct Raw {
    #[serde(rename = "DownstreamStatus")]
    downstream_status: Option<u16>,
    #[serde(rename = "OriginStatus")]
    origin_status: Option<u16>,
    #[serde(rename = "ServiceAddr")]
    service_addr: Option<String>,
    #[serde(rename = "RouterName")]
    router_name: Option<String>,
    #[serde(rename = "ServiceName")]
    service_name: Option<String>,
    #[serde(rename = "request_X-Drainwatch-Request")]
    request_id: Option<String>,
}

/// Reads one line of Traefik's stdout: `None` for its own log and text that is not JSON.
pub fn parse(line: &str) -> Option<IngressAccess> {
    let raw = serde_json::from_str::<Raw>(line).ok()?;
    let downstream_status = raw.downstream_status?;
    let text = |s: Option<String>| s.filter(|s| !s.is_empty() && s != "-");
    let origin_status = raw.origin_status.filter(|s| *s != 0);
    let upstream = text(raw.service_addr);
    let router = text(raw.router_name);
    let outcome = outcome(
        router.is_some(),
        upstream.is_some(),
        origin_status.is_some(),
        downstream_status,
    );
    Some(IngressAccess {
        request_id: text(raw.request_id),
        upstream,
        router,
        service: text(raw.service_name),
        downstream_status,
        outcome,
        // Its log names only the last try: the counters say what retries cost.
        attempts: None,
        attempt: false,
    })
}

/// What Traefik made of a request: whether a router matched, an upstream was chosen and
/// answered, and the status the client was sent.
fn outcome(routed: bool, upstream: bool, answered: bool, status: u16) -> IngressOutcome {
    match (routed, upstream, answered, status) {
        // Traefik logs its own 502 / 504 / 499 as the origin's status too: the upstream chosen
        // and the status say what happened, whatever the origin field holds.
        (_, true, _, 502) => IngressOutcome::UpstreamError,
        (_, true, _, 504) => IngressOutcome::UpstreamTimeout,
        (_, true, _, 499) => IngressOutcome::ClientClosed,
        // No response was written: the client left while Traefik still waited on an upstream
        // (it logs 0 where a retry was under way; its counters say 499).
        (_, true, _, 0) => IngressOutcome::ClientClosed,
        (_, true, true, _) => IngressOutcome::UpstreamStatus,
        (false, false, _, 404) => IngressOutcome::NoRoute,
        (true, false, _, 503) => IngressOutcome::NoAvailableServer,
        _ => IngressOutcome::IngressStatus,
    }
}

#[cfg(test)]
mod tests {
    use super::{outcome, parse};
    use crate::ingress::IngressOutcome;

    #[test]
    fn a_served_request_names_its_upstream_and_id() {
        let l = r#"{"DownstreamStatus":200,"OriginStatus":200,"OriginDuration":812345,"ServiceAddr":"10.1.0.7:8080","RouterName":"shop-web@kubernetes","StartUTC":"2026-12-05T18:00:00.123456789Z","request_X-Drainwatch-Request":"http-0001/7","level":"info"}"#;
        let a = parse(l).expect("an access line");
        assert_eq!(a.request_id.as_deref(), Some("http-0001/7"));
        assert_eq!(a.upstream.as_deref(), Some("10.1.0.7:8080"));
        assert_eq!(a.downstream_status, 200);
        assert_eq!(a.outcome, IngressOutcome::UpstreamStatus);
    }

    #[test]
    fn no_available_server_has_a_router_and_no_upstream() {
        let l = r#"{"DownstreamStatus":503,"OriginStatus":0,"OriginDuration":0,"RouterName":"shop-web@kubernetes","request_X-Drainwatch-Request":"dial-000004"}"#;
        let a = parse(l).expect("an access line");
        assert_eq!((&a.upstream, a.downstream_status), (&None, 503));
        assert_eq!(a.outcome, IngressOutcome::NoAvailableServer);
    }

    #[test]
    fn traefiks_own_lines_and_text_are_not_access_lines() {
        let others = [
            r#"{"level":"error","error":"dial tcp 10.1.0.7:8080: connect: connection refused","time":"2026-12-05T18:00:01Z","message":"502 Bad Gateway"}"#,
            "2026-12-05T18:00:01Z INF Traefik version 3.7.13 built on fromproxy",
            "",
            "[1,2]",
        ];
        assert_eq!(others.len(), 4);
        for l in others {
            assert_eq!(parse(l), None, "{l}");
        }
    }
    #[test]
    fn each_outcome_follows_from_the_logged_fields() {
        use IngressOutcome::*;
        // (router matched, upstream chosen, origin answered, status) → outcome
        let cases = [
            ((true, true, true, 200), UpstreamStatus),
            ((true, true, true, 503), UpstreamStatus),
            ((true, true, false, 502), UpstreamError),
            ((true, true, true, 502), UpstreamError),
            ((true, true, false, 504), UpstreamTimeout),
            ((true, true, true, 499), ClientClosed),
            // The retry middleware, the client gone mid-retry: origin 200, no response.
            ((true, true, true, 0), ClientClosed),
            ((true, false, false, 503), NoAvailableServer),
            ((false, false, false, 404), NoRoute),
            ((true, false, false, 500), IngressStatus),
            ((false, false, false, 400), IngressStatus),
        ];
        assert_eq!(cases.len(), 11);
        for ((routed, upstream, answered, status), want) in cases {
            assert_eq!(
                outcome(routed, upstream, answered, status),
                want,
                "{routed} {upstream} {answered} {status}"
            );
        }
    }
}
