//! The join: each client request (`attach_request`, `attach_dial`) with the `ingress_access`
//! line the ingress's log gave for it, by the `X-Drainwatch-Request` id both carry (the flow
//! and request number), and the upstream's address mapped to its pod. Clocks play no part: the
//! id is exact. A request the ingress did not log stays unjoined and is counted as not
//! measured; a logged id no client request has is counted too, since it means the log and the
//! client disagree, except the request a flow had in flight when the client's window closed:
//! the client abandons it unrecorded (it neither failed nor succeeded within the window) while
//! the ingress still logs it, usually as `client-closed`.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};

use super::IngressOutcome;
use crate::event::{EventLine, EventName};
use crate::request_id::RequestId;

/// What the ingress logged of one client request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    /// What the ingress made of it.
    pub outcome: IngressOutcome,
    /// The upstream `IP:PORT` it chose, if any.
    pub upstream: Option<String>,
    /// The pod at that address; `None` when no endpoint had the address.
    pub pod: Option<String>,
    /// The status the ingress sent.
    pub status: Option<u16>,
    /// The controller replica whose log had it; `None` when not recorded.
    pub replica: Option<String>,
}

/// One client request and, when the ingress logged it, what the ingress made of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributed {
    /// The request's id.
    pub id: RequestId,
    /// The client's result (`ok`, `served`, or a failure mechanism).
    pub result: String,
    /// The status the client read, if one arrived.
    pub status: Option<u16>,
    /// When the client sent it (the time it recorded the request, less the request's
    /// latency), ns on the orchestrator's timebase; `None` when the client recorded no time.
    pub sent_ns: Option<i64>,
    /// The ingress's record; `None`: not logged, so not measured.
    pub ingress: Option<Logged>,
}

/// Every client request of a run beside the ingress's record of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Joined {
    /// The client's requests and dials, in the client's order.
    pub requests: Vec<Attributed>,
    /// Client requests the ingress did not log (not measured).
    pub not_logged: u64,
    /// Logged ids no client request has (other than [`Self::abandoned`]).
    pub unclaimed: u64,
    /// Logged ids of the request a flow had in flight when the window closed: one past the
    /// flow's last recorded request, on a flow the client recorded.
    pub abandoned: u64,
    /// Logged ids seen more than once (the first line is the one joined).
    pub duplicates: u64,
}

/// Joins the client's request lines of `lines` with its `ingress_access` lines; `pods` maps an
/// endpoint's IP to its pod ([`endpoint_pods`]).
pub fn join(lines: &[EventLine], pods: &BTreeMap<String, String>) -> Joined {
    let mut out = Joined::default();
    let mut by_id: HashMap<RequestId, &EventLine> = HashMap::new();
    for l in lines.iter().filter(|l| l.event == EventName::IngressAccess) {
        let Some(id) = request_id(l) else { continue };
        match by_id.entry(id) {
            Entry::Occupied(_) => out.duplicates += 1,
            Entry::Vacant(v) => {
                v.insert(l);
            }
        }
    }
    for l in lines {
        if !matches!(l.event, EventName::AttachRequest | EventName::AttachDial) {
            continue;
        }
        let Some(id) = request_id(l) else { continue };
        let ingress = by_id.get(&id).and_then(|a| logged(a, pods));
        if ingress.is_none() {
            out.not_logged += 1;
        }
        out.requests.push(Attributed {
            id,
            result: l.result.clone().unwrap_or_default(),
            status: l.status,
            sent_ns: l.at_ns.zip(l.latency_ns).map(|(at, took)| at - took),
            ingress,
        });
    }
    let claimed: HashSet<&RequestId> = out.requests.iter().map(|r| &r.id).collect();
    let in_flight = in_flight_at_close(lines);
    for id in by_id.keys().filter(|id| !claimed.contains(id)) {
        if in_flight.contains(id) {
            out.abandoned += 1;
        } else {
            out.unclaimed += 1;
        }
    }
    out
}

/// The id each recorded flow's next request would have: the one it had in flight when the
/// window closed, if any. A held connection sends one request at a time, numbered from 1, so
/// that is one past the last it recorded (1 when it recorded none, though it recorded its
/// connection). Dials in flight finish and are recorded, so none is abandoned.
fn in_flight_at_close(lines: &[EventLine]) -> HashSet<RequestId> {
    use EventName::*;
    let mut last: HashMap<&str, u64> = HashMap::new();
    for l in lines {
        let Some(flow) = l.flow_id.as_deref() else {
            continue;
        };
        match l.event {
            AttachRequest => {
                let seen = last.entry(flow).or_default();
                *seen = (*seen).max(l.seq.unwrap_or(0));
            }
            AttachConnOpened
            | AttachConnReopened
            | AttachConnClosedGraceful
            | AttachConnSevered
            | AttachConnObservationEnd => {
                last.entry(flow).or_default();
            }
            _ => {}
        }
    }
    last.into_iter()
        .map(|(flow, seq)| RequestId::request(flow, seq + 1))
        .collect()
}

