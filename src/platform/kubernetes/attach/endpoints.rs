//! Before an attach trial's flows: every endpoint of the Service is ready and has stayed so.
//!
//! A Service deployed moments ago (straight after `kubectl rollout status`) may have Ready pods
//! whose endpoints are not yet ready in its EndpointSlices, or are but not yet programmed by
//! kube-proxy on every node: held connections dialled then fail to open, and the trial stops
//! at attach-flows-established although nothing is wrong with the workload. So the trial
//! waits, bounded by `--ready-timeout`, until every pod of the target is Ready and listed
//! ready, as many as the workload's replicas, no other endpoint is listed, and the whole
//! picture has not changed for [`SETTLE`] (kube-proxy's programming of the last change); the
//! wait is recorded with its duration, and only a wait past the bound fails, by name.

use tokio::sync::watch;
use tokio::time::{Duration, Instant};

use crate::k8s::lanes::{TargetPods, TargetSlices};
use crate::k8s::translate::pod_key;
use crate::platform::kubernetes::checks::{self, Poll};
use crate::preflight;

/// How long every endpoint must have stayed ready, unchanged, before the flows are dialled:
/// a few times kube-proxy's usual minimum sync period (1 s), so the rules for the last
/// endpoint change are programmed on every node.
pub(super) const SETTLE: Duration = Duration::from_secs(3);

/// One look at the target's pods: `Ok` with how many were seen when none is terminating,
/// `Err` naming each that is (since when its deletion was requested, by the API server's
/// clock, and its node). A pod already leaving when the trial starts (an earlier rollout's)
/// would otherwise show up among the trial's terminations.
pub(super) fn none_terminating(p: &TargetPods) -> Result<usize, String> {
    if !p.synced {
        return Err("the target's pod watch has not listed yet".into());
    }
    let leaving: Vec<String> = p
        .pods
        .values()
        .filter_map(|pod| {
            let (deadline, grace) = pod.deletion.as_ref()?;
            let since = pod.deletion_requested.as_deref().map_or_else(
                || format!("deletionTimestamp {deadline}"),
                |r| format!("deletion requested at {r}"),
            );
            let grace = grace.map_or_else(|| "unknown".to_string(), |g| format!("{g} s"));
            Some(format!(
                "{} (terminating: {since}, grace period {grace}; node {})",
                pod.name,
                pod.node.as_deref().unwrap_or("unknown")
            ))
        })
        .collect();
    if leaving.is_empty() {
        Ok(p.pods.len())
    } else {
        Err(format!(
            "{} of {} pods of the target still terminating: {}",
            leaving.len(),
            p.pods.len(),
            leaving.join("; ")
        ))
    }
}

/// Waits until [`none_terminating`] holds; returns the last pods seen terminating, by their
/// description (empty when none was), or fails `target-not-terminating` after `limit`.
pub(super) async fn not_terminating(
    pods: &watch::Receiver<TargetPods>,
    limit: Duration,
) -> Result<Option<String>, (preflight::Check, String)> {
    let mut waited: Option<String> = None;
    checks::wait(preflight::TARGET_NOT_TERMINATING, limit, || {
        match none_terminating(&pods.borrow()) {
            Ok(_) => Poll::Ready(waited.clone()),
            Err(why) => {
                // Only pods seen terminating are worth naming afterwards, not an unsynced watch.
                if pods.borrow().synced {
                    waited = Some(why.clone());
                }
                Poll::Waiting(why)
            }
        }
    })
    .await
}

