//! Watches, never polling: one kube-runtime watcher on the trial's pods and one on the probe
//! Service's EndpointSlices. Each keeps the last facts per object, turns every change into k8s
//! event lines through [`super::translate`], and publishes a view for the preflight waits.
//!
//! A watch that fails is retried with backoff by the watcher; the failure is recorded as
//! `watch_interrupted` and the first event after it as `watch_resumed` with the gap, so a
//! reader knows that changes inside the gap are stamped at their (late) receipt.

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event, watcher};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::translate::{
    PodFacts, Role, SliceFacts, pod_changes, pod_deleted, pod_key, slice_changes, slice_deleted,
    slice_facts,
};
use super::{CLIENT_CONTAINER, CLIENT_NAME, PROBE_CONTAINER, labels};
use crate::evidence::event::{EventLine, Source};
use crate::host;
use crate::trial::recorder::Recorder;

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
            EventLine::new(Source::K8s, "watch_interrupted", at).detail(format!(
                "the {} watch failed ({e}); retrying with backoff",
                self.which
            )),
        );
    }

    pub(crate) fn delivered(&mut self, rec: &Recorder, at: i64) {
        if let Some(since) = self.since.take() {
            rec.send(
                EventLine::new(Source::K8s, "watch_resumed", at).detail(format!(
                    "the {} watch delivers again after a gap of {} ms (interruption {}); changes inside the gap are stamped at this receipt, not when they happened",
                    self.which,
                    (at - since) / 1_000_000,
                    self.count
                )),
            );
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
        let stream = watcher(api, watcher::Config::default().labels(&selector)).default_backoff();
        let mut stream = std::pin::pin!(stream);
        let mut gaps = Gaps::new("pod");
        let mut listed: Option<BTreeSet<String>> = None;
        loop {
            let ev = tokio::select! {
                () = cancel.cancelled() => break,
                ev = stream.next() => ev,
            };
            let ev = match ev {
                None => break,
                Some(Err(e)) => {
                    gaps.failed(&rec, &e);
                    continue;
                }
                Some(Ok(ev)) => ev,
            };
            let at = host::mono_ns();
            gaps.delivered(&rec, at);
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
            view.send_modify(|v| match ev {
                Event::Init => listed = Some(BTreeSet::new()),
                Event::InitApply(p) => {
                    if let Some(l) = listed.as_mut() {
                        l.insert(p.metadata.name.clone().unwrap_or_default());
                    }
                    apply(&p, v);
                }
                Event::InitDone => {
                    // Whatever the relist did not return was deleted while we were not looking.
                    if let Some(l) = listed.take() {
                        let gone: Vec<String> = v
                            .probes
                            .keys()
                            .chain(v.clients.keys())
                            .filter(|n| !l.contains(*n))
                            .cloned()
                            .collect();
                        for n in gone {
                            remove(&n, v);
                        }
                    }
                    v.synced = true;
                }
                Event::Apply(p) => apply(&p, v),
                Event::Delete(p) => remove(&p.metadata.name.clone().unwrap_or_default(), v),
            });
        }
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
        let mut listed: Option<BTreeSet<String>> = None;
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
            let ev = match ev {
                None => break,
                Some(Err(e)) => {
                    gaps.failed(&rec, &e);
                    continue;
                }
                Some(Ok(ev)) => ev,
            };
            let at = host::mono_ns();
            gaps.delivered(&rec, at);
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
                match ev {
                    Event::Init => listed = Some(BTreeSet::new()),
                    Event::InitApply(s) => {
                        if let Some(l) = listed.as_mut() {
                            l.insert(s.metadata.name.clone().unwrap_or_default());
                        }
                        apply(&s, v);
                    }
                    Event::InitDone => {
                        if let Some(l) = listed.take() {
                            let gone: Vec<String> = v
                                .slices
                                .keys()
                                .filter(|n| !l.contains(*n))
                                .cloned()
                                .collect();
                            for n in gone {
                                remove(&n, v);
                            }
                        }
                        v.synced = true;
                    }
                    Event::Apply(s) => apply(&s, v),
                    Event::Delete(s) => remove(&s.metadata.name.clone().unwrap_or_default(), v),
                }
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