/// The request id a client request line or an `ingress_access` line is about: its flow and
/// request number, or a dial's flow alone.
pub fn request_id(l: &EventLine) -> Option<RequestId> {
    let flow = l.flow_id.as_deref()?;
    match (l.event.clone(), l.seq) {
        (EventName::AttachDial, _) | (EventName::IngressAccess, None) => {
            Some(RequestId::dial(flow))
        }
        (EventName::AttachRequest | EventName::IngressAccess, Some(seq)) => {
            Some(RequestId::request(flow, seq))
        }
        _ => None,
    }
}

/// The record of an `ingress_access` line; `None` when its outcome is not one this build
/// knows (a newer recording), which leaves the request not measured rather than guessed.
fn logged(a: &EventLine, pods: &BTreeMap<String, String>) -> Option<Logged> {
    Some(Logged {
        outcome: IngressOutcome::parse(a.result.as_deref()?)?,
        upstream: a.upstream.clone(),
        pod: a
            .upstream
            .as_deref()
            .and_then(|u| pods.get(upstream_ip(u)).cloned()),
        status: a.status,
        replica: a.replica.clone(),
    })
}

/// The IP of an upstream `IP:PORT` (`[IPv6]:PORT` too); the whole text when it has no port.
pub fn upstream_ip(upstream: &str) -> &str {
    if let Some(rest) = upstream.strip_prefix('[') {
        return rest.split_once(']').map_or(rest, |(ip, _)| ip);
    }
    match upstream.rsplit_once(':') {
        Some((ip, port)) if !ip.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => ip,
        _ => upstream,
    }
}

/// Each endpoint IP of the recording's `endpointslice_endpoint_added` lines with the pod it
/// belonged to. An IP a later pod took over maps to the later pod: an ingress sends to an
/// address, and the newest endpoint at that address is the one it can have chosen since.
pub fn endpoint_pods(lines: &[EventLine]) -> BTreeMap<String, String> {
    lines
        .iter()
        .filter(|l| l.event == EventName::EndpointsliceEndpointAdded)
        .filter_map(|l| Some((l.address.clone()?, l.instance.clone()?)))
        .collect()
}

impl Joined {
    /// For each pod (`None`: no pod had the upstream's address, or none was chosen), how many
    /// logged requests had each outcome.
    pub fn outcomes_by_pod(&self) -> BTreeMap<Option<String>, BTreeMap<IngressOutcome, u64>> {
        let mut m: BTreeMap<Option<String>, BTreeMap<IngressOutcome, u64>> = BTreeMap::new();
        for g in self.requests.iter().filter_map(|r| r.ingress.as_ref()) {
            *m.entry(g.pod.clone())
                .or_default()
                .entry(g.outcome)
                .or_default() += 1;
        }
        m
    }

