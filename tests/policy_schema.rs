//! The hand-written `schema/policy.schema.json` and the parser agree: every policy the repo
//! ships validates, and threshold sentences are accepted or refused by both alike.

// Test helpers outside #[test] functions panic on broken fixtures by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use drainwatch::evidence::policy::{Policy, threshold};

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string("schema/policy.schema.json").unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn as_json(toml_text: &str) -> serde_json::Value {
    toml::from_str(toml_text).unwrap()
}

fn shipped_policies() -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for dir in [
        "policies",
        "tests/fixtures/ci/policies",
        "examples",
        "examples/gate",
    ] {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_shipped_policy_parses_and_validates() {
    let v = validator();
    let files = shipped_policies();
    for shipped in ["policies/smoke.toml", "examples/gate/baseline.toml"] {
        assert!(
            files.iter().any(|p| p.ends_with(Path::new(shipped))),
            "{shipped} is not among {files:?}"
        );
    }
    for p in files {
        let text = std::fs::read_to_string(&p).unwrap();
        Policy::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let errors: Vec<String> = v
            .iter_errors(&as_json(&text))
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", p.display());
    }
}

/// Every kind of threshold the code knows (the closed set docs/ci.md's table is generated from):
/// each of its examples is one the parser reads and the schema accepts, so a new kind cannot
/// be left out of the schema.
#[test]
fn the_schema_accepts_every_kind_of_threshold_the_code_knows() {
    use drainwatch::evidence::classify::Outcome;
    use drainwatch::evidence::policy::threshold::Interval;
    use drainwatch::evidence::policy::threshold::reference::Kind;
    let v = validator();
    let mut checked = 0;
    for kind in Kind::ALL {
        let mut sentences: Vec<String> = match kind.predicate() {
            Some(t) => vec![t.to_string()],
            None => kind.examples().iter().map(|e| e.to_string()).collect(),
        };
        match kind {
            Kind::Interval => sentences.extend(
                Interval::ALL
                    .iter()
                    .map(|i| format!("{} <= 2s", i.as_str())),
            ),
            Kind::CountFlows => sentences.extend(
                Outcome::ALL
                    .iter()
                    .map(|o| format!("tcp {} <= 0", o.as_str())),
            ),
            _ => {}
        }
        assert!(!sentences.is_empty(), "{kind:?} has no sentence");
        for e in &sentences {
            let doc = serde_json::json!({"version": 1, "arm": [{"name": "a", "thresholds": [e]}]});
            assert!(
                threshold::parse(e).is_ok(),
                "the parser refused {kind:?}'s example {e:?}"
            );
            let errors: Vec<String> = v.iter_errors(&doc).map(|x| x.to_string()).collect();
            assert!(
                errors.is_empty(),
                "the schema refused {kind:?}'s example {e:?}: {errors:?}"
            );
            checked += 1;
        }
    }
    assert!(checked >= Kind::ALL.len(), "{checked}");
}

#[test]
fn schema_and_parser_agree_on_threshold_syntax() {
    let v = validator();
    let with = |t: &str| {
        let mut doc =
            as_json("version = 1\n[[arm]]\nname = \"a\"\nthresholds = [\"severed <= 0\"]");
        doc["arm"][0]["thresholds"][0] = serde_json::Value::String(t.into());
        v.is_valid(&doc)
    };
    for good in [
        "tcp drained-clean-close >= 100%",
        "udp rehomed ≤ 0",
        "severed<=0",
        "read-timeout <= 12.5%",
        "sigterm-to-last-flow-end <= 25s",
        "trigger-to-container-exit ≤ 1500ms",
        "endpoint-not-ready-before-exit",
        "p50 sigterm-to-last-flow-end <= 26s",
        "p90 failed-requests <= 2",
        "p100 longest-failure-window ≤ 1500ms",
        "failed-requests <= baseline",
        "tcp-severed ≤ baseline + 2",
        "udp-lost <= baseline + 12.5%",
        "sigterm-to-last-flow-end <= baseline + 10%",
        "longest-failure-window <= baseline + 200ms",
        "trigger-to-endpoint-removed <= baseline+1.5s",
        "trigger-to-sigterm <= baseline + 0",
        "no-regression",
        "no-stream-reset",
        "goaway-before-close",
        "no-watch-cut",
        "no-new-connection-refused",
        "no-new-connection-failed",
    ] {
        assert!(threshold::parse(good).is_ok(), "parser refused {good:?}");
        assert!(with(good), "schema refused {good:?}");
    }
    for bad in [
        "tcp drained >= 100%",
        "severed > 0",
        "severed <= -1",
        "sigterm-to-last-flow-end >= 1s",
        "sigterm-to-last-flow-end <= 25",
        "tcp endpoint-not-ready-before-exit",
        "p0 failed-requests <= 2",
        "p101 failed-requests <= 2",
        "p50 failed-request <= 2",
        "p50 failed-requests <= 2s",
        "p50 sigterm-to-last-flow-end <= 26",
        "p50 failed-requests >= 2",
        "",
        "failed-request <= baseline",
        "failed-requests <= baseline + 200ms",
        "longest-failure-window <= baseline + 2",
        "failed-requests >= baseline",
        "tcp tcp-severed <= baseline",
        "failed-dials <= baseline - 1",
        "failed-dials <= baseline + 1.5",
        "no-regression <= 0",
        "no-stream-resets",
        "tcp goaway-before-close",
        "no-watch-cuts",
        "no-watch-cut <= 0",
        "no-new-connection-failures",
        "no-new-connection-failed <= 0",
    ] {
        assert!(threshold::parse(bad).is_err(), "parser accepted {bad:?}");
        assert!(!with(bad), "schema accepted {bad:?}");
    }
}

#[test]
fn schema_refuses_what_the_parser_names() {
    let v = validator();
    for (doc, why) in [
        ("version = 1\narm = []", "no arms"),
        (
            "version = 2\n[[arm]]\nname = \"a\"\nthresholds = [\"severed <= 0\"]",
            "version",
        ),
        (
            "version = 1\n[[arm]]\nname = \"a\"\nthresholds = []",
            "no thresholds",
        ),
        (
            "version = 1\n[[arm]]\nname = \"A\"\nthresholds = [\"severed <= 0\"]",
            "bad name",
        ),
        (
            "version = 1\n[[arm]]\nname = \"a\"\ngrace = 3\nthresholds = [\"severed <= 0\"]",
            "unknown key",
        ),
        (
            "version = 1\n[[arm]]\nname = \"a\"\ndial-rate = 5\nthresholds = [\"no-request-failed\"]",
            "an attach key without target",
        ),
        (
            "version = 1\n[[arm]]\nname = \"a\"\ntls = true\ninsecure-skip-verify = true\nthresholds = [\"no-request-failed\"]",
            "a TLS key without target",
        ),
        (
            "version = 1\n[[arm]]\nname = \"a\"\ngrpc-watch = true\nthresholds = [\"no-watch-cut\"]",
            "grpc-watch without target",
        ),
        (
            "version = 1\n[[arm]]\nname = \"a\"\ntarget = \"deployment/web\"\ntls = \"yes\"\nthresholds = [\"no-request-failed\"]",
            "a tls that is not a boolean",
        ),
        (
            "version = 1\n[[arm]]\nname = \"a\"\ningress-host = \"web.example\"\nthresholds = [\"no-request-failed\"]",
            "ingress-host without target",
        ),
        (
            "version = 1\n[[arm]]\nname = \"a\"\ntarget = \"deployment/web\"\ningress = \"nginx\"\ningress-service = \"t/t\"\ningress-host = \"web.example\"\nthresholds = [\"no-request-failed\"]",
            "an ingress controller outside the enum",
        ),
        (
            "version = 1\n[[arm]]\nname = \"a\"\ntarget = \"deployment/web\"\nprotocol = \"http3\"\nthresholds = [\"no-stream-reset\"]",
            "a protocol outside the enum",
        ),
        (
            "version = 1\n[[arm]]\nname = \"a\"\nquorum = \"most\"\nthresholds = [\"severed <= 0\"]",
            "a malformed quorum",
        ),
        (
            "version = 1\n[[arm]]\nname = \"a\"\nretries = 6\nthresholds = [\"severed <= 0\"]",
            "too many retries",
        ),
        (
            "version = 1\non-missing-baseline = \"ignore\"\n[[arm]]\nname = \"a\"\nthresholds = [\"no-regression\"]",
            "an unknown on-missing-baseline",
        ),
        (
            "version = 1\n[[arm]]\nname = \"a\"\non-missing-baseline = \"skip\"\nthresholds = [\"no-regression\"]",
            "an unknown on-missing-baseline of an arm",
        ),
    ] {
        assert!(!v.is_valid(&as_json(doc)), "schema accepted {why}");
        assert!(Policy::parse(doc).is_err(), "parser accepted {why}");
    }
}

#[test]
fn schema_and_parser_accept_an_attach_tls_arm() {
    let doc = "version = 1\n[[arm]]\nname = \"wss\"\ntarget = \"deployment/ws-good\"\ntarget-namespace = \"drainwatch-examples\"\nprotocol = \"websocket\"\nport = \"wss\"\ntls = true\nca-file = \"/var/lib/drainwatch-cluster/examples-ca.crt\"\nserver-name = \"ws-good.drainwatch-examples.svc\"\nthresholds = [\"no-new-connection-refused\"]";
    let errors: Vec<String> = validator()
        .iter_errors(&as_json(doc))
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let p = Policy::parse(doc).unwrap();
    assert_eq!(p.arms.len(), 1);
    let ingress = "version = 1\n[[arm]]\nname = \"through-traefik\"\ntarget = \"deployment/web\"\ningress = \"traefik\"\ningress-service = \"traefik/traefik:web\"\ningress-host = \"web.example\"\nthresholds = [\"no-request-failed\"]";
    assert!(validator().is_valid(&as_json(ingress)));
    assert!(Policy::parse(ingress).is_ok());
    let insecure = "version = 1\n[[arm]]\nname = \"a\"\ntarget = \"deployment/web\"\ntls = true\ninsecure-skip-verify = true\nthresholds = [\"no-request-failed\"]";
    assert!(validator().is_valid(&as_json(insecure)));
    assert!(Policy::parse(insecure).is_ok());
}
