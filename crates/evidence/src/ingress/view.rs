//! The ingress's own endpoint view: when each controller replica stopped listing each
//! terminated pod as a server it may choose, read from its API (Traefik's services list,
//! `traefik_api`; Envoy's admin clusters, `envoy_admin`). The orchestrator polls every replica
//! and records each poll (`ingress_view_polled`) and
//! each server that changed since the replica's last poll (`ingress_view`: `added`, `fenced`,
//! `unfenced`, `removed`), on the same clock as the EndpointSlice edges. A pod left a replica's
//! view at the first poll of the last run of polls that listed none of its servers as choosable
//! (a pod choosable again was not gone), after the last poll that listed it choosable was sent:
//! the lag from its not-ready edge is bounded by those two polls. A pod still choosable at the
//! last poll was not seen leaving (null, never a pass).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::data_plane::Signals;
use crate::event::{EventLine, EventName, Source};

/// One server (upstream address) of one service, as a controller's endpoint view listed it:
/// the same for every controller, each adapter reading its own API into these.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Server {
    /// The service, as the controller names it (Traefik: `NS-SVC-PORT@kubernetes`; Envoy
    /// Gateway: its cluster, `httproute/NS/ROUTE/rule/N`).
    pub service: String,
    /// The server's `IP:PORT`.
    pub address: String,
    /// Listed, but chosen for no new request (Traefik: fenced; Envoy: not healthy).
    pub fenced: bool,
}

/// What a poll saw change for one server.
pub mod change {
    /// Listed for the first time, choosable.
    pub const ADDED: &str = "added";
    /// Listed, but chosen for no new request (terminating).
    pub const FENCED: &str = "fenced";
    /// Choosable again.
    pub const UNFENCED: &str = "unfenced";
    /// No longer listed.
    pub const REMOVED: &str = "removed";
}

/// The lines of one poll of `replica`, sent at `sent_ns` and answered at `at_ns`: each server
/// that changed from `before` (the replica's previous poll; empty for its first), then the poll
/// itself.
pub fn poll_lines(
    before: &[Server],
    now: &[Server],
    replica: &str,
    (sent_ns, at_ns): (i64, i64),
) -> Vec<EventLine> {
    let key = |s: &Server| (s.service.clone(), s.address.clone());
    let was: BTreeMap<_, bool> = before.iter().map(|s| (key(s), s.fenced)).collect();
    let is: BTreeMap<_, bool> = now.iter().map(|s| (key(s), s.fenced)).collect();
    let line = |(service, address): &(String, String), what: &str| {
        let mut l = EventLine::new(Source::Ingress, EventName::IngressView, at_ns);
        l.replica = Some(replica.to_string());
        l.service = Some(service.clone());
        l.upstream = Some(address.clone());
        l.result = Some(what.to_string());
        l
    };
    let mut out = Vec::new();
    for (k, &fenced) in &is {
        let what = match (was.get(k), fenced) {
            (None, false) => change::ADDED,
            (None, true) | (Some(false), true) => change::FENCED,
            (Some(true), false) => change::UNFENCED,
            (Some(_), _) => continue,
        };
        out.push(line(k, what));
    }
    for k in was.keys().filter(|k| !is.contains_key(*k)) {
        out.push(line(k, change::REMOVED));
    }
    let mut polled = EventLine::new(Source::Ingress, EventName::IngressViewPolled, at_ns);
    polled.replica = Some(replica.to_string());
    polled.sent_ns = Some(sent_ns);
    out.push(polled);
    out
}

/// How one replica's view let go of the terminated pods.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaView {
    /// The controller pod.
    pub replica: Option<String>,
    /// Its polls that were read.
    pub polls: u64,
    /// The longest time between two of its polls, ms: the widest a bound below can be.
    pub largest_gap_ms: Option<i64>,
    /// One entry per pod the trial terminated, in the order of the report's `pods`.
    pub pods: Vec<PodView>,
}