/// One look at the target's pods and endpoints: `Ok` with a description of the ready set when
/// every endpoint is ready, `Err` with what is not yet.
pub(super) fn all_ready(
    p: &TargetPods,
    s: &TargetSlices,
    replicas: usize,
) -> Result<String, String> {
    if !p.synced || !s.synced {
        return Err("the target's pod and EndpointSlice watches have not listed yet".into());
    }
    let mut ready = Vec::new();
    for pod in p.pods.values() {
        let name = &pod.name;
        if pod.deletion.is_some() {
            return Err(format!("pod {name} is terminating"));
        }
        if !pod.is_ready() {
            return Err(format!("pod {name} is not Ready"));
        }
        if !s.ready(name) {
            return Err(format!(
                "pod {name} is Ready but its endpoint is not ready yet"
            ));
        }
        ready.push(name.as_str());
    }
    if ready.len() < replicas {
        return Err(format!(
            "{} of {replicas} pods Ready with ready endpoints",
            ready.len()
        ));
    }
    let known: Vec<String> = ready.iter().map(|n| pod_key(n)).collect();
    for slice in s.slices.values() {
        if let Some((key, _)) = slice.iter().find(|(k, _)| !known.contains(k)) {
            return Err(format!(
                "the Service still lists {key}, which is not a Ready pod of the target"
            ));
        }
        if let Some((key, _)) = slice.iter().find(|(_, e)| !e.ready) {
            return Err(format!("endpoint {key} is not ready"));
        }
    }
    Ok(format!(
        "{} pods Ready with ready endpoints: {}",
        ready.len(),
        ready.join(", ")
    ))
}