    /// The ingress's record of each logged request, by id.
    pub fn by_id(&self) -> BTreeMap<&RequestId, &Logged> {
        self.requests
            .iter()
            .filter_map(|r| Some((&r.id, r.ingress.as_ref()?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{endpoint_pods, join, upstream_ip};
    use crate::event::{EventLine, EventName};
    use crate::ingress::{IngressOutcome, traefik};

    fn client(event: EventName, flow: &str, seq: Option<u64>, result: &str) -> EventLine {
        let mut l = EventLine::named(event).flow(flow);
        l.seq = seq;
        l.result = Some(result.into());
        l
    }

    /// The `ingress_access` line of the request Traefik logged with `id`, sent to `upstream`
    /// and answered `status`: read by Traefik's adapter, as the orchestrator reads it.
    fn access(id: Option<&str>, upstream: Option<&str>, status: u16) -> Option<EventLine> {
        let logged = serde_json::json!({
            "DownstreamStatus": status,
            "OriginStatus": if status == 200 { 200 } else { 0 },
            "ServiceAddr": upstream,
            "RouterName": "web@file",
            "request_X-Drainwatch-Request": id,
        });
        traefik::parse(&logged.to_string())?.line(0, &crate::request_id::Spelling::default())
    }

    #[test]
    fn each_request_is_joined_by_its_id_and_its_upstream_named_as_a_pod() {
        let mut lines = vec![
            client(EventName::AttachRequest, "http-0001", Some(1), "ok"),
            client(EventName::AttachRequest, "http-0001", Some(2), "status-5xx"),
            client(EventName::AttachDial, "dial-000001", None, "served"),
            client(EventName::AttachRequest, "http-0002", Some(1), "timeout"),
            client(EventName::AttachWindowStarted, "http-0009", Some(1), "ok"),
        ];
        let accesses = [
            access(Some("dial-000001"), Some("10.0.0.1:80"), 200),
            access(Some("http-0001/2"), Some("10.0.0.2:80"), 502),
            access(Some("http-0001/1"), Some("10.0.0.1:80"), 200),
            access(Some("http-0001/1"), Some("10.0.0.1:80"), 200),
            access(Some("http-0007/1"), Some("10.0.0.1:80"), 200),
        ];
        assert!(access(None, Some("10.0.0.1:80"), 200).is_none());
        lines.extend(accesses.into_iter().map(Option::unwrap));
        let pods = BTreeMap::from([("10.0.0.1".to_string(), "web-a".to_string())]);
        let j = join(&lines, &pods);
        assert_eq!(j.requests.len(), 4);
        assert_eq!((j.not_logged, j.unclaimed, j.duplicates), (1, 1, 1));
        let ids: Vec<String> = j.requests.iter().map(|r| r.id.to_string()).collect();
        assert_eq!(
            ids,
            ["http-0001/1", "http-0001/2", "dial-000001", "http-0002/1"]
        );
        let failed = j.requests[1].ingress.as_ref().expect("logged");
        assert_eq!(failed.outcome, IngressOutcome::UpstreamError);
        assert_eq!(
            (failed.upstream.as_deref(), failed.pod.as_deref()),
            (Some("10.0.0.2:80"), None)
        );
        assert_eq!(
            j.requests[2]
                .ingress
                .as_ref()
                .and_then(|g| g.pod.as_deref()),
            Some("web-a")
        );
        assert!(j.requests[3].ingress.is_none(), "not logged: not measured");
        let by_pod = j.outcomes_by_pod();
        assert_eq!(by_pod.len(), 2);
        assert_eq!(
            by_pod[&Some("web-a".into())][&IngressOutcome::UpstreamStatus],
            2
        );
        assert_eq!(by_pod[&None][&IngressOutcome::UpstreamError], 1);
        assert_eq!(j.by_id().len(), 3);
    }

    #[test]
    fn the_request_a_flow_had_in_flight_at_the_close_is_abandoned_not_unclaimed() {
        let opened = |flow: &str| EventLine::named(EventName::AttachConnOpened).flow(flow);
        let lines = vec![
            client(EventName::AttachRequest, "http-0001", Some(1), "ok"),
            client(EventName::AttachRequest, "http-0001", Some(2), "ok"),
            opened("http-0002"),
            client(EventName::AttachDial, "dial-000001", None, "served"),
        ];
        let mut all = lines.clone();
        let logged = [
            "http-0001/1",
            "http-0001/2",
            "dial-000001",
            // In flight at the close: one past each flow's last recorded request.
            "http-0001/3",
            "http-0002/1",
            // Not the next request of a recorded flow, and no flow the client recorded.
            "http-0001/5",
            "http-0003/1",
            "dial-000002",
        ];
        assert_eq!(logged.len(), 8);
        for id in logged {
            all.push(access(Some(id), Some("10.0.0.1:80"), 499).unwrap());
        }
        let j = join(&all, &BTreeMap::new());
        assert_eq!(j.requests.len(), 3);
        assert_eq!(
            (j.not_logged, j.abandoned, j.unclaimed, j.duplicates),
            (0, 2, 3, 0)
        );
    }

    #[test]
    fn an_outcome_this_build_does_not_know_is_not_measured() {
        let mut a = access(Some("http-0001/1"), Some("10.0.0.1:80"), 200).unwrap();
        a.result = Some("upstream-teleported".into());
        let lines = vec![
            client(EventName::AttachRequest, "http-0001", Some(1), "ok"),
            a,
        ];
        let j = join(&lines, &BTreeMap::new());
        assert_eq!((j.requests.len(), j.not_logged), (1, 1));
    }

    #[test]
    fn an_upstream_is_read_as_its_ip() {
        let cases = [
            ("10.0.0.1:8080", "10.0.0.1"),
            ("[fd00::1]:8080", "fd00::1"),
            ("fd00::1", "fd00::1"),
            ("10.0.0.1", "10.0.0.1"),
        ];
        assert_eq!(cases.len(), 4);
        for (upstream, ip) in cases {
            assert_eq!(upstream_ip(upstream), ip, "{upstream}");
        }
    }

    #[test]
    fn endpoint_lines_map_addresses_to_pods_the_newest_winning() {
        let added = |pod: &str, address: Option<&str>| {
            let mut l = EventLine::named(EventName::EndpointsliceEndpointAdded);
            l.instance = Some(pod.into());
            l.address = address.map(str::to_string);
            l
        };
        let lines = [
            added("web-a", Some("10.0.0.1")),
            added("web-b", Some("10.0.0.2")),
            added("web-c", None),
            added("web-d", Some("10.0.0.1")),
        ];
        let pods = endpoint_pods(&lines);
        assert_eq!(pods.len(), 2);
        assert_eq!(pods["10.0.0.1"], "web-d");
        assert_eq!(pods["10.0.0.2"], "web-b");
    }

    #[test]
    fn nothing_logged_joins_nothing_and_says_so() {
        let lines = vec![client(EventName::AttachRequest, "http-0001", Some(1), "ok")];
        let j = join(&lines, &BTreeMap::new());
        assert_eq!((j.requests.len(), j.not_logged), (1, 1));
        assert!(j.outcomes_by_pod().is_empty());
    }
}
