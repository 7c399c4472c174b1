//! The Kubernetes preflight waits: each reads the views the watches keep (never the API) and
//! ends in success, a named failure, or a timeout that says what was last seen.

use std::time::Duration;

use crate::k8s::translate::PodFacts;
use crate::k8s::watch::PodsView;
pub use crate::preflight::Poll;
use crate::preflight::{self, Check, Stopped};

/// Re-evaluates `eval` (a read of in-memory views) every 100 ms until it decides or `limit`
/// passes; a timeout fails `check` with the last observation.
pub async fn wait<R>(
    check: Check,
    limit: Duration,
    mut eval: impl FnMut() -> Poll<R>,
) -> Result<R, (Check, String)> {
    preflight::poll(limit, Duration::from_millis(100), || {
        let p = eval();
        async move { p }
    })
    .await
    .map_err(|stopped| match stopped {
        Stopped::Failed(c, why) => (c, why),
        Stopped::TimedOut(last) => (
            check,
            format!("not within {}s; last observation: {last}", limit.as_secs()),
        ),
    })
}

const PULL_ERRORS: &[&str] = &[
    "ErrImagePull",
    "ImagePullBackOff",
    "ErrImageNeverPull",
    "InvalidImageName",
];

/// A definite failure of one pod: the image cannot be pulled, or the container crash-loops.
pub fn pod_failure(p: &PodFacts, image: &str) -> Option<(Check, String)> {
    let c = p.container.as_ref()?;
    if let Some((reason, msg)) = &c.waiting {
        if PULL_ERRORS.contains(&reason.as_str()) {
            return Some((
                preflight::IMAGE_PRESENT,
                format!(
                    "image {image} cannot be pulled for pod {}: {reason}: {}",
                    p.name,
                    msg.as_deref().unwrap_or("no message")
                ),
            ));
        }
    }
    let crashed = c.restart_count > 0
        || c.waiting
            .as_ref()
            .is_some_and(|w| w.0 == "CrashLoopBackOff")
        || c.terminated.is_some();
    crashed.then(|| {
        let last = c
            .terminated
            .as_ref()
            .or(c.last_terminated.as_ref())
            .map_or_else(|| "unknown".to_string(), |t| t.describe());
        (
            preflight::POD_READY,
            format!(
                "the probe in pod {} is crash-looping (restartCount={}, last termination: {last})",
                p.name, c.restart_count
            ),
        )
    })
}

/// Every one of `replicas` probe pods runs its container.
pub fn probes_running(v: &PodsView, replicas: usize, image: &str) -> Poll<()> {
    for p in v.probes.values() {
        if let Some((c, why)) = pod_failure(p, image) {
            return Poll::Failed(c, why);
        }
    }
    let running = v
        .probes
        .values()
        .filter(|p| p.deletion.is_none() && p.container.as_ref().is_some_and(|c| c.running))
        .count();
    if running >= replicas {
        return Poll::Ready(());
    }
    Poll::Waiting(describe(v, replicas))
}

fn describe(v: &PodsView, replicas: usize) -> String {
    if v.probes.is_empty() {
        return format!("no probe pod yet (want {replicas})");
    }
    v.probes
        .values()
        .map(|p| {
            let state = match &p.container {
                Some(c) if c.running => "running".to_string(),
                Some(c) => c.waiting.as_ref().map_or_else(
                    || "not started".to_string(),
                    |w| format!("waiting: {}", w.0),
                ),
                None => "no container status".into(),
            };
            format!(
                "{} phase={} node={} {state}",
                p.name,
                p.phase.as_deref().unwrap_or("unknown"),
                p.node.as_deref().unwrap_or("unscheduled")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The pod under test: the first running probe pod by name (a deterministic choice).
pub fn choose_put(v: &PodsView) -> Option<PodFacts> {
    v.probes
        .values()
        .find(|p| p.deletion.is_none() && p.container.as_ref().is_some_and(|c| c.running))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::translate::ContainerFacts;

    fn pod(name: &str, c: ContainerFacts) -> PodFacts {
        PodFacts {
            name: name.into(),
            container: Some(c),
            ..PodFacts::default()
        }
    }

    #[test]
    fn pull_errors_and_crash_loops_fail_at_once() {
        let pulling = pod(
            "a",
            ContainerFacts {
                waiting: Some(("ImagePullBackOff".into(), Some("not found".into()))),
                ..ContainerFacts::default()
            },
        );
        let (c, why) = pod_failure(&pulling, "img:9").unwrap();
        assert_eq!(c, preflight::IMAGE_PRESENT);
        assert!(why.contains("img:9") && why.contains("not found"));
        let looping = pod(
            "b",
            ContainerFacts {
                restart_count: 3,
                ..ContainerFacts::default()
            },
        );
        assert_eq!(pod_failure(&looping, "i").unwrap().0, preflight::POD_READY);
        let running = pod(
            "c",
            ContainerFacts {
                running: true,
                ..ContainerFacts::default()
            },
        );
        assert!(pod_failure(&running, "i").is_none());
        let mut v = PodsView::default();
        v.probes.insert("c".into(), running);
        assert!(matches!(probes_running(&v, 1, "i"), Poll::Ready(())));
        assert!(matches!(probes_running(&v, 2, "i"), Poll::Waiting(_)));
        assert_eq!(choose_put(&v).unwrap().name, "c");
    }
}
