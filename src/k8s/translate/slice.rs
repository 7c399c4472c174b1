//! An EndpointSlice's endpoints and what changed between two observations of it, scoped to
//! the pod under test.

use std::collections::BTreeMap;

use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::Change;
use crate::evidence::event::EventName;

/// One endpoint's conditions, with the API's nil rules applied: ready nil means ready,
/// serving nil means "as ready", terminating nil means false.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointFacts {
    /// Ready for new traffic.
    pub ready: bool,
    /// Ready, ignoring termination.
    pub serving: bool,
    /// The pod is terminating.
    pub terminating: bool,
    /// The targetRef's uid: tells a StatefulSet's replacement pod from its predecessor, which
    /// had the same name and so the same key.
    pub uid: Option<String>,
    /// The endpoint's first address (an ingress names its upstream by it).
    pub address: Option<String>,
}

impl EndpointFacts {
    fn describe(&self) -> String {
        format!(
            "ready={} serving={} terminating={}",
            self.ready, self.serving, self.terminating
        )
    }
}

/// Endpoints of one slice, keyed `Pod/<name>` (from targetRef) or `addr/<first address>`.
pub type SliceFacts = BTreeMap<String, EndpointFacts>;

/// The endpoint key of a pod.
pub fn pod_key(pod: &str) -> String {
    format!("Pod/{pod}")
}

/// Facts of one slice.
pub fn slice_facts(slice: &EndpointSlice) -> SliceFacts {
    let mut out = SliceFacts::new();
    for e in &slice.endpoints {
        let key = match &e.target_ref {
            Some(r) if r.kind.as_deref() == Some("Pod") && r.name.is_some() => {
                pod_key(r.name.as_deref().unwrap_or_default())
            }
            _ => {
                let mut a = e.addresses.clone();
                a.sort();
                format!("addr/{}", a.first().map_or("", String::as_str))
            }
        };
        let c = e.conditions.as_ref();
        let ready = c.and_then(|c| c.ready).unwrap_or(true);
        out.insert(
            key,
            EndpointFacts {
                ready,
                serving: c.and_then(|c| c.serving).unwrap_or(ready),
                terminating: c.and_then(|c| c.terminating).unwrap_or(false),
                uid: e.target_ref.as_ref().and_then(|r| r.uid.clone()),
                address: e.addresses.first().cloned(),
            },
        );
    }
    out
}

/// What changed in slice `name` between two observations (`prev` is `None` on first sight).
pub fn slice_changes(
    name: &str,
    prev: Option<&SliceFacts>,
    cur: &SliceFacts,
    put: Option<&str>,
) -> Vec<Change> {
    let mut out = Vec::new();
    if prev.is_none() {
        out.push(Change::new(
            EventName::EndpointsliceObserved,
            format!("{name} endpoints={}", cur.len()),
        ));
    }
    // Before a pod under test is chosen every endpoint is followed in full.
    let put_key = put.map(pod_key);
    let followed = |key: &str| put_key.as_deref().is_none_or(|k| k == key);
    let empty = SliceFacts::new();
    let before = prev.unwrap_or(&empty);
    for (key, now) in cur {
        let start = out.len();
        let mut was = before.get(key);
        if was.is_some_and(|w| !same_pod(w, now)) && followed(key) {
            // One update removed a pod's endpoint and added its same-named replacement's.
            out.push(Change::new(
                EventName::EndpointsliceEndpointRemoved,
                format!(
                    "{key} (uid {}) removed from {name}, replaced by a pod of the same name (uid {})",
                    was.and_then(|w| w.uid.as_deref()).unwrap_or("unknown"),
                    now.uid.as_deref().unwrap_or("unknown")
                ),
            ));
            was = None;
        }
        slice_endpoint_changes(&mut out, name, key, now, was, followed(key));
        for c in &mut out[start..] {
            c.pod = endpoint_pod(key).map(str::to_string);
        }
    }
    for k in before
        .keys()
        .filter(|k| followed(k) && !cur.contains_key(*k))
    {
        out.push(
            Change::new(
                EventName::EndpointsliceEndpointRemoved,
                format!("{k} removed from {name}"),
            )
            .about(endpoint_pod(k)),
        );
    }
    out
}

/// Whether two observations of one endpoint key are of the same pod: different uids mean a
/// replacement that took the name over; an unknown uid is given the benefit of the doubt.
fn same_pod(a: &EndpointFacts, b: &EndpointFacts) -> bool {
    match (&a.uid, &b.uid) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// The pod an endpoint key names (`Pod/<name>`), if it names one.
pub fn endpoint_pod(key: &str) -> Option<&str> {
    key.strip_prefix("Pod/")
}

/// The changes of one endpoint `key` of slice `name`.
fn slice_endpoint_changes(
    out: &mut Vec<Change>,
    name: &str,
    key: &str,
    now: &EndpointFacts,
    was: Option<&EndpointFacts>,
    followed: bool,
) {
    if !followed {
        if now.ready && !was.is_some_and(|w| w.ready) {
            out.push(Change::new(
                EventName::OtherEndpointReady,
                format!("{key} in {name} (not the pod under test)"),
            ));
        }
        return;
    }
    let Some(was) = was else {
        let mut c = Change::new(
            EventName::EndpointsliceEndpointAdded,
            format!("{key} in {name} {}", now.describe()),
        );
        c.ready = Some(now.ready);
        c.address = now.address.clone();
        out.push(c);
        return;
    };
    let conds = now.describe();
    if was.ready && !now.ready {
        out.push(Change::new(
            EventName::EndpointsliceReadyFalse,
            format!(
                "{key} in {name}{} serving={}",
                if now.terminating {
                    " (terminating=true)"
                } else {
                    ""
                },
                now.serving
            ),
        ));
    }
    if !was.ready && now.ready {
        out.push(Change::new(
            EventName::EndpointsliceReadyTrue,
            format!("{key} in {name} {conds}"),
        ));
    }
    if was.serving != now.serving {
        let event = if now.serving {
            EventName::EndpointsliceServingTrue
        } else {
            EventName::EndpointsliceServingFalse
        };
        out.push(Change::new(event, format!("{key} in {name} {conds}")));
    }
    if !was.terminating && now.terminating {
        out.push(Change::new(
            EventName::EndpointsliceTerminatingTrue,
            format!("{key} in {name} {conds}"),
        ));
    }
}

/// Slice `name` was deleted: the pod under test's endpoint, if it was there, is removed.
pub fn slice_deleted(name: &str, prev: &SliceFacts, put: Option<&str>) -> Vec<Change> {
    let put_key = put.map(pod_key);
    prev.keys()
        .filter(|k| put_key.as_deref().is_none_or(|p| p == k.as_str()))
        .map(|k| {
            Change::new(
                EventName::EndpointsliceEndpointRemoved,
                format!("{k} removed from {name} (slice {name} deleted)"),
            )
            .about(endpoint_pod(k))
        })
        .collect()
}