/// When one replica stopped listing one terminated pod as choosable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PodView {
    /// The pod.
    pub pod: String,
    /// Whether any poll listed a server of it (fenced or not): a pod never listed was not seen
    /// by this replica at all, which is not the same as kept.
    pub listed: bool,
    /// How it left: `fenced` (still listed, chosen for no new request) or `removed`; null when
    /// it was not seen leaving.
    pub left_as: Option<String>,
    /// The answer of the first poll of the last run that listed none of its servers as
    /// choosable; null: still choosable at the last poll, or never listed.
    pub left_t_ms: Option<i64>,
    /// The lag after its endpoint turned not ready is at least this: the sending of the last
    /// poll that listed it choosable less the not-ready time (negative when the view let go
    /// first); null when no poll listed it choosable, or the edge was not seen.
    pub lag_at_least_ms: Option<i64>,
    /// ... and at most this: `left_t_ms` less the not-ready time; null as above.
    pub lag_at_most_ms: Option<i64>,
}

/// The view of every replica that was polled, for the terminated `pods` (their addresses from
/// the EndpointSlice lines); `None` when no poll was read.
pub fn view(
    lines: &[EventLine],
    pods: &[Signals<'_>],
    addresses: &BTreeMap<String, String>,
    rel: impl Fn(i64) -> i64,
) -> Option<Vec<ReplicaView>> {
    let mut replicas: Vec<Option<&str>> = lines
        .iter()
        .filter(|l| l.event == EventName::IngressViewPolled)
        .map(|l| l.replica.as_deref())
        .collect();
    if replicas.is_empty() {
        return None;
    }
    replicas.sort_unstable();
    replicas.dedup();
    Some(
        replicas
            .into_iter()
            .map(|r| replica_view(lines, r, pods, addresses, &rel))
            .collect(),
    )
}

fn replica_view(
    lines: &[EventLine],
    replica: Option<&str>,
    pods: &[Signals<'_>],
    addresses: &BTreeMap<String, String>,
    rel: &impl Fn(i64) -> i64,
) -> ReplicaView {
    let mine: Vec<&EventLine> = lines
        .iter()
        .filter(|l| {
            matches!(
                l.event,
                EventName::IngressView | EventName::IngressViewPolled
            )
        })
        .filter(|l| l.replica.as_deref() == replica)
        .collect();
    let polls: Vec<i64> = mine
        .iter()
        .filter(|l| l.event == EventName::IngressViewPolled)
        .filter_map(|l| l.at_ns)
        .collect();
    let largest_gap_ms = polls.windows(2).map(|w| (w[1] - w[0]) / 1_000_000).max();
    let pods = pods
        .iter()
        .map(|p| pod_view(&mine, p, addresses, rel))
        .collect();
    ReplicaView {
        replica: replica.map(str::to_string),
        polls: polls.len() as u64,
        largest_gap_ms,
        pods,
    }
}

/// Walks one replica's polls in order, keeping each of `p`'s servers' state: the pod left at
/// the first poll of the last run in which none is choosable.
fn pod_view(
    mine: &[&EventLine],
    p: &Signals<'_>,
    addresses: &BTreeMap<String, String>,
    rel: &impl Fn(i64) -> i64,
) -> PodView {
    let ours = |upstream: &str| {
        addresses
            .get(super::join::upstream_ip(upstream))
            .is_some_and(|pod| pod == p.pod)
    };
    // Each of the pod's servers (per service) and whether it is choosable now.
    let mut servers: BTreeMap<(&str, &str), &str> = BTreeMap::new();
    // When the last poll that listed it choosable was sent; the current run's first poll.
    let mut choosable_sent = None::<i64>;
    let mut left: Option<(Option<i64>, i64, &str)> = None;
    for l in mine {
        if l.event == EventName::IngressView {
            if let (Some(s), Some(u), Some(r)) = (&l.service, &l.upstream, &l.result) {
                if ours(u) {
                    servers.insert((s, u), r);
                }
            }
            continue;
        }
        let Some(at) = l.at_ns else { continue };
        let choosable = servers
            .values()
            .any(|r| *r == change::ADDED || *r == change::UNFENCED);
        if choosable {
            // Listed again: an earlier run without it was not its leaving.
            choosable_sent = Some(l.sent_ns.unwrap_or(at));
            left = None;
        } else if !servers.is_empty() && left.is_none() {
            let how = if servers.values().all(|r| *r == change::REMOVED) {
                change::REMOVED
            } else {
                change::FENCED
            };
            left = Some((choosable_sent, at, how));
        }
    }
    let lag = |t: Option<i64>| Some((t? - p.not_ready_ns?) / 1_000_000);
    PodView {
        pod: p.pod.to_string(),
        listed: !servers.is_empty(),
        left_as: left.map(|(_, _, how)| how.to_string()),
        left_t_ms: left.map(|(_, at, _)| rel(at)),
        lag_at_least_ms: left.and_then(|(before, _, _)| lag(before)),
        lag_at_most_ms: left.and_then(|(_, at, _)| lag(Some(at))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    fn server(address: &str, fenced: bool) -> Server {
        Server {
            service: "shop-web-80@kubernetes".into(),
            address: address.into(),
            fenced,
        }
    }

    /// traefik-0's polls every 100 ms from 0 to 900 ms: pod a (10.0.0.1) fenced at 500 ms and
    /// removed at 800 ms, pod b (10.0.0.2) choosable throughout.
    fn polls() -> Vec<EventLine> {
        let mut lines = Vec::new();
        let mut before: Vec<Server> = Vec::new();
        for i in 0..10 {
            let now = match i {
                0..=4 => vec![server("10.0.0.1:80", false), server("10.0.0.2:80", false)],
                5..=7 => vec![server("10.0.0.1:80", true), server("10.0.0.2:80", false)],
                _ => vec![server("10.0.0.2:80", false)],
            };
            lines.extend(poll_lines(
                &before,
                &now,
                "traefik-0",
                (i * 100 * MS - 5 * MS, i * 100 * MS),
            ));
            before = now;
        }
        lines
    }

    fn addresses() -> BTreeMap<String, String> {
        BTreeMap::from([
            ("10.0.0.1".to_string(), "a".to_string()),
            ("10.0.0.2".to_string(), "b".to_string()),
        ])
    }

    #[test]
    fn a_poll_records_only_what_changed() {
        let first = poll_lines(&[], &[server("10.0.0.1:80", false)], "t", (0, 0));
        assert_eq!(first.len(), 2);
        assert_eq!(first[0].result.as_deref(), Some(change::ADDED));
        assert_eq!(first[1].event, EventName::IngressViewPolled);
        let same = poll_lines(
            &[server("10.0.0.1:80", false)],
            &[server("10.0.0.1:80", false)],
            "t",
            (0, 1),
        );
        assert_eq!(same.len(), 1, "only the poll");
        let cases = [
            (false, Some(true), change::FENCED),
            (true, Some(false), change::UNFENCED),
            (false, None, change::REMOVED),
        ];
        assert_eq!(cases.len(), 3);
        for (was, is, want) in cases {
            let now: Vec<Server> = is.map(|f| server("10.0.0.1:80", f)).into_iter().collect();
            let l = poll_lines(&[server("10.0.0.1:80", was)], &now, "t", (1, 2));
            assert_eq!(l.len(), 2);
            assert_eq!(l[0].result.as_deref(), Some(want));
            assert_eq!(l[0].upstream.as_deref(), Some("10.0.0.1:80"));
        }
    }

    #[test]
    fn a_pod_leaves_at_the_first_poll_that_lists_it_choosable_nowhere() {
        let lines = polls();
        let pods = [
            Signals {
                pod: "a",
                not_ready_ns: Some(250 * MS),
                removed_ns: None,
            },
            Signals {
                pod: "b",
                not_ready_ns: None,
                removed_ns: None,
            },
        ];
        let v = view(&lines, &pods, &addresses(), |t| t / MS).unwrap();
        assert_eq!(v.len(), 1);
        let r = &v[0];
        assert_eq!((r.replica.as_deref(), r.polls), (Some("traefik-0"), 10));
        assert_eq!(r.largest_gap_ms, Some(100));
        assert_eq!(r.pods.len(), 2);
        let a = &r.pods[0];
        assert_eq!(a.left_as.as_deref(), Some("fenced"));
        assert_eq!(a.left_t_ms, Some(500));
        // After the poll sent at 395 ms, by the answer at 500 ms; the edge at 250 ms.
        assert_eq!(
            (a.lag_at_least_ms, a.lag_at_most_ms),
            (Some(145), Some(250))
        );
        assert!(a.listed);
        // b never left: not seen leaving, not a lag of 0.
        let b = &r.pods[1];
        assert!(b.listed);
        assert_eq!((b.left_as.as_deref(), b.left_t_ms), (None, None));
        assert_eq!((b.lag_at_least_ms, b.lag_at_most_ms), (None, None));
    }

    #[test]
    fn a_pod_fenced_and_listed_again_left_only_at_its_last_leaving_and_one_never_listed_is_said() {
        // a fenced at 200 ms (a reload), choosable again at 300 ms, fenced for good at 500 ms.
        let mut lines = Vec::new();
        let mut before: Vec<Server> = Vec::new();
        for i in 0..8 {
            let now = vec![server("10.0.0.1:80", matches!(i, 2 | 5..))];
            lines.extend(poll_lines(&before, &now, "t", (i * 100 * MS, i * 100 * MS)));
            before = now;
        }
        let pods = [
            Signals {
                pod: "a",
                not_ready_ns: Some(450 * MS),
                removed_ns: None,
            },
            Signals {
                pod: "b",
                not_ready_ns: Some(450 * MS),
                removed_ns: None,
            },
        ];
        let v = view(&lines, &pods, &addresses(), |t| t / MS).unwrap();
        assert_eq!(v[0].pods.len(), 2);
        let a = &v[0].pods[0];
        assert_eq!(
            (a.left_t_ms, a.lag_at_least_ms, a.lag_at_most_ms),
            (Some(500), Some(-50), Some(50))
        );
        let b = &v[0].pods[1];
        assert!(!b.listed);
        assert_eq!((b.left_as.as_deref(), b.left_t_ms), (None, None));
    }

    #[test]
    fn a_pod_already_gone_at_the_first_poll_has_only_an_upper_bound() {
        let lines: Vec<EventLine> = polls()
            .into_iter()
            .filter(|l| l.at_ns.is_some_and(|t| t >= 500 * MS))
            .collect();
        // The first poll kept is at 500 ms and its lines are changes from 400 ms: rebuild them
        // as a first poll of the fenced state.
        let mut lines: Vec<EventLine> = lines
            .into_iter()
            .filter(|l| l.event == EventName::IngressViewPolled || l.at_ns != Some(500 * MS))
            .collect();
        lines.splice(
            0..0,
            poll_lines(
                &[],
                &[server("10.0.0.1:80", true), server("10.0.0.2:80", false)],
                "traefik-0",
                (495 * MS, 500 * MS),
            )
            .into_iter()
            .filter(|l| l.event == EventName::IngressView),
        );
        let pods = [Signals {
            pod: "a",
            not_ready_ns: Some(250 * MS),
            removed_ns: None,
        }];
        let v = view(&lines, &pods, &addresses(), |t| t / MS).unwrap();
        let a = &v[0].pods[0];
        assert_eq!(a.left_t_ms, Some(500));
        assert_eq!((a.lag_at_least_ms, a.lag_at_most_ms), (None, Some(250)));
        assert!(view(&[], &pods, &addresses(), |t| t).is_none());
    }
}
