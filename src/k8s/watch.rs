//! Watches, never polling: one kube-runtime watcher on the trial's pods and one on the probe
//! Service's EndpointSlices. Each keeps the last facts per object, turns every change into k8s
//! event lines through [`super::translate`], and publishes a view for the preflight waits.
//!
//! A watch that fails is retried with backoff by the watcher; the failure is recorded as
//! `watch_interrupted` and the first event after it as `watch_resumed` with the gap, so a
//! reader knows that changes inside the gap are stamped at their (late) receipt.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event, watcher};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::translate::{
    PodFacts, Role, SliceFacts, pod_changes, pod_deleted, pod_key, slice_changes, slice_deleted,
    slice_facts,
};
use super::{CLIENT_CONTAINER, CLIENT_NAME, PROBE_CONTAINER, labels};
use crate::evidence::event::{EventLine, EventName, Source};
use crate::host;
use crate::recorder::Recorder;

/// The trial's pods as last seen.
#[derive(Debug, Clone, Default)]
pub struct PodsView {
    /// Probe pods by name (facts of the `probe` container).
    pub probes: BTreeMap<String, PodFacts>,
    /// Client pods by name (facts of the `client` container).
    pub clients: BTreeMap<String, PodFacts>,
    /// The first list has completed.
    pub synced: bool,
    /// The pod under test has left the API.
    pub put_deleted: bool,
    /// Client pods that have left the API.
    pub clients_deleted: BTreeSet<String>,
}

/// The probe Service's EndpointSlices as last seen.
#[derive(Debug, Clone, Default)]
pub struct SlicesView {
    /// Endpoints per slice.
    pub slices: BTreeMap<String, SliceFacts>,
    /// The first list has completed.
    pub synced: bool,
    /// Since when (orchestrator monotonic ns) the pod under test's endpoint has been ready
    /// without interruption; `None` when it is not ready.
    pub put_ready_since: Option<i64>,
}

/// Records the gaps of one watch.
pub(crate) struct Gaps {
    which: &'static str,
    since: Option<i64>,
    count: u32,
}

impl Gaps {
    pub(crate) fn new(which: &'static str) -> Self {
        Self {
            which,
            since: None,
            count: 0,
        }
    }

    pub(crate) fn failed(&mut self, rec: &Recorder, e: &watcher::Error) {
        if self.since.is_some() {
            return;
        }
        let at = host::mono_ns();
        self.since = Some(at);
        self.count += 1;
        rec.send(
            EventLine::new(Source::K8s, EventName::WatchInterrupted, at).detail(format!(
                "the {} watch failed ({e}); retrying with backoff",
                self.which
            )),
        );
    }

    pub(crate) fn delivered(&mut self, rec: &Recorder, at: i64) {
        if let Some(since) = self.since.take() {
            rec.send(
                EventLine::new(Source::K8s, EventName::WatchResumed, at).detail(format!(
                    "the {} watch delivers again after a gap of {} ms (interruption {}); changes inside the gap are stamped at this receipt, not when they happened",
                    self.which,
                    (at - since) / 1_000_000,
                    self.count
                )),
            );
        }
    }
}

/// One item of a watcher stream, as the loop reading it needs it.
pub(super) enum Receipt<K> {
    /// The stream ended.
    End,
    /// The watch failed (recorded as a gap); the watcher retries.
    Failed,
    /// A change, stamped at its receipt (orchestrator monotonic ns).
    Delivered(Event<K>, i64),
}

impl Gaps {
    /// Stamps one stream item; a failure opens a gap and the next delivery closes it.
    pub(super) fn receive<K>(
        &mut self,
        rec: &Recorder,
        item: Option<Result<Event<K>, watcher::Error>>,
    ) -> Receipt<K> {
        match item {
            None => Receipt::End,
            Some(Err(e)) => {
                self.failed(rec, &e);
                Receipt::Failed
            }
            Some(Ok(ev)) => {
                let at = host::mono_ns();
                self.delivered(rec, at);
                Receipt::Delivered(ev, at)
            }
        }
    }
}

/// Follows the watcher's (re)lists: an object a relist does not return was deleted while the
/// watch was not looking, and is removed like a deletion.
#[derive(Default)]
pub(super) struct Relist {
    listed: Option<BTreeSet<String>>,
}

impl Relist {
    /// Applies `ev` to `view` through `apply` and `remove`; `known` names what the view holds.
    /// Returns true when a list has completed (the view is synced).
    pub(super) fn dispatch<K: Resource, V>(
        &mut self,
        ev: Event<K>,
        view: &mut V,
        known: impl Fn(&V) -> Vec<String>,
        apply: impl Fn(&K, &mut V),
        remove: impl Fn(&str, &mut V),
    ) -> bool {
        let name = |k: &K| k.meta().name.clone().unwrap_or_default();
        match ev {
            Event::Init => self.listed = Some(BTreeSet::new()),
            Event::InitApply(k) => {
                if let Some(l) = self.listed.as_mut() {
                    l.insert(name(&k));
                }
                apply(&k, view);
            }
            Event::InitDone => {
                if let Some(l) = self.listed.take() {
                    for n in known(view).into_iter().filter(|n| !l.contains(n)) {
                        remove(&n, view);
                    }
                }
                return true;
            }
            Event::Apply(k) => apply(&k, view),
            Event::Delete(k) => remove(&name(&k), view),
        }
        false
    }
}

