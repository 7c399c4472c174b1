//! The threshold reference as data: one [`Kind`] per form a threshold sentence can take, with
//! its sentence form, examples, the arms it applies to and what it counts. docs/ci.md's
//! threshold table is generated from [`markdown_table`] (tests/threshold_doc.rs fails when the
//! two differ), so a threshold's name, its documentation and its code cannot drift apart.
//!
//! Pure: strings out of the closed set, nothing read.

use super::{Amount, Threshold};

/// The closed set of threshold forms, in the order the reference lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `[tcp|udp] OUTCOME >= N` / `<= N`.
    CountFlows,
    /// `[tcp|udp] OUTCOME >= P%` / `<= P%`.
    CountShare,
    /// `INTERVAL <= DURATION`.
    Interval,
    /// `endpoint-not-ready-before-exit`.
    EndpointNotReadyBeforeExit,
    /// `no-request-failed`.
    NoRequestFailed,
    /// `no-new-connection-refused`.
    NoNewConnectionRefused,
    /// `no-new-connection-failed`.
    NoNewConnectionFailed,
    /// `no-ws-abnormal-close`.
    NoWsAbnormalClose,
    /// `no-stream-reset`.
    NoStreamReset,
    /// `goaway-before-close`.
    GoawayBeforeClose,
    /// `no-watch-cut`.
    NoWatchCut,
    /// `no-ingress-hidden-retry`.
    NoIngressHiddenRetry,
    /// `pNN METRIC <= VALUE`.
    Distribution,
    /// `METRIC <= baseline [+ MARGIN]`.
    Baseline,
    /// `no-regression`.
    NoRegression,
}

impl Kind {
    /// Every kind, in reference order.
    pub const ALL: [Kind; 15] = [
        Self::CountFlows,
        Self::CountShare,
        Self::Interval,
        Self::EndpointNotReadyBeforeExit,
        Self::NoRequestFailed,
        Self::NoNewConnectionRefused,
        Self::NoNewConnectionFailed,
        Self::NoWsAbnormalClose,
        Self::NoStreamReset,
        Self::GoawayBeforeClose,
        Self::NoWatchCut,
        Self::NoIngressHiddenRetry,
        Self::Distribution,
        Self::Baseline,
        Self::NoRegression,
    ];

    /// The threshold a one-word kind is; `None` for the forms that take a measure and a bound.
    pub fn predicate(self) -> Option<Threshold> {
        Some(match self {
            Self::EndpointNotReadyBeforeExit => Threshold::EndpointNotReadyBeforeExit,
            Self::NoRequestFailed => Threshold::NoRequestFailed,
            Self::NoNewConnectionRefused => Threshold::NoNewConnectionRefused,
            Self::NoNewConnectionFailed => Threshold::NoNewConnectionFailed,
            Self::NoWsAbnormalClose => Threshold::NoWsAbnormalClose,
            Self::NoStreamReset => Threshold::NoStreamReset,
            Self::GoawayBeforeClose => Threshold::GoawayBeforeClose,
            Self::NoWatchCut => Threshold::NoWatchCut,
            Self::NoIngressHiddenRetry => Threshold::NoIngressHiddenRetry,
            Self::NoRegression => Threshold::NoRegression,
            Self::CountFlows
            | Self::CountShare
            | Self::Interval
            | Self::Distribution
            | Self::Baseline => return None,
        })
    }

    /// How it is written: the predicate's own name, or the grammar of the form.
    pub fn form(self) -> String {
        if let Some(t) = self.predicate() {
            return format!("`{t}`");
        }
        match self {
            Self::CountFlows => "`[tcp|udp] OUTCOME >= N` or `<= N`",
            Self::CountShare => "`[tcp|udp] OUTCOME >= P%` or `<= P%`",
            Self::Interval => "`INTERVAL <= DURATION`",
            Self::Distribution => "`pNN METRIC <= VALUE`",
            Self::Baseline => "`METRIC <= baseline [+ MARGIN]`",
            _ => "",
        }
        .to_string()
    }

