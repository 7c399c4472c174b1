//! Watches on an attached workload, never polling: every pod its selector selects, and every
//! endpoint of its Service's EndpointSlices. Each pod is its own lane: its events carry the
//! pod's name in `instance`, so the pure core can attribute a failed request or dial to the pod
//! and the phase of its termination (deletion requested, endpoint not ready, removed, exited).
//!
//! SIGTERM itself is not observable on an unmodified workload (no probe log): it is never
//! guessed from these events, and the report leaves it not-measured.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::translate::{
    Change, PodFacts, Role, SliceFacts, pod_changes, pod_deleted, slice_changes, slice_deleted,
    slice_facts,
};
use super::watch::{Relist, follow};
use crate::recorder::Recorder;

/// The target's pods as last seen.
#[derive(Debug, Clone, Default)]
pub struct TargetPods {
    /// Pods by name.
    pub pods: BTreeMap<String, PodFacts>,
    /// Pods that have left the API during the trial, as (name, uid): a StatefulSet's
    /// replacement comes back under the same name, so only the uid says which one left.
    pub gone: BTreeSet<(String, Option<String>)>,
    /// The first list has completed.
    pub synced: bool,
}

impl TargetPods {
    /// Ready pods not being deleted, by name.
    pub fn ready(&self) -> impl Iterator<Item = &PodFacts> {
        self.pods
            .values()
            .filter(|p| p.deletion.is_none() && p.is_ready())
    }

    /// Whether some incarnation of pod `name` has left the API during the trial.
    pub fn gone_by_name(&self, name: &str) -> bool {
        self.gone.iter().any(|(n, _)| n == name)
    }
}

/// The Service's EndpointSlices as last seen.
#[derive(Debug, Clone, Default)]
pub struct TargetSlices {
    /// Endpoints per slice.
    pub slices: BTreeMap<String, SliceFacts>,
    /// The first list has completed.
    pub synced: bool,
}

impl TargetSlices {
    /// Whether some slice lists `pod` as ready.
    pub fn ready(&self, pod: &str) -> bool {
        let key = super::translate::pod_key(pod);
        self.slices
            .values()
            .any(|s| s.get(&key).is_some_and(|e| e.ready))
    }

    /// Whether some slice lists pod `name` with `uid` (an endpoint whose uid is unknown is
    /// taken to be that pod: it cannot be told from it).
    pub fn listed(&self, name: &str, uid: Option<&str>) -> bool {
        let key = super::translate::pod_key(name);
        self.slices.values().any(|s| {
            s.get(&key).is_some_and(|e| match (e.uid.as_deref(), uid) {
                (Some(e), Some(u)) => e == u,
                _ => true,
            })
        })
    }
}

fn send(rec: &Recorder, changes: Vec<Change>, at: i64) {
    for c in changes {
        let pod = c.pod.clone();
        let mut l = c.into_line(at);
        l.instance = pod;
        rec.send(l);
    }
}

/// Watches the pods `selector` selects in `api`'s namespace until `cancel`.
pub fn spawn_pods(
    api: Api<Pod>,
    selector: String,
    rec: Recorder,
    view: watch::Sender<TargetPods>,
    cancel: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut relist = Relist::default();
        follow(api, &selector, "target pod", &rec, &cancel, |ev, at| {
            let remove = |name: &str, v: &mut TargetPods| {
                if let Some(f) = v.pods.remove(name) {
                    send(&rec, pod_deleted(&f, Role::Candidate), at);
                    v.gone.insert((name.to_string(), f.uid));
                }
            };
            // Every pod of the target is followed in full: each may be the one terminated.
            let apply = |p: &Pod, v: &mut TargetPods| {
                let facts = PodFacts::of_first(p);
                let replaced = v
                    .pods
                    .get(&facts.name)
                    .is_some_and(|prev| prev.uid.is_some() && prev.uid != facts.uid);
                if replaced {
                    // The predecessor's deletion was missed (a watch gap): it left all the same.
                    remove(&facts.name, v);
                }
                send(
                    &rec,
                    pod_changes(v.pods.get(&facts.name), &facts, Role::Candidate),
                    at,
                );
                v.pods.insert(facts.name.clone(), facts);
            };
            view.send_modify(|v| {
                let known = |v: &TargetPods| v.pods.keys().cloned().collect();
                v.synced |= relist.dispatch(ev, v, known, apply, remove);
            });
        })
        .await;
    })
}

/// Watches the EndpointSlices of Service `service` until `cancel`; every endpoint is followed.
pub fn spawn_slices(
    api: Api<EndpointSlice>,
    service: &str,
    rec: Recorder,
    view: watch::Sender<TargetSlices>,
    cancel: CancellationToken,
) -> JoinHandle<()> {
    let selector = format!("kubernetes.io/service-name={service}");
    tokio::spawn(async move {
        let mut relist = Relist::default();
        follow(
            api,
            &selector,
            "target EndpointSlice",
            &rec,
            &cancel,
            |ev, at| {
                let apply = |s: &EndpointSlice, v: &mut TargetSlices| {
                    let name = s.metadata.name.clone().unwrap_or_default();
                    let facts = slice_facts(s);
                    send(
                        &rec,
                        slice_changes(&name, v.slices.get(&name), &facts, None),
                        at,
                    );
                    v.slices.insert(name, facts);
                };
                let remove = |name: &str, v: &mut TargetSlices| {
                    if let Some(prev) = v.slices.remove(name) {
                        send(&rec, slice_deleted(name, &prev, None), at);
                    }
                };
                view.send_modify(|v| {
                    let known = |v: &TargetSlices| v.slices.keys().cloned().collect();
                    v.synced |= relist.dispatch(ev, v, known, apply, remove);
                });
            },
        )
        .await;
    })
}
