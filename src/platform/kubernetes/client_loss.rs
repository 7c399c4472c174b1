//! A client pod lost under the trial (deleted, gone, or its container failed before the trial
//! closed the window). One client lost is the trial's client lost: the trial aborts. A shard
//! of several lost leaves its slice of the flows not-measured and the trial goes on with the
//! others; only when every shard is lost is the client lost.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::TrialState;
use super::shard_pods::ShardPod;
use crate::console;
use crate::k8s::watch::PodsView;
use crate::net::follow::LineTracker;
use crate::recorder::Recorder;

/// Why client pod `name` will write no more before the trial closes the window, if so:
/// deleted (by anyone: the trial's own close is told apart by the caller), gone from the API,
/// or its container failed. A container that exited 0 ended on its own once every flow had
/// ended (`drainwatch client` stops early then): nothing was lost.
fn loss(v: &PodsView, ns: &str, name: &str) -> Option<String> {
    let pod = format!("{ns}/{name}");
    if v.clients_deleted.contains(name) {
        return Some(format!("client pod {pod} left the API"));
    }
    let p = v.clients.get(name)?;
    if let Some((deadline, grace)) = &p.deletion {
        return Some(format!(
            "client pod {pod} was deleted (deletionTimestamp {deadline}{})",
            grace.map(|g| format!(", grace {g}s")).unwrap_or_default()
        ));
    }
    let t = p.container.as_ref()?.terminated.as_ref()?;
    (t.exit_code != 0).then(|| {
        format!(
            "the client container of pod {pod} ended (exit code {}{})",
            t.exit_code,
            t.reason
                .as_deref()
                .map(|r| format!(", {r}"))
                .unwrap_or_default()
        )
    })
}

/// The pods of `pods` not yet in `lost` that are lost in `v`, by position, with why.
fn newly_lost(v: &PodsView, ns: &str, pods: &[ShardPod], lost: &[bool]) -> Vec<(usize, String)> {
    pods.iter()
        .zip(lost)
        .enumerate()
        .filter(|(_, (_, gone))| !**gone)
        .filter_map(|(i, (p, _))| loss(v, ns, &p.name).map(|why| (i, why)))
        .collect()
}

/// Watches the client pods for their loss until the trial closes the window (`close`) or tears
/// down. Each lost pod records `client_lost` once (with its shard, from 1, when there are
/// several); a lost shard's flows are ended in `tracker`, so the trial does not wait for lines
/// that will not come. The returned channel says why once every pod is lost: the trial's
/// client is then lost.
pub(super) fn watch(
    st: &mut TrialState,
    close: &CancellationToken,
    pods: Vec<ShardPod>,
    tracker: Arc<Mutex<LineTracker>>,
    rec: &Recorder,
) -> watch::Receiver<Option<String>> {
    let (tx, rx) = watch::channel(None);
    let (close, cancel) = (close.clone(), st.cancel.clone());
    let (mut view, ns, rec) = (st.pods.clone(), st.ns.clone(), rec.clone());
    st.tasks.push(tokio::spawn(async move {
        let mut lost = vec![false; pods.len()];
        loop {
            let found = tokio::select! {
                biased;
                () = close.cancelled() => return,
                () = cancel.cancelled() => return,
                v = view.wait_for(|v| !newly_lost(v, &ns, &pods, &lost).is_empty()) => match v {
                    Ok(v) => newly_lost(&v, &ns, &pods, &lost),
                    Err(_) => return,
                },
            };
            let mut last = None;
            for (i, why) in found {
                lost[i] = true;
                let pod = &pods[i];
                let node = view.borrow().clients.get(&pod.name).and_then(|p| p.node.clone());
                let shard = pod.sharded().then_some(pod.index + 1);
                rec.client_lost(shard, why.clone(), node);
                if pod.sharded() {
                    if let Ok(mut t) = tracker.lock() {
                        t.lose(&pod.slice);
                    }
                    console::warning!(
                        "drainwatch: client shard {} of {} was lost: {why}; its flows ({}) are not-measured, the other shards go on",
                        pod.index + 1,
                        pod.count,
                        pod.slice.describe()
                    );
                }
                last = Some(why);
            }
            if lost.iter().all(|l| *l) {
                tx.send_replace(last.map(|why| {
                    if pods.len() > 1 {
                        format!("every client shard was lost, the last: {why}")
                    } else {
                        why
                    }
                }));
                return;
            }
        }
    }));
    rx
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::CLIENT_NAME;
    use crate::k8s::translate::{ContainerFacts, PodFacts, Terminated};

    fn ended(exit_code: i32, reason: &str) -> PodFacts {
        PodFacts {
            container: Some(ContainerFacts {
                terminated: Some(Terminated {
                    exit_code,
                    reason: Some(reason.into()),
                    signal: None,
                    finished_at: None,
                }),
                ..ContainerFacts::default()
            }),
            ..PodFacts::default()
        }
    }

    #[test]
    fn a_deleted_or_failed_client_is_lost_and_one_that_finished_is_not() {
        let mut v = PodsView::default();
        assert_eq!(loss(&v, "ns", CLIENT_NAME), None, "not seen yet: not lost");
        v.clients.insert(CLIENT_NAME.into(), PodFacts::default());
        assert_eq!(loss(&v, "ns", CLIENT_NAME), None, "running");
        v.clients.insert(CLIENT_NAME.into(), ended(0, "Completed"));
        assert_eq!(
            loss(&v, "ns", CLIENT_NAME),
            None,
            "every flow ended, so it stopped"
        );
        v.clients.insert(CLIENT_NAME.into(), ended(137, "Error"));
        let why = loss(&v, "ns", CLIENT_NAME).unwrap();
        assert!(why.contains("exit code 137, Error"), "{why}");
        let mut deleted = ended(0, "Completed");
        deleted.deletion = Some(("2026-12-02T07:00:30Z".into(), Some(30)));
        v.clients.insert(CLIENT_NAME.into(), deleted);
        let why = loss(&v, "ns", CLIENT_NAME).unwrap();
        assert!(
            why.contains("ns/drainwatch-client was deleted") && why.contains("grace 30s"),
            "{why}"
        );
        v.clients.clear();
        v.clients_deleted.insert(CLIENT_NAME.into());
        assert!(
            loss(&v, "ns", CLIENT_NAME)
                .unwrap()
                .contains("left the API")
        );
    }
}
