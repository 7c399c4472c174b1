use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};

use super::*;
use crate::evidence::plan::attach::PortRef;

fn labels(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn svc(name: &str, sel: &[(&str, &str)], ports: &[(Option<&str>, i32, &str)]) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(labels(sel)),
            cluster_ip: Some("10.96.0.10".into()),
            ports: Some(
                ports
                    .iter()
                    .map(|(n, p, proto)| ServicePort {
                        name: n.map(str::to_string),
                        port: *p,
                        protocol: Some(proto.to_string()),
                        ..ServicePort::default()
                    })
                    .collect(),
            ),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

fn web() -> Workload {
    Workload {
        kind: WorkloadKind::Deployment,
        name: "web".into(),
        namespace: "shop".into(),
        selector: "app=web".into(),
        replicas: 2,
        ready_replicas: 2,
        no_rollout: None,
        pods: BTreeMap::from([
            ("web-1".into(), labels(&[("app", "web"), ("tier", "front")])),
            ("web-2".into(), labels(&[("app", "web"), ("tier", "front")])),
        ]),
    }
}

#[test]
fn selectors_render_as_label_selector_strings() {
    let s = LabelSelector {
        match_labels: Some(labels(&[("app", "web")])),
        match_expressions: Some(vec![
            LabelSelectorRequirement {
                key: "tier".into(),
                operator: "In".into(),
                values: Some(vec!["a".into(), "b".into()]),
            },
            LabelSelectorRequirement {
                key: "canary".into(),
                operator: "DoesNotExist".into(),
                values: None,
            },
        ]),
    };
    assert_eq!(selector_string(&s), "app=web,tier in (a,b),!canary");
    assert!(!selects(&BTreeMap::new(), &labels(&[("app", "web")])));
}

#[test]
fn the_one_service_selecting_the_target_is_chosen() {
    let all = [
        svc("db", &[("app", "db")], &[(None, 5432, "TCP")]),
        svc("web", &[("app", "web")], &[(Some("http"), 80, "TCP")]),
    ];
    assert_eq!(
        pick_service(&all, None, &web())
            .unwrap()
            .metadata
            .name
            .as_deref(),
        Some("web")
    );
    let two = [
        svc("web", &[("app", "web")], &[(None, 80, "TCP")]),
        svc("web-front", &[("tier", "front")], &[(None, 80, "TCP")]),
    ];
    let Err(Refusal::Service(why)) = pick_service(&two, None, &web()) else {
        panic!("several services must be refused")
    };
    assert!(
        why.contains("web, web-front") && why.contains("--service"),
        "{why}"
    );
    assert!(pick_service(&two, Some("web-front"), &web()).is_ok());
    let none = [svc("db", &[("app", "db")], &[(None, 5432, "TCP")])];
    let Err(Refusal::Service(why)) = pick_service(&none, None, &web()) else {
        panic!("no service must be refused")
    };
    assert!(why.contains("no Service") && why.contains("db"), "{why}");
    let Err(Refusal::Service(why)) = pick_service(&none, Some("db"), &web()) else {
        panic!("a service selecting none of the pods must be refused")
    };
    assert!(
        why.contains("selects none of the 2 pods of deployment/web"),
        "{why}"
    );
    let Err(Refusal::Service(why)) = pick_service(&none, Some("nope"), &web()) else {
        panic!("a missing service must be refused")
    };
    assert!(
        why.contains("service nope not found in namespace shop"),
        "{why}"
    );
}

#[test]
fn ports_are_found_by_number_or_name_and_must_be_tcp() {
    let s = svc(
        "web",
        &[("app", "web")],
        &[(Some("http"), 80, "TCP"), (Some("dns"), 53, "UDP")],
    );
    assert_eq!(pick_port(&s, Some(&PortRef::Number(80))).unwrap().port, 80);
    assert_eq!(
        pick_port(&s, Some(&PortRef::Name("http".into())))
            .unwrap()
            .port,
        80
    );
    let Err(Refusal::Port(why)) = pick_port(&s, None) else {
        panic!("two ports need --port")
    };
    assert!(
        why.contains("2 ports") && why.contains("http=80/TCP"),
        "{why}"
    );
    let Err(Refusal::Port(why)) = pick_port(&s, Some(&PortRef::Number(8080))) else {
        panic!("a missing port must be refused")
    };
    assert_eq!(
        why,
        "service web has no port 8080 (its ports: http=80/TCP, dns=53/UDP)"
    );
    let Err(Refusal::Port(why)) = pick_port(&s, Some(&PortRef::Name("dns".into()))) else {
        panic!("udp must be refused")
    };
    assert!(why.contains("not TCP"), "{why}");
    let one = svc("web", &[("app", "web")], &[(None, 8080, "TCP")]);
    assert_eq!(pick_port(&one, None).unwrap().port, 8080);
}

#[test]
fn a_headless_governing_service_gives_way_to_the_routed_one() {
    let mut governing = svc("web-pods", &[("app", "web")], &[(None, 80, "TCP")]);
    if let Some(spec) = governing.spec.as_mut() {
        spec.cluster_ip = Some("None".into());
    }
    let routed = svc("web", &[("app", "web")], &[(None, 80, "TCP")]);
    let both = [governing.clone(), routed];
    let picked = pick_service(&both, None, &web()).unwrap();
    assert_eq!(picked.metadata.name.as_deref(), Some("web"));
    // Alone, the headless one is still found (and refused later for its missing ClusterIP);
    // named, it is what was asked for.
    let only = [governing.clone()];
    assert_eq!(
        pick_service(&only, None, &web()).unwrap().metadata.name,
        governing.metadata.name
    );
    assert_eq!(
        pick_service(&both, Some("web-pods"), &web())
            .unwrap()
            .metadata
            .name
            .as_deref(),
        Some("web-pods")
    );
}

#[test]
fn a_statefulset_scale_down_takes_the_highest_ordinal() {
    let pods = ["db-0", "db-10", "db-2", "db-extra-5", "dbx-11"];
    assert_eq!(
        highest_ordinal("db", pods),
        Some("db-10"),
        "by number, not by name"
    );
    assert_eq!(highest_ordinal("db", ["web-0"]), None);
}