/// Waits until [`all_ready`] has held, with the same answer, for [`SETTLE`]; returns the
/// ready set's description, or fails `target-endpoints-ready` after `limit`.
pub(super) async fn settled(
    pods: &watch::Receiver<TargetPods>,
    slices: &watch::Receiver<TargetSlices>,
    replicas: usize,
    limit: Duration,
) -> Result<String, (preflight::Check, String)> {
    let mut since: Option<(Instant, String)> = None;
    checks::wait(preflight::TARGET_ENDPOINTS_READY, limit, || {
        let now = all_ready(&pods.borrow(), &slices.borrow(), replicas);
        match (now, &since) {
            (Err(why), _) => {
                since = None;
                Poll::Waiting(why)
            }
            (Ok(d), Some((t, same))) if *same == d => {
                if t.elapsed() >= SETTLE {
                    Poll::Ready(d)
                } else {
                    Poll::Waiting(format!("{d}, for {} ms so far", t.elapsed().as_millis()))
                }
            }
            (Ok(d), _) => {
                since = Some((Instant::now(), d.clone()));
                Poll::Waiting(d)
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::translate::{EndpointFacts, PodFacts, SliceFacts};

    fn pod(name: &str, ready: bool) -> PodFacts {
        PodFacts {
            name: name.into(),
            ready: Some((ready, None)),
            phase: Some("Running".into()),
            ..PodFacts::default()
        }
    }

    fn views(pods: &[PodFacts], endpoints: &[(&str, bool)]) -> (TargetPods, TargetSlices) {
        let mut p = TargetPods {
            synced: true,
            ..TargetPods::default()
        };
        for x in pods {
            p.pods.insert(x.name.clone(), x.clone());
        }
        let mut slice = SliceFacts::new();
        for (name, ready) in endpoints {
            slice.insert(
                pod_key(name),
                EndpointFacts {
                    ready: *ready,
                    serving: *ready,
                    terminating: false,
                    uid: None,
                    address: None,
                },
            );
        }
        let mut s = TargetSlices {
            synced: true,
            ..TargetSlices::default()
        };
        s.slices.insert("web-abc".into(), slice);
        (p, s)
    }

    #[test]
    fn every_pod_ready_and_listed_ready_is_ready() {
        let (p, s) = views(
            &[pod("web-0", true), pod("web-1", true)],
            &[("web-0", true), ("web-1", true)],
        );
        assert_eq!(
            all_ready(&p, &s, 2).unwrap(),
            "2 pods Ready with ready endpoints: web-0, web-1"
        );
    }

    #[test]
    fn a_freshly_deployed_service_is_not_ready_until_every_endpoint_is() {
        let cases = [
            // Ready pod, endpoint not yet ready (being programmed).
            (
                views(
                    &[pod("a", true), pod("b", true)],
                    &[("a", true), ("b", false)],
                ),
                2,
                "endpoint is not ready yet",
            ),
            // Ready pod not listed at all yet.
            (
                views(&[pod("a", true), pod("b", true)], &[("a", true)]),
                2,
                "endpoint is not ready yet",
            ),
            // A pod not Ready.
            (
                views(&[pod("a", true), pod("b", false)], &[("a", true)]),
                2,
                "b is not Ready",
            ),
            // Fewer pods than replicas.
            (views(&[pod("a", true)], &[("a", true)]), 2, "1 of 2 pods"),
            // An endpoint of a pod that is no longer the target's.
            (
                views(&[pod("a", true)], &[("a", true), ("old", true)]),
                1,
                "still lists Pod/old",
            ),
        ];
        assert_eq!(cases.len(), 5);
        for ((p, s), replicas, want) in &cases {
            let why = all_ready(p, s, *replicas).unwrap_err();
            assert!(why.contains(want), "{why:?} lacks {want:?}");
        }
        let (mut p, s) = views(&[pod("a", true)], &[("a", true)]);
        p.synced = false;
        assert!(
            all_ready(&p, &s, 1)
                .unwrap_err()
                .contains("have not listed")
        );
        let (mut p, s) = views(&[pod("a", true)], &[("a", true)]);
        p.pods.get_mut("a").unwrap().deletion = Some(("t".into(), Some(30)));
        assert!(all_ready(&p, &s, 1).unwrap_err().contains("terminating"));
    }

    #[test]
    fn a_terminating_pod_is_named_with_since_when_and_its_node() {
        let (mut p, _) = views(&[pod("web-a", true), pod("web-old", true)], &[]);
        assert_eq!(none_terminating(&p), Ok(2));
        let old = p.pods.get_mut("web-old").unwrap();
        old.deletion = Some(("2026-12-03T06:00:30Z".into(), Some(30)));
        old.deletion_requested = Some("2026-12-03T06:00:00Z".into());
        old.node = Some("node2".into());
        let why = none_terminating(&p).unwrap_err();
        assert_eq!(
            why,
            "1 of 2 pods of the target still terminating: web-old (terminating: deletion requested at 2026-12-03T06:00:00Z, grace period 30 s; node node2)"
        );
        p.synced = false;
        assert!(none_terminating(&p).unwrap_err().contains("not listed"));
    }

    #[tokio::test(start_paused = true)]
    async fn the_terminating_wait_names_what_it_waited_for_or_fails_by_name() {
        let (mut p, _) = views(&[pod("a", true)], &[]);
        p.pods.get_mut("a").unwrap().deletion = Some(("t".into(), None));
        let (ptx, prx) = watch::channel(p);
        let (c, why) = not_terminating(&prx, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert_eq!(c, preflight::TARGET_NOT_TERMINATING);
        assert!(
            why.contains("not within 5s") && why.contains("a (terminating: deletionTimestamp t"),
            "{why}"
        );
        // The pod leaves while the trial waits: the wait ends and says what it waited for.
        let waiting =
            tokio::spawn(async move { not_terminating(&prx, Duration::from_secs(60)).await });
        tokio::time::sleep(Duration::from_secs(2)).await;
        ptx.send_modify(|v| {
            v.pods.remove("a");
        });
        let waited = waiting.await.unwrap().unwrap();
        assert!(waited.is_some_and(|w| w.contains("a (terminating")));
        // Nothing terminating: no wait to report.
        let (p, _) = views(&[pod("b", true)], &[]);
        let (_tx, rx) = watch::channel(p);
        assert_eq!(not_terminating(&rx, Duration::from_secs(1)).await, Ok(None));
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_ends_after_the_settle_period_or_fails_by_name() {
        let (p, s) = views(&[pod("a", true)], &[("a", true)]);
        let (_ptx, prx) = watch::channel(p);
        let (stx, srx) = watch::channel(s);
        let r = settled(&prx, &srx, 1, Duration::from_secs(60)).await;
        assert_eq!(r.unwrap(), "1 pods Ready with ready endpoints: a");
        // An endpoint that never becomes ready: the named check fails with what was seen.
        stx.send_modify(|s| {
            for e in s.slices.values_mut().flat_map(|x| x.values_mut()) {
                e.ready = false;
            }
        });
        let (c, why) = settled(&prx, &srx, 1, Duration::from_secs(10))
            .await
            .unwrap_err();
        assert_eq!(c, preflight::TARGET_ENDPOINTS_READY);
        assert!(
            why.contains("not within 10s") && why.contains("not ready yet"),
            "{why}"
        );
    }
}
