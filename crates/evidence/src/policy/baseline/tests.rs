use crate::plan::{ClientPlacement, KubernetesConfig, PlanInput, Platform};
use crate::policy::{Explicit, OnMissingBaseline, Policy};
use crate::trigger::Trigger;

fn local() -> PlanInput {
    crate::plan::tests::input()
}

fn k8s() -> PlanInput {
    let mut k = local();
    k.platform = Platform::Kubernetes;
    k.trigger = Trigger::Delete;
    k.kubernetes = Some(KubernetesConfig {
        image: "img".into(),
        replicas: 1,
        client: ClientPlacement::Pod,
        prestop_sleep_seconds: 0,
        readiness_period_seconds: 1,
        pdb: false,
        probe_env: vec![],
        attach: None,
        shard_placement: None,
    });
    k
}

const ATTACH: &str = "target = \"deployment/web\"\nport = \"http\"\nflows = 2\ndial-rate = 5";

/// The refusal of planning one arm (`body`) with `flags`, or "" when it plans.
fn refusal(flags: &PlanInput, body: &str, t: &str) -> String {
    let p = Policy::parse(&format!(
        "version = 1\n[[arm]]\nname = \"a\"\n{body}\nthresholds = [{t:?}]\n"
    ))
    .unwrap();
    p.plan(flags, &Explicit::default())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

#[test]
fn on_missing_baseline_is_warn_by_default_and_may_be_set_per_policy_and_per_arm() {
    let p = Policy::parse("version = 1\n[[arm]]\nname = \"a\"\nthresholds = [\"no-regression\"]")
        .unwrap();
    assert_eq!(p.on_missing_baseline, OnMissingBaseline::Warn);
    assert_eq!(p.arms[0].on_missing_baseline, None);
    let p = Policy::parse(
        "version = 1\non-missing-baseline = \"fail\"\n[[arm]]\nname = \"a\"\non-missing-baseline = \"warn\"\nthresholds = [\"no-regression\"]",
    )
    .unwrap();
    assert_eq!(p.on_missing_baseline, OnMissingBaseline::Fail);
    assert_eq!(p.arms[0].on_missing_baseline, Some(OnMissingBaseline::Warn));
    let e = Policy::parse(
        "version = 1\non-missing-baseline = \"ignore\"\n[[arm]]\nname = \"a\"\nthresholds = [\"no-regression\"]",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("unknown variant `ignore`, expected `warn` or `fail`"),
        "{e}"
    );
}

#[test]
fn sigterm_metrics_are_refused_on_attach_arms() {
    for m in ["trigger-to-sigterm", "sigterm-to-last-flow-end"] {
        let e = refusal(&k8s(), ATTACH, &format!("{m} <= baseline"));
        assert!(
            e.contains("is impossible") && e.contains("only in its own probe"),
            "{m}: {e}"
        );
    }
    // What an attach arm does measure plans.
    for m in [
        "failed-requests",
        "failed-dials",
        "severed-connections",
        "longest-failure-window",
        "trigger-to-endpoint-removed",
    ] {
        assert_eq!(
            refusal(&k8s(), ATTACH, &format!("{m} <= baseline")),
            "",
            "{m}"
        );
    }
    assert_eq!(refusal(&k8s(), ATTACH, "no-regression"), "");
    let e = refusal(&k8s(), ATTACH, "tcp-severed <= baseline");
    assert!(e.contains("an attach arm has none"), "{e}");
}

#[test]
fn attach_metrics_are_refused_on_probe_arms() {
    for m in [
        "failed-requests",
        "failed-dials",
        "severed-connections",
        "longest-failure-window",
    ] {
        let e = refusal(&k8s(), "", &format!("{m} <= baseline"));
        assert!(
            e.contains("is impossible") && e.contains("measured by the attach client"),
            "{m}: {e}"
        );
    }
    for m in [
        "tcp-severed",
        "trigger-to-sigterm",
        "sigterm-to-last-flow-end",
        "trigger-to-endpoint-removed",
    ] {
        assert_eq!(refusal(&k8s(), "", &format!("{m} <= baseline")), "", "{m}");
    }
}

#[test]
fn metrics_the_arm_flows_cannot_measure_are_refused() {
    let e = refusal(&local(), "udp-flows = 0", "udp-lost <= baseline");
    assert!(e.contains("runs no udp flows"), "{e}");
    let e = refusal(&local(), "", "trigger-to-endpoint-removed <= baseline");
    assert!(e.contains("local platform has no endpoints"), "{e}");
    let no_dials = "target = \"deployment/web\"\nport = \"http\"\nflows = 2\ndial-rate = 0";
    let e = refusal(&k8s(), no_dials, "failed-dials <= baseline");
    assert!(e.contains("dial-rate is 0"), "{e}");
    let tcp = "target = \"deployment/web\"\nprotocol = \"tcp\"\nflows = 2\ndial-rate = 0";
    let e = refusal(&k8s(), tcp, "failed-requests <= baseline");
    assert!(e.contains("no http, http2 or grpc flows"), "{e}");
    let e = refusal(&k8s(), tcp, "longest-failure-window <= baseline + 200ms");
    assert!(e.contains("nothing can fail"), "{e}");
}
