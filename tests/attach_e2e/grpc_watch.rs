//! `--grpc-watch` on the cluster: each gRPC connection holds a `grpc.health.v1.Health/Watch`
//! through a rollout restart. grpc-good says NOT_SERVING on its Watches at SIGTERM and ends
//! them with OK before its GOAWAY: none is cut and some drain. grpc-bad exits at once: the
//! Watches its pods held are cut with no GOAWAY (`no-goaway`), each attributed to the pod that
//! served it, and a policy of `no-watch-cut` fails.

use drainwatch::evidence::event::EventName;

use serde_json::Value;

use crate::common::{self, json, temp_dir};
use crate::protocols::{GRPC_BAD, GRPC_GOOD};
use crate::support::*;

/// The Watch records of a report that ended, with their outcome `outcome`.
fn ended_with<'a>(watches: &'a Value, outcome: &str) -> Vec<&'a Value> {
    watches["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["outcome"] == outcome)
        .collect()
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn grpc_watch_drains_on_grpc_good_and_is_cut_on_grpc_bad() {
    let (kc, _lock) = cluster();

    // grpc-good: no Watch cut, and the old pods' Watches drained (NOT_SERVING, then OK).
    example(&kc, GRPC_GOOD);
    let r = dw_run(
        &kc,
        "attach-grpc-watch-good",
        GRPC_GOOD,
        &[
            "--protocol",
            "grpc",
            "--port",
            "grpc",
            "--grpc-watch",
            "--trigger",
            "rollout-restart",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rep = json(&r.out.join("report.json"));
    common::assert_valid_report(&rep);
    let w = &rep["trial"]["attach"]["watches"];
    assert!(w.is_object(), "{:#}", rep["trial"]["attach"]);
    assert_eq!(w["cut"], 0, "grpc-good cuts no Watch: {w:#}");
    let drained = ended_with(w, "drained");
    assert!(
        !drained.is_empty(),
        "the old pods drained their Watches: {w:#}"
    );
    for d in &drained {
        assert_eq!(d["grpc_code"], "OK", "{d:#}");
        assert!(d["not_serving_t_ms"].is_i64(), "{d:#}");
    }
    let ls = lines(&r.out);
    assert!(!named(&ls, EventName::AttachGrpcWatchStatus).is_empty());

    // grpc-bad under a policy gating the Watch: it fails, and the cut Watches say how.
    example(&kc, GRPC_BAD);
    let name = "grpc-watch-bad";
    let policy = temp_dir("attach-grpc-watch-bad-policy").join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "version = 1\n[[arm]]\nname = \"{name}\"\ntarget = \"{GRPC_BAD}\"\ntarget-namespace = \"{NS}\"\nprotocol = \"grpc\"\ngrpc-watch = true\ntrigger = \"rollout-restart\"\nthresholds = [\"no-watch-cut\"]\n"
        ),
    )
    .unwrap();
    let out = temp_dir("attach-grpc-watch-bad");
    run_policy_expecting_miss(&kc, &out, GRPC_BAD, &policy);
    let dir = out.join(name);
    let rep = json(&dir.join("report.json"));
    common::assert_valid_report(&rep);
    let w = &rep["trial"]["attach"]["watches"];
    let cut = ended_with(w, "cut");
    assert!(!cut.is_empty(), "grpc-bad's exit cuts the Watches: {w:#}");
    let pods = terminated_pods(&lines(&dir));
    for c in &cut {
        // The process exits: the kernel ends the connection (FIN, or RST with unread data)
        // with the Watch open and no GOAWAY.
        assert_eq!(c["mechanism"], "no-goaway", "{c:#}");
        assert!(c["grpc_code"].is_null(), "{c:#}");
        let pod = c["pod"].as_str().unwrap_or_else(|| panic!("{c:#}"));
        assert!(pods.iter().any(|p| p == pod), "{pod} not in {pods:?}");
    }
    let verdict = json(&out.join("verdict.json"));
    let t = verdict["arms"][0]["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "no-watch-cut")
        .cloned()
        .unwrap_or_default();
    assert_eq!(t["verdict"], "fail", "no-watch-cut misses: {verdict:#}");
}
