//! Only the trial's own terminations are judged, on the cluster: a trial started while an
//! earlier rollout of good-shutdown is still replacing its pods (each old pod drains for
//! `DRAIN_DELAY`, 5 s, after SIGTERM). Preflight waits until no pod of the target is
//! terminating (`target-not-terminating`, bounded by `--ready-timeout`), and the report holds
//! the earlier rollout's pods as context, apart from the pods the trial's own trigger
//! terminated, which alone are judged.

use std::time::Duration;

use drainwatch::evidence::event::EventName;

use crate::common::{self, json};
use crate::support::*;

/// The pods of `target` with a deletionTimestamp, by name.
fn terminating(kc: &std::path::Path, target: &str) -> Vec<String> {
    kubectl_ok(
        kc,
        &[
            "-n",
            NS,
            "get",
            "pods",
            "-l",
            &format!("app.kubernetes.io/name={}", app(target)),
            "-o",
            "jsonpath={range .items[?(@.metadata.deletionTimestamp)]}{.metadata.name} {end}",
        ],
    )
    .split_whitespace()
    .map(str::to_string)
    .collect()
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn a_trial_during_an_earlier_rollout_waits_and_judges_only_its_own_pods() {
    let (kc, _lock) = cluster();
    example(&kc, GOOD);
    // The pods the earlier rollout replaces.
    let earlier: Vec<String> = pod_uids(&kc, GOOD)
        .iter()
        .map(|p| p.split('=').next().unwrap().to_string())
        .collect();
    assert_eq!(earlier.len(), 2, "{earlier:?}");
    kubectl_ok(&kc, &["-n", NS, "rollout", "restart", GOOD]);
    // Start the trial as soon as an old pod is terminating (bounded: a rollout that never
    // deletes a pod fails here, by name).
    let seen = common::wait::until_every(
        format_args!("a pod of {GOOD} terminating after the rollout restart"),
        Duration::from_secs(120),
        Duration::from_millis(100),
        || Some(terminating(&kc, GOOD)).filter(|t| !t.is_empty()),
    );
    let r = dw_run(
        &kc,
        "attach-own-terminations",
        GOOD,
        &["--trigger", "rollout-restart"],
    );
    std::fs::write(r.out.join("stderr.txt"), &r.stderr).unwrap();
    eprintln!("output: {}", r.out.display());
    assert_eq!(r.code, 0, "{}", r.stderr);

    // Preflight waited for the earlier rollout's pods to leave, and said so.
    let ok = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("preflight [ ok ] target-not-terminating"))
        .count();
    assert_eq!(ok, 1, "{}", r.stderr);
    let ls = lines(&r.out);
    let settled = named(&ls, EventName::TargetEndpointsSettled);
    assert_eq!(settled.len(), 1);
    let detail = settled[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("first waited") && detail.contains("still terminating"),
        "{detail}"
    );
    // The wait names a pod of the earlier rollout's old ReplicaSet: the one this test saw
    // terminating first, or its sibling, which the rollout deletes later (the last one seen).
    let replica_set = |pod: &str| pod.rsplit_once('-').map_or(pod, |(rs, _)| rs).to_string();
    assert!(
        seen.iter()
            .any(|p| detail.contains(&format!("{}-", replica_set(p)))),
        "the wait names a pod of the ReplicaSet seen terminating ({seen:?}): {detail}"
    );

    // The report judges only the pods the trial's own trigger terminated.
    let rep = json(&r.out.join("report.json"));
    common::assert_valid_report(&rep);
    assert_eq!(rep["trial"]["status"], "completed");
    let a = &rep["trial"]["attach"];
    let own = pod_names(&a["pods"]);
    let context = pod_names(&a["context_pods"]);
    assert_eq!(
        own.len(),
        2,
        "the trial's rollout replaced both replicas: {own:?}"
    );
    assert!(
        own.iter().all(|p| !earlier.contains(p)),
        "no pod of the earlier rollout is judged: own {own:?}, earlier {earlier:?}"
    );
    assert!(!context.is_empty(), "{a}");
    assert!(
        context.iter().all(|p| earlier.contains(p)),
        "context holds only the earlier rollout's pods: {context:?} of {earlier:?}"
    );
    for p in a["context_pods"].as_array().unwrap() {
        assert!(p["deletion_requested_t_ms"].as_i64().unwrap() < 0, "{p}");
    }
    for p in a["pods"].as_array().unwrap() {
        assert!(p["deletion_requested_t_ms"].as_i64().unwrap() >= 0, "{p}");
    }
    let notes = a["notes"].as_array().unwrap();
    assert_eq!(
        notes
            .iter()
            .filter(|n| n
                .as_str()
                .unwrap()
                .contains("already terminating before the trigger"))
            .count(),
        1,
        "{notes:?}"
    );
    // No finding reads a context pod.
    let findings = rep["findings"].as_array().unwrap();
    for f in findings {
        assert_ne!(f["id"], "readiness-not-failed", "{f}");
        for e in f["evidence"].as_array().unwrap() {
            if let Some(p) = e["pod"].as_str() {
                assert!(!context.iter().any(|c| c == p), "{f}");
            }
        }
    }
}
