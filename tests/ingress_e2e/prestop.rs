//! The preStop advice taken, as the ingress e2e tests take it (`tests/ingress_e2e.rs` through
//! Traefik, `tests/ingress_envoy_e2e.rs` through Envoy Gateway): the sleep the endpoint-lag
//! finding derived from the ingress's own lag, added to bad-shutdown, and the same rollout
//! judged again.

use serde_json::Value;

use crate::common::json;
use crate::support::Run;

/// The endpoint-lag finding of `rep`, whose preStop sleep was derived from the ingress's own
/// lag (until it had stopped sending each pod requests, not from the failures' times), and
/// that sleep, s.
pub fn derived_from_ingress(rep: &Value) -> (u64, Value) {
    let findings = rep["findings"].as_array().unwrap();
    let lagged = findings
        .iter()
        .find(|f| f["id"] == "endpoint-lag")
        .unwrap_or_else(|| panic!("no endpoint-lag finding: {findings:#?}"));
    let derived = &lagged["recommendation"]["derived"];
    assert!(
        derived["rule"]
            .as_str()
            .unwrap()
            .contains("until the ingress had stopped sending it requests"),
        "{lagged:#}"
    );
    (derived["value"].as_u64().unwrap(), lagged.clone())
}

/// The JSON patch that gives a Deployment's first container a preStop sleep of `seconds`.
pub fn sleep_patch(seconds: u64) -> String {
    format!(
        r#"[{{"op":"add","path":"/spec/template/spec/containers/0/lifecycle","value":{{"preStop":{{"sleep":{{"seconds":{seconds}}}}}}}}}]"#
    )
}

/// `rollout(name)` with the preStop sleep of `sleep` s in place. The ingress's lag differs from
/// trial to trial (Traefik's providers throttle plus a reload, Envoy Gateway's xDS push), which
/// a loaded machine stretches: a sleep derived from one trial can fall short of the next one's,
/// as docs/ingress.md says. A miss (exit 1) must be that, the ingress routing to a pod for
/// longer than the sleep; the rollout is then judged once more, as `again`, after
/// `rolled_out`. The last run.
pub fn judged_with_sleep(
    sleep: u64,
    (name, again): (&str, &str),
    rollout: impl Fn(&str) -> Run,
    rolled_out: impl Fn(),
) -> Run {
    let r = rollout(name);
    if r.code != 1 {
        return r;
    }
    let missed = json(&r.out.join("report.json"));
    let lag = missed["trial"]["attach"]["ingress"]["routing"]["last_request_lag_ms"].as_i64();
    assert!(
        lag.is_some_and(|l| l > i64::try_from(sleep).unwrap() * 1000),
        "preStop sleep {sleep} s missed, and not on the ingress's lag ({lag:?} ms): {}",
        r.stderr
    );
    rolled_out();
    rollout(again)
}