    /// Sentences of this kind, each one a threshold that parses to this kind (unit-tested).
    pub fn examples(self) -> &'static [&'static str] {
        match self {
            Self::CountFlows => &["severed <= 0", "tcp drained-clean-close >= 10"],
            Self::CountShare => &["tcp drained-clean-close >= 100%", "read-timeout <= 10%"],
            Self::Interval => &[
                "sigterm-to-last-flow-end <= 25s",
                "trigger-to-sigterm <= 500ms",
                "node-propagation-lag <= 2s",
                "ingress-last-request-lag <= 1s",
            ],
            Self::Distribution => &[
                "p50 sigterm-to-last-flow-end <= 26s",
                "p90 failed-requests <= 2",
            ],
            Self::Baseline => &[
                "failed-requests <= baseline",
                "failed-dials <= baseline + 2",
            ],
            _ => &[],
        }
    }

    /// Which arms can measure it; any other arm is refused before anything runs.
    pub fn applies_to(self) -> &'static str {
        match self {
            Self::CountFlows | Self::CountShare => {
                "probe arms with flows of that protocol (else any flows)"
            }
            Self::Interval => {
                "any arm that observes both events (SIGTERM is seen by the probe only, endpoints on kubernetes only); `node-propagation-lag`: kubernetes attach arms with `dial-rate` above 0; `ingress-propagation-lag` and `ingress-last-request-lag`: attach arms through an ingress (`ingress-service` or `ingress-managed`)"
            }
            Self::EndpointNotReadyBeforeExit => {
                "kubernetes arms (the local platform has no endpoints)"
            }
            Self::NoRequestFailed => "attach arms with http, http2 or grpc flows",
            Self::NoNewConnectionRefused | Self::NoNewConnectionFailed => {
                "attach arms with `dial-rate` above 0 (any protocol)"
            }
            Self::NoWsAbnormalClose => "websocket attach arms",
            Self::NoStreamReset | Self::GoawayBeforeClose => "http2 and grpc attach arms",
            Self::NoWatchCut => "grpc attach arms with `grpc-watch = true` (or `--grpc-watch`)",
            Self::NoIngressHiddenRetry => {
                "attach arms through an ingress (`ingress-service` or `ingress-managed`) that counts its attempts: Traefik serving its request counters (`--metrics.prometheus=true`), Envoy logging `upstream_request_attempt_count`"
            }
            Self::Distribution => "any arm whose trials measure the metric; once per arm",
            Self::Baseline | Self::NoRegression => {
                "any arm, against a baseline run (below); once per arm"
            }
        }
    }

    /// When it holds: what is counted or measured, and against what.
    pub fn holds_when(self) -> &'static str {
        match self {
            Self::CountFlows => {
                "the count of flows (of that protocol, else all) with that outcome is within the bound"
            }
            Self::CountShare => {
                "the share of those flows (one decimal allowed) with that outcome is within the bound"
            }
            Self::Interval => {
                "the measured interval is at most that long; on an attach arm, `trigger-to-container-exit` and `trigger-to-endpoint-removed` take the worst pod the trial terminated (a pod whose event was not seen: not measured); `node-propagation-lag` is a bound per client node, between the last dial routed to the terminating pod (answered, or failed inside its termination and attributed to it) and the first of a run of later dials other pods answered, long enough that a node still choosing the pod at random would have sent it one with 95 % certainty (5 dials for two pods): it misses when a node's lower bound is over, holds only when every node's upper bound is within, and a node without a later dial leaves it not measured; `ingress-propagation-lag` is the same bound per ingress controller replica, from the requests its access log names the upstream pod of; `ingress-last-request-lag` is the last request the ingress sent a terminated pod after its endpoint turned not ready: it holds only when requests went through the ingress after that edge and the log has every one of them (an unlogged one may have gone to the pod)"
            }
            Self::EndpointNotReadyBeforeExit => {
                "the endpoint left the ready set (ready:false or removed) before the container exited; on an attach arm, every pod the trial terminated, each on its own lane (a tie in whole ms is not before)"
            }
            Self::NoRequestFailed => {
                "no HTTP, HTTP/2 or gRPC request of the held connections failed (any mechanism)"
            }
            Self::NoNewConnectionRefused => {
                "no dial of the new-connection prober was refused (`refused`: ECONNREFUSED, no listener or a reject rule). Only refusals count: a dial that was reset or timed out (a dead pod's address that black-holes SYNs) holds it; gate those with `no-new-connection-failed`"
            }
            Self::NoNewConnectionFailed => {
                "no dial of the new-connection prober failed, however it failed: `refused`, `reset`, `timeout` (the SYN or the answer never came), TLS and handshake failures, an unexpected status, any other error; counted from `dials.failed`, named per result"
            }
            Self::NoWsAbnormalClose => {
                "every held WebSocket connection that ended, ended with the server's close frame 1000 or 1001 (or was open when the window closed); it misses on any `ws-close-abnormal`, `ws-no-close-frame`, `ws-pong-missing`, `reset`, `timeout` or `error` end, named per mechanism (RFC 6455's abnormal closure, 1006, is any end without a close frame). Not measured when no connection was established"
            }
            Self::NoStreamReset => {
                "no request failed with `rst-stream` or `goaway-then-reset` (a stream reset, or failed after the server's GOAWAY)"
            }
            Self::GoawayBeforeClose => {
                "every connection that ended (graceful or severed) had received the server's GOAWAY first: a server that exits without a graceful stop misses it"
            }
            Self::NoWatchCut => {
                "no held `grpc.health.v1.Health/Watch` was cut, i.e. every Watch that ended, ended with a gRPC status (drained or ended-with-status); it misses on each `cut` Watch, named per mechanism (`rst-stream`, `goaway-then-reset`, `no-goaway`, …). Not counted in `failed-requests`; not measured when no Watch was recorded"
            }
            Self::NoIngressHiddenRetry => {
                "the ingress retried no failed attempt the clients never saw: per controller replica, scraped before the trial's first request, after its last and once its access log went quiet, its counters of the services the trial's requests went through grew by no more 5xx than it sent the trial's clients. Not measured when a request was not in the access log, a replica was not scraped each time, a counter went back (a restart) or still moved after the log went quiet, the counters hold requests the log does not name as the trial's (another client's), or a 5xx status the log sent is not in them: the difference would not be the trial's alone"
            }
            Self::Distribution => {
                "the nearest-rank NNth percentile of the metric over the arm's trials is at most VALUE (below)"
            }
            Self::Baseline => {
                "the arm's median of METRIC is at most the baseline arm's median plus the margin (below)"
            }
            Self::NoRegression => {
                "no metric of the arm regressed against the baseline as `drainwatch compare` decides it (below)"
            }
        }
    }
}