/// Reads the watch of `api`'s objects that `selector` selects until `cancel` or the stream's
/// end, handing each change and its receipt time to `handle`; failures are recorded as gaps of
/// the `what` watch, and the watcher retries them with backoff.
pub(super) async fn follow<K>(
    api: Api<K>,
    selector: &str,
    what: &'static str,
    rec: &Recorder,
    cancel: &CancellationToken,
    mut handle: impl FnMut(Event<K>, i64),
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    K::DynamicType: Default,
{
    let stream = watcher(api, watcher::Config::default().labels(selector)).default_backoff();
    let mut stream = std::pin::pin!(stream);
    let mut gaps = Gaps::new(what);
    loop {
        let ev = tokio::select! {
            () = cancel.cancelled() => break,
            ev = stream.next() => ev,
        };
        match gaps.receive(rec, ev) {
            Receipt::End => break,
            Receipt::Failed => {}
            Receipt::Delivered(ev, at) => handle(ev, at),
        }
    }
}

fn is_client(p: &Pod) -> bool {
    p.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(labels::NAME))
        .is_some_and(|n| n == CLIENT_NAME)
}

/// Watches the trial's pods (`selector`) until `cancel`.
pub fn spawn_pods(
    api: Api<Pod>,
    selector: String,
    put: watch::Receiver<Option<String>>,
    rec: Recorder,
    view: watch::Sender<PodsView>,
    cancel: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut relist = Relist::default();
        follow(api, &selector, "pod", &rec, &cancel, |ev, at| {
            let put_name = put.borrow().clone();
            let apply = |p: &Pod, v: &mut PodsView| {
                let name = p.metadata.name.clone().unwrap_or_default();
                if is_client(p) {
                    v.clients.insert(name, PodFacts::of(p, CLIENT_CONTAINER));
                    return;
                }
                let facts = PodFacts::of(p, PROBE_CONTAINER);
                let role = Role::of(&name, put_name.as_deref());
                for c in pod_changes(v.probes.get(&name), &facts, role) {
                    rec.send(c.into_line(at));
                }
                v.probes.insert(name, facts);
            };
            let remove = |name: &str, v: &mut PodsView| {
                if v.clients.remove(name).is_some() {
                    v.clients_deleted.insert(name.to_string());
                }
                if let Some(f) = v.probes.remove(name) {
                    let role = Role::of(name, put_name.as_deref());
                    for c in pod_deleted(&f, role) {
                        rec.send(c.into_line(at));
                    }
                    v.put_deleted |= role == Role::UnderTest;
                }
            };
            view.send_modify(|v| {
                let known =
                    |v: &PodsView| v.probes.keys().chain(v.clients.keys()).cloned().collect();
                v.synced |= relist.dispatch(ev, v, known, apply, remove);
            });
        })
        .await;
    })
}

fn put_ready(v: &SlicesView, put: Option<&str>) -> bool {
    put.map(pod_key).is_some_and(|k| {
        v.slices
            .values()
            .any(|s| s.get(&k).is_some_and(|e| e.ready))
    })
}

/// Watches the EndpointSlices of Service `service` until `cancel`.
pub fn spawn_slices(
    api: Api<EndpointSlice>,
    service: &str,
    mut put: watch::Receiver<Option<String>>,
    rec: Recorder,
    view: watch::Sender<SlicesView>,
    cancel: CancellationToken,
) -> JoinHandle<()> {
    let selector = format!("kubernetes.io/service-name={service}");
    tokio::spawn(async move {
        let stream = watcher(api, watcher::Config::default().labels(&selector)).default_backoff();
        let mut stream = std::pin::pin!(stream);
        let mut gaps = Gaps::new("EndpointSlice");
        let mut relist = Relist::default();
        loop {
            let ev = tokio::select! {
                () = cancel.cancelled() => break,
                // The pod under test is chosen after the slices may already show it ready.
                Ok(()) = put.changed() => {
                    let p = put.borrow_and_update().clone();
                    let at = host::mono_ns();
                    view.send_modify(|v| {
                        v.put_ready_since = put_ready(v, p.as_deref()).then_some(at);
                    });
                    continue;
                }
                ev = stream.next() => ev,
            };
            let (ev, at) = match gaps.receive(&rec, ev) {
                Receipt::End => break,
                Receipt::Failed => continue,
                Receipt::Delivered(ev, at) => (ev, at),
            };
            let put_name = put.borrow().clone();
            let apply = |s: &EndpointSlice, v: &mut SlicesView| {
                let name = s.metadata.name.clone().unwrap_or_default();
                let facts = slice_facts(s);
                for c in slice_changes(&name, v.slices.get(&name), &facts, put_name.as_deref()) {
                    rec.send(c.into_line(at));
                }
                v.slices.insert(name, facts);
            };
            let remove = |name: &str, v: &mut SlicesView| {
                if let Some(prev) = v.slices.remove(name) {
                    for c in slice_deleted(name, &prev, put_name.as_deref()) {
                        rec.send(c.into_line(at));
                    }
                }
            };
            view.send_modify(|v| {
                let known = |v: &SlicesView| v.slices.keys().cloned().collect();
                v.synced |= relist.dispatch(ev, v, known, apply, remove);
                let ready = put_ready(v, put_name.as_deref());
                v.put_ready_since = match (ready, v.put_ready_since) {
                    (true, Some(since)) => Some(since),
                    (true, None) => Some(at),
                    (false, _) => None,
                };
            });
        }
    })
}
