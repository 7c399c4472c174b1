//! The ingress in words: the text report's `ingress` row and the markdown sentence per arm.

use super::retries::{HiddenRetries, RetriedUpstream};
use super::routing::IngressRouting;
use super::summary::IngressReport;
use super::view::ReplicaView;
use crate::data_plane::NodeView;
use crate::format::ms;

/// Kube-proxy's routing beside the ingress's, when the direct prober dialled the target's
/// Service in the same trial (`direct`: the client nodes' views read from those dials): each
/// node's lag after a terminated pod's endpoint turned not ready, as its bounds, and whether the
/// ingress's last request (a lower bound) came later than every node's upper bound. `None`
/// without the ingress's lag or a node.
pub fn beside_kube_proxy(i: &IngressReport, direct: Option<&[NodeView]>) -> Option<String> {
    let ingress = i.routing.as_ref()?.last_request_lag_ms?;
    let nodes = direct.filter(|n| !n.is_empty())?;
    let bounds = |n: &NodeView| {
        let most = n.lag_at_most_ms.map_or_else(
            || "not bounded".to_string(),
            |m| format!("at most {}", ms(Some(m))),
        );
        match n.lag_at_least_ms {
            None => "not measured".to_string(),
            Some(0) => format!("none seen ({most})"),
            Some(l) => format!("{} ({most})", ms(Some(l))),
        }
    };
    let each = nodes
        .iter()
        .map(|n| {
            format!(
                "{}: {}",
                n.node.as_deref().unwrap_or("client node not recorded"),
                bounds(n)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    // The ingress went on longer only when its lower bound passes every node's upper bound.
    let slowest = nodes
        .iter()
        .map(|n| n.lag_at_most_ms)
        .collect::<Option<Vec<i64>>>()
        .and_then(|m| m.into_iter().max());
    let compared = match slowest {
        Some(m) if ingress > m => format!(
            "the ingress went on at least {} longer than the slowest node",
            ms(Some(ingress - m))
        ),
        Some(_) => "within these bounds the ingress did not go on longer than kube-proxy".into(),
        None => "a node's lag is not bounded, so the two are not compared".into(),
    };
    let sent = if ingress > 0 {
        ms(Some(ingress))
    } else {
        "none seen".to_string()
    };
    Some(format!(
        "after a terminated pod's endpoint turned not ready, kube-proxy (the Service dialled directly from each client node) still sent it new connections for {each}, the ingress requests for {sent}: {compared}"
    ))
}

/// The text table's `ingress` row: what was logged, each upstream pod's outcomes, and the
/// last request to a terminating pod.
pub fn line(i: &IngressReport) -> String {
    let mut parts = vec![format!(
        "{} of {} requests and dials in its access log ({} not logged: not measured)",
        i.logged,
        i.logged + i.not_logged,
        i.not_logged
    )];
    for u in &i.upstreams {
        parts.push(format!(
            "{}: {}",
            u.pod.as_deref().unwrap_or("no known pod"),
            u.outcomes_phrase()
        ));
    }
    parts.push(routing_words(i.routing.as_ref()));
    if let Some(v) = &i.view {
        parts.push(view_words(v));
    }
    if let Some(h) = &i.hidden_retries {
        parts.push(retries_words(h));
    }
    parts.join("; ")
}

/// When each replica's own endpoint view (its API) let go of each terminated pod, in words.
pub fn view_words(replicas: &[ReplicaView]) -> String {
    let each: Vec<String> = replicas
        .iter()
        .flat_map(|r| {
            let replica = r.replica.as_deref().unwrap_or("a replica not recorded");
            r.pods
                .iter()
                .map(move |p| match (&p.left_as, p.lag_at_most_ms) {
                    (Some(how), Some(most)) => format!(
                        "{replica} {how} {} {} after its endpoint turned not ready",
                        p.pod,
                        p.lag_at_least_ms.map_or_else(
                            || format!("at most {}", ms(Some(most))),
                            |least| format!("between {} and {}", ms(Some(least)), ms(Some(most)))
                        )
                    ),
                    (Some(how), None) => {
                        format!("{replica} {how} {} (its not-ready edge not seen)", p.pod)
                    }
                    (None, _) if p.listed => {
                        format!("{replica} never let go of {} while it was polled", p.pod)
                    }
                    (None, _) => format!("{replica} never listed {}", p.pod),
                })
        })
        .collect();
    if each.is_empty() {
        return "its API view holds no terminated pod".into();
    }
    format!("its API view: {}", each.join(", "))
}

/// The retries the ingress hid (from its counters or its log's attempt counts), in words.
pub fn retries_words(h: &HiddenRetries) -> String {
    let said = match h.hidden {
        Some(0) => "no failed attempt retried unseen".into(),
        Some(n) => format!("{n} failed attempt(s) retried unseen by the clients"),
        None => "the retries it hid are not measured (neither its counters before and after nor its attempt counts were read, or they count other requests)".into(),
    };
    match h.upstreams.as_deref() {
        Some(u) if !u.is_empty() => format!("{said}, {}", retried_where(u)),
        _ => said,
    }
}

/// Where the retried attempts went, from the log's attempt lines: "retried from web-1 (7),
/// 10.0.0.9:8080 (no pod, 1)".
pub fn retried_where(upstreams: &[RetriedUpstream]) -> String {
    let each: Vec<String> = upstreams
        .iter()
        .map(|u| match &u.pod {
            Some(pod) => format!("{pod} ({})", u.retried),
            None => format!("{} (no pod, {})", u.upstream, u.retried),
        })
        .collect();
    format!("retried from {}", each.join(", "))
}

/// The last request a terminating pod got through the ingress, in words.
fn routing_words(r: Option<&IngressRouting>) -> String {
    let Some(r) = r else {
        return "its routing was not seen (no logged request was answered by a known pod)".into();
    };
    let Some(lag) = r.last_request_lag_ms else {
        return "no terminated pod's endpoint was seen turning not ready".into();
    };
    let exact = match r.not_logged_after_not_ready {
        Some(0) => "every request after the edge logged".to_string(),
        Some(n) => format!("a lower bound: {n} request(s) after the edge not logged"),
        None => "not measured".to_string(),
    };
    let most = r
        .replicas
        .iter()
        .map(|rep| rep.lag_at_most_ms)
        .collect::<Option<Vec<i64>>>()
        .and_then(|m| m.into_iter().max());
    let mut words = format!(
        "{} ({exact}); the ingress stopped choosing it at most {} after",
        last_request_words(lag),
        ms(most)
    );
    if let Some(each) = sent_after_edge(r) {
        words.push_str(&format!("; sent after its not-ready edge: {each}"));
    }
    words
}

/// How many logged requests the replicas sent each terminated pod at or after its endpoint
/// turned not ready, and the last one's lag: "web-a 40 (the last 1933 ms after), web-b 0";
/// `None` when no pod's edge was seen.
fn sent_after_edge(r: &IngressRouting) -> Option<String> {
    let mut pods: Vec<(&str, u64, Option<i64>)> = Vec::new();
    for p in r.replicas.iter().flat_map(|rep| &rep.pods) {
        let Some(n) = p.routed_after_not_ready else {
            continue;
        };
        let lag = p.lag_at_least_ms.filter(|_| n > 0);
        match pods.iter_mut().find(|(pod, _, _)| *pod == p.pod) {
            Some(e) => {
                e.1 += u64::from(n);
                e.2 = e.2.max(lag);
            }
            None => pods.push((&p.pod, u64::from(n), lag)),
        }
    }
    if pods.is_empty() {
        return None;
    }
    let each: Vec<String> = pods
        .iter()
        .map(|(pod, n, lag)| match lag {
            Some(l) if *n > 0 => format!("{pod} {n} (the last {} after)", ms(Some(*l))),
            _ => format!("{pod} {n}"),
        })
        .collect();
    Some(each.join(", "))
}

/// The last request the ingress sent a terminating pod, `lag` ms after its endpoint turned not
/// ready, in words; 0 is a lag no request showed, so it says none came.
pub fn last_request_words(lag: i64) -> String {
    if lag > 0 {
        format!(
            "last request to a terminating pod {} after its endpoint turned not ready",
            ms(Some(lag))
        )
    } else {
        "no request to a terminating pod after its endpoint turned not ready".into()
    }
}

/// The summary's sentence for one arm's trials through an ingress: the worst last request to
/// a terminating pod; None when no trial measured one.
pub fn summary(arm: &str, trials: &[&IngressReport]) -> Option<String> {
    let routed: Vec<&IngressRouting> = trials.iter().filter_map(|t| t.routing.as_ref()).collect();
    let worst = routed.iter().filter_map(|r| r.last_request_lag_ms).max()?;
    let unlogged: u64 = routed
        .iter()
        .filter_map(|r| r.not_logged_after_not_ready)
        .sum();
    let sent = if worst > 0 {
        format!("sent a terminating pod requests up to {}", ms(Some(worst)))
    } else {
        "sent no terminating pod a request".to_string()
    };
    Some(format!(
        "Ingress lag, `{arm}`: the ingress {sent} after its endpoint turned not ready ({}).",
        if unlogged == 0 {
            "every request after that edge was in its access log".to_string()
        } else {
            format!(
                "a lower bound: {unlogged} request(s) after that edge were not in its access log"
            )
        }
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{beside_kube_proxy, line, summary};
    use crate::data_plane::PodRouting;
    use crate::ingress::IngressOutcome;
    use crate::ingress::routing::{IngressRouting, ReplicaRouting};
    use crate::ingress::summary::{IngressReport, UpstreamCounts};

    fn report(not_logged_after: u64) -> IngressReport {
        IngressReport {
            view: None,
            logged: 98,
            not_logged: 2,
            unclaimed: 0,
            abandoned: 0,
            hidden_retries: None,
            duplicates: 0,
            upstreams: vec![UpstreamCounts {
                pod: Some("web-a".into()),
                outcomes: BTreeMap::from([
                    (IngressOutcome::UpstreamStatus, 90),
                    (IngressOutcome::UpstreamError, 8),
                ]),
            }],
            routing: Some(IngressRouting {
                replicas: vec![ReplicaRouting {
                    replica: Some("traefik-0".into()),
                    requests_answered: 90,
                    pods: vec![PodRouting {
                        pod: "web-a".into(),
                        last_served_t_ms: Some(900),
                        lag_after_not_ready_ms: Some(700),
                        lag_after_removed_ms: None,
                        last_routed_t_ms: Some(2_200),
                        lag_at_least_ms: Some(2_000),
                        lag_at_most_ms: Some(2_100),
                        routed_after_not_ready: Some(8),
                    }],
                    lag_at_least_ms: Some(2_000),
                    lag_at_most_ms: Some(2_100),
                }],
                logged_after_not_ready: Some(40),
                not_logged_after_not_ready: Some(not_logged_after),
                last_request_lag_ms: Some(2_000),
            }),
        }
    }

    #[test]
    fn the_row_names_each_pods_outcomes_and_the_last_request() {
        let l = line(&report(0));
        assert!(l.starts_with("98 of 100 requests and dials"), "{l}");
        assert!(
            l.contains("web-a: 90 upstream-status, 8 upstream-error"),
            "{l}"
        );
        assert!(
            l.contains(
                "2000 ms after its endpoint turned not ready (every request after the edge logged)"
            ),
            "{l}"
        );
        assert!(l.contains("at most 2100 ms after"), "{l}");
        assert!(
            l.contains("sent after its not-ready edge: web-a 8 (the last 2000 ms after)"),
            "{l}"
        );
        let l = line(&report(3));
        assert!(l.contains("a lower bound: 3 request(s)"), "{l}");
    }

    #[test]
    fn kube_proxys_lag_is_set_beside_the_ingresss_only_from_direct_dials() {
        use crate::data_plane::NodeView;
        let node = |name: &str, lag: Option<i64>| NodeView {
            node: Some(name.into()),
            dials_served: 50,
            max_lag_after_not_ready_ms: lag,
            max_lag_after_removed_ms: None,
            lag_at_least_ms: lag,
            lag_at_most_ms: lag.map(|l| l + 50),
            pods: vec![],
        };
        let r = report(0);
        let views = [node("node1", Some(120)), node("node2", Some(300))];
        let s = beside_kube_proxy(&r, Some(&views)).unwrap();
        assert!(
            s.contains(
                "new connections for node1: 120 ms (at most 170 ms), node2: 300 ms (at most 350 ms)"
            ),
            "{s}"
        );
        // The ingress's 2000 ms at least against node2's 350 ms at most.
        assert!(
            s.ends_with(
                "the ingress requests for 2000 ms: the ingress went on at least 1650 ms longer than the slowest node"
            ),
            "{s}"
        );
        let none = [node("node1", Some(0))];
        let s = beside_kube_proxy(&r, Some(&none)).unwrap();
        assert!(
            s.contains("for node1: none seen (at most 50 ms), the ingress requests for 2000 ms"),
            "{s}"
        );
        // A node whose lag no run bounds: not compared, and not left out.
        let mut open = node("node2", Some(100));
        open.lag_at_most_ms = None;
        let s = beside_kube_proxy(&r, Some(&[node("node1", Some(0)), open])).unwrap();
        assert!(s.contains("node2: 100 ms (not bounded)"), "{s}");
        assert!(s.ends_with("so the two are not compared"), "{s}");
        // No direct dials: nothing to set beside it; a node not measured is said so.
        assert!(beside_kube_proxy(&r, None).is_none());
        assert!(beside_kube_proxy(&r, Some(&[])).is_none());
        let s = beside_kube_proxy(&r, Some(&[node("node1", None)])).unwrap();
        assert!(s.contains("node1: not measured"), "{s}");
        let late = [node("node1", Some(2_500))];
        let s = beside_kube_proxy(&r, Some(&late)).unwrap();
        assert!(
            s.ends_with("within these bounds the ingress did not go on longer than kube-proxy"),
            "{s}"
        );
    }

    #[test]
    fn the_view_says_how_and_when_each_replica_let_go_and_a_pod_it_kept() {
        use crate::ingress::view::{PodView, ReplicaView};
        let pod = |name: &str, how: Option<&str>, least, most| PodView {
            pod: name.into(),
            listed: name != "web-d",
            left_as: how.map(str::to_string),
            left_t_ms: most,
            lag_at_least_ms: least,
            lag_at_most_ms: most,
        };
        let mut r = report(0);
        r.view = Some(vec![ReplicaView {
            replica: Some("traefik-0".into()),
            polls: 90,
            largest_gap_ms: Some(120),
            pods: vec![
                pod("web-a", Some("fenced"), Some(1_900), Some(2_000)),
                pod("web-b", Some("removed"), None, Some(300)),
                pod("web-c", None, None, None),
                pod("web-d", None, None, None),
            ],
        }]);
        let l = line(&r);
        assert!(
            l.contains("its API view: traefik-0 fenced web-a between 1900 ms and 2000 ms after its endpoint turned not ready, traefik-0 removed web-b at most 300 ms after its endpoint turned not ready, traefik-0 never let go of web-c while it was polled, traefik-0 never listed web-d"),
            "{l}"
        );
    }

    #[test]
    fn the_row_says_what_the_counters_show_only_when_they_were_scraped() {
        use crate::ingress::retries::HiddenRetries;
        let mut r = report(0);
        assert!(!line(&r).contains("counters"), "{}", line(&r));
        let said = |hidden| HiddenRetries {
            counted_from: None,
            replicas: vec![],
            hidden,
            upstreams: None,
        };
        let cases = [
            (Some(9), "9 failed attempt(s) retried unseen by the clients"),
            (Some(0), "no failed attempt retried unseen"),
            (None, "the retries it hid are not measured"),
        ];
        assert_eq!(cases.len(), 3);
        for (hidden, want) in cases {
            r.hidden_retries = Some(said(hidden));
            let l = line(&r);
            assert!(l.contains(want), "{l}");
        }
        // Where the log's attempt lines say where they went, the row names the pods.
        r.hidden_retries = Some(HiddenRetries {
            counted_from: None,
            upstreams: Some(vec![crate::ingress::retries::RetriedUpstream {
                pod: Some("web-old".into()),
                upstream: "10.1.0.7:8080".into(),
                retried: 9,
            }]),
            ..said(Some(9))
        });
        let l = line(&r);
        assert!(
            l.contains(
                "9 failed attempt(s) retried unseen by the clients, retried from web-old (9)"
            ),
            "{l}"
        );
    }

    #[test]
    fn no_request_after_the_edge_is_said_so_not_as_a_lag_of_0() {
        let mut r = report(0);
        let routing = r.routing.as_mut().unwrap();
        routing.last_request_lag_ms = Some(0);
        let l = line(&r);
        assert!(
            l.contains("no request to a terminating pod after its endpoint turned not ready"),
            "{l}"
        );
        assert!(!l.contains(" 0 ms after"), "{l}");
        let s = summary("through", &[&r]).unwrap();
        assert!(
            s.contains("the ingress sent no terminating pod a request after its endpoint"),
            "{s}"
        );
    }

    #[test]
    fn the_sentence_is_the_worst_trial_and_says_when_it_is_a_bound() {
        let (a, b) = (report(0), report(2));
        let s = summary("through", &[&a]).unwrap();
        assert!(
            s.contains("up to 2000 ms") && s.contains("every request"),
            "{s}"
        );
        let s = summary("through", &[&a, &b]).unwrap();
        assert!(s.contains("a lower bound: 2 request(s)"), "{s}");
        let mut none = report(0);
        none.routing = None;
        assert!(summary("through", &[&none]).is_none());
    }
}