impl Threshold {
    /// The reference row this threshold belongs to.
    pub fn kind(&self) -> Kind {
        match self {
            Self::Count {
                amount: Amount::Flows(_),
                ..
            } => Kind::CountFlows,
            Self::Count {
                amount: Amount::PerMille(_),
                ..
            } => Kind::CountShare,
            Self::Interval { .. } => Kind::Interval,
            Self::EndpointNotReadyBeforeExit => Kind::EndpointNotReadyBeforeExit,
            Self::NoRequestFailed => Kind::NoRequestFailed,
            Self::NoNewConnectionRefused => Kind::NoNewConnectionRefused,
            Self::NoNewConnectionFailed => Kind::NoNewConnectionFailed,
            Self::NoWsAbnormalClose => Kind::NoWsAbnormalClose,
            Self::NoStreamReset => Kind::NoStreamReset,
            Self::GoawayBeforeClose => Kind::GoawayBeforeClose,
            Self::NoWatchCut => Kind::NoWatchCut,
            Self::NoIngressHiddenRetry => Kind::NoIngressHiddenRetry,
            Self::Distribution(_) => Kind::Distribution,
            Self::Baseline { .. } => Kind::Baseline,
            Self::NoRegression => Kind::NoRegression,
        }
    }
}

/// A table cell: Markdown tables split on `|`, so it is escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The threshold table of docs/ci.md, header and one row per [`Kind`], each line ending in
/// a newline.
pub fn markdown_table() -> String {
    let mut out =
        String::from("| form | examples | applies to | holds when |\n| --- | --- | --- | --- |\n");
    for k in Kind::ALL {
        let examples: Vec<String> = k.examples().iter().map(|e| format!("`{e}`")).collect();
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            cell(&k.form()),
            cell(&examples.join(", ")),
            cell(k.applies_to()),
            cell(k.holds_when()),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{parse, predicate_names};
    use super::*;

    #[test]
    fn every_example_parses_to_its_own_kind() {
        let mut n = 0;
        for k in Kind::ALL {
            for e in k.examples() {
                assert_eq!(parse(e).map(|t| t.kind()), Ok(k), "{e}");
                n += 1;
            }
        }
        assert_eq!(n, 12);
    }

    #[test]
    fn every_predicate_has_its_row_and_every_row_its_predicate() {
        let names: Vec<&str> = predicate_names().collect();
        assert_eq!(names.len(), 10);
        for name in &names {
            let t = parse(name).unwrap();
            assert_eq!(t.kind().predicate(), Some(t.clone()), "{name}");
            assert_eq!(t.kind().form(), format!("`{name}`"));
        }
        let one_word = Kind::ALL.iter().filter_map(|k| k.predicate()).count();
        assert_eq!(one_word, names.len());
    }

    #[test]
    fn the_arms_column_agrees_with_what_the_parser_says() {
        for k in Kind::ALL {
            let Some(t) = k.predicate() else { continue };
            assert_eq!(
                k.applies_to().contains("attach arms"),
                t.attach_only(),
                "{k:?}"
            );
            if t.h2_only() {
                assert!(k.applies_to().contains("http2 and grpc"), "{k:?}");
            }
            if t.arm_level() {
                assert!(k.applies_to().contains("once per arm"), "{k:?}");
            }
        }
    }

    #[test]
    fn the_table_has_a_row_per_kind_and_escapes_pipes() {
        let t = markdown_table();
        assert_eq!(t.lines().count(), 2 + Kind::ALL.len());
        assert!(t.contains("`[tcp\\|udp] OUTCOME >= N`"), "{t}");
        assert!(t.contains("| `no-new-connection-failed` |"), "{t}");
    }
}
