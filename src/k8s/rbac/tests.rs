use super::*;
use crate::evidence::plan::attach::WorkloadKind;
use crate::evidence::trigger::Trigger;
use crate::k8s::access::{
    attach_needs, client_ca_needs, ingress_managed_needs, ingress_needs, needs,
};

fn req(ns: &str, targets: &[&str], drain_node: bool, tls_ca: bool) -> RbacRequest {
    RbacRequest {
        namespace: ns.into(),
        targets: targets.iter().map(|t| t.to_string()).collect(),
        drain_node,
        tls_ca,
        ingress_managed: false,
    }
}

/// `req` with every opt-in, `--ingress-managed` too.
fn every_opt_in(ns: &str, targets: &[&str]) -> RbacRequest {
    RbacRequest {
        ingress_managed: true,
        ..req(ns, targets, true, true)
    }
}

fn names(objs: &[Object]) -> Vec<String> {
    objs.iter()
        .map(|o| {
            let kind = match o {
                Object::Namespace(_) => "Namespace",
                Object::ServiceAccount(_) => "ServiceAccount",
                Object::ClusterRole(_) => "ClusterRole",
                Object::ClusterRoleBinding(_) => "ClusterRoleBinding",
                Object::Role(_) => "Role",
                Object::RoleBinding(_) => "RoleBinding",
            };
            let ns = match o {
                Object::ServiceAccount(x) => x.metadata.namespace.clone(),
                Object::Role(x) => x.metadata.namespace.clone(),
                Object::RoleBinding(x) => x.metadata.namespace.clone(),
                _ => None,
            };
            format!(
                "{kind}/{}@{}",
                o.name().unwrap_or("?"),
                ns.unwrap_or_default()
            )
        })
        .collect()
}

/// The rules of every role the ServiceAccount is bound to, by binding kind.
fn rules(objs: &[Object], role: &str) -> Vec<PolicyRule> {
    let found: Vec<&ClusterRole> = objs
        .iter()
        .filter_map(|o| match o {
            Object::ClusterRole(r) if r.metadata.name.as_deref() == Some(role) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(found.len(), 1, "ClusterRole {role} in {:?}", names(objs));
    found[0].rules.clone().unwrap_or_default()
}

fn granted(rules: &[PolicyRule], need: &Need) -> bool {
    rules.iter().any(|r| grants(r, need))
}

#[test]
fn the_shipped_files_render_to_themselves() {
    let files: Vec<Object> = parse(RBAC_YAML)
        .unwrap()
        .into_iter()
        .chain(parse(RBAC_ATTACH_YAML).unwrap())
        .collect();
    assert_eq!(files.len(), 17, "{:?}", names(&files));
    let mut got = objects(&every_opt_in(DEFAULT_NAMESPACE, &["drainwatch-examples"])).unwrap();
    let mut want = files;
    // The attach RoleBinding is placed after the attach file's other objects.
    let key = |o: &Object| names(std::slice::from_ref(o))[0].clone();
    got.sort_by_key(key);
    want.sort_by_key(key);
    assert_eq!(got, want);
}

#[test]
fn another_namespace_moves_the_identity_and_every_grant_to_it() {
    let out = render(&req("ci-gate", &["shop"], true, true)).unwrap();
    assert!(!out.contains(DEFAULT_NAMESPACE), "{out}");
    assert!(!out.contains("drainwatch-examples"), "{out}");
    let objs = parse(&out).unwrap();
    let n = names(&objs);
    assert!(n.contains(&"Namespace/ci-gate@".to_string()), "{n:?}");
    assert!(
        n.contains(&"ServiceAccount/drainwatch@ci-gate".to_string()),
        "{n:?}"
    );
    assert!(
        n.contains(&"RoleBinding/drainwatch-attach-ci-gate@shop".to_string()),
        "{n:?}"
    );
    // The environment record's read-only Role stays in kube-system.
    assert!(
        n.contains(&"Role/drainwatch-environment@kube-system".to_string()),
        "{n:?}"
    );
    let mut subjects = 0;
    for o in &objs {
        let s = match o {
            Object::ClusterRoleBinding(b) => b.subjects.clone().unwrap_or_default(),
            Object::RoleBinding(b) => b.subjects.clone().unwrap_or_default(),
            _ => continue,
        };
        for s in s {
            assert_eq!(s.namespace.as_deref(), Some("ci-gate"), "{s:?}");
            subjects += 1;
        }
    }
    assert_eq!(subjects, 5, "every binding's subject: {n:?}");
}

#[test]
fn identities_in_two_namespaces_share_the_roles_and_no_binding() {
    let a = objects(&req("team-a", &["shop"], true, false)).unwrap();
    let b = objects(&req("team-b", &["shop"], true, false)).unwrap();
    let shipped = objects(&req(DEFAULT_NAMESPACE, &["shop"], true, false)).unwrap();
    let bindings = |objs: &[Object]| -> Vec<String> {
        names(objs)
            .into_iter()
            .filter(|n| n.contains("Binding/"))
            .collect()
    };
    let (ba, bb, bs) = (bindings(&a), bindings(&b), bindings(&shipped));
    // ClusterRoleBindings drainwatch and drainwatch-attach-nodes, kube-system's RoleBinding, the
    // target's RoleBinding.
    assert_eq!(ba.len(), 4, "{ba:?}");
    for x in &ba {
        assert!(
            !bb.contains(x) && !bs.contains(x),
            "{x} is shared: {bb:?} {bs:?}"
        );
    }
    assert!(
        ba.contains(&"ClusterRoleBinding/drainwatch-team-a@".to_string()),
        "{ba:?}"
    );
    let roles = |objs: &[Object]| -> Vec<String> {
        names(objs)
            .into_iter()
            .filter(|n| n.starts_with("ClusterRole/") || n.starts_with("Role/"))
            .collect()
    };
    assert_eq!(roles(&a), roles(&b));
    assert_eq!(roles(&a), roles(&shipped));
    // Each binding still names the role it grants, unchanged.
    for o in &a {
        if let Object::ClusterRoleBinding(x) = o {
            assert!(x.role_ref.name.starts_with("drainwatch"), "{x:?}");
            assert!(!x.role_ref.name.ends_with("team-a"), "{x:?}");
        }
    }
}

#[test]
fn the_attach_rights_are_bound_once_per_target_and_the_opt_ins_only_when_asked() {
    let probe = names(&objects(&req("dw", &[], false, false)).unwrap());
    assert_eq!(probe.len(), 6, "{probe:?}");
    assert!(!probe.iter().any(|n| n.contains("attach")), "{probe:?}");

    let two = names(&objects(&req("dw", &["shop", "web"], false, false)).unwrap());
    let bindings: Vec<&String> = two
        .iter()
        .filter(|n| n.starts_with("RoleBinding/drainwatch-attach-dw@"))
        .collect();
    assert_eq!(bindings.len(), 2, "{two:?}");
    assert!(two.iter().any(|n| n.ends_with("@shop")) && two.iter().any(|n| n.ends_with("@web")));
    assert!(
        !two.iter()
            .any(|n| n.contains(ATTACH_NODES) || n.contains(ATTACH_CA)),
        "{two:?}"
    );

    let all = names(&objects(&req("dw", &["shop"], true, true)).unwrap());
    for want in [
        "ClusterRole/drainwatch-attach-nodes@",
        "ClusterRoleBinding/drainwatch-attach-nodes-dw@",
        "ClusterRole/drainwatch-attach-ca@",
        "ClusterRoleBinding/drainwatch-attach-ca-dw@",
    ] {
        assert!(all.contains(&want.to_string()), "{want} in {all:?}");
    }
    assert!(!all.iter().any(|n| n.contains("ingress")), "{all:?}");

    let managed = names(&objects(&every_opt_in("dw", &["shop", "web"])).unwrap());
    for want in [
        "ClusterRole/drainwatch-ingress-traefik@",
        "ClusterRole/drainwatch-attach-ingress@",
        "RoleBinding/drainwatch-attach-ingress-dw@shop",
        "RoleBinding/drainwatch-attach-ingress-dw@web",
        "ClusterRole/drainwatch-attach-ingress-trial@",
        "ClusterRoleBinding/drainwatch-attach-ingress-trial-dw@",
    ] {
        assert!(managed.contains(&want.to_string()), "{want} in {managed:?}");
    }
}

#[test]
fn bad_requests_are_named_before_anything_is_printed() {
    for (r, want) in [
        (
            req("Drainwatch", &[], false, false),
            "--namespace \"Drainwatch\"",
        ),
        (
            req("dw", &["shop-"], false, false),
            "--target-namespace \"shop-\"",
        ),
        (req("", &[], false, false), "--namespace \"\""),
        (
            req("dw", &[], true, false),
            "--drain-node extends the attach rights",
        ),
        (
            req("dw", &[], false, true),
            "--tls-ca extends the attach rights",
        ),
        (
            every_opt_in("dw", &[]),
            "--drain-node extends the attach rights",
        ),
        (
            RbacRequest {
                ingress_managed: true,
                ..req("dw", &[], false, false)
            },
            "--ingress-managed extends the attach rights",
        ),
    ] {
        let e = render(&r).unwrap_err().to_string();
        assert!(e.contains(want), "{want} in {e}");
    }
    assert!(render(&req(&"a".repeat(64), &[], false, false)).is_err());
    assert!(render(&req(&"a".repeat(63), &[], false, false)).is_ok());
}

/// What preflight checks is what the shipped RBAC grants: every permission a probe trial
/// asks for (any trigger, its own namespace, a client pod, a PDB) is in the drainwatch
/// ClusterRole, and every one an attach trial asks for is in the attach roles.
#[test]
fn the_shipped_rules_grant_every_permission_preflight_checks() {
    let objs = objects(&every_opt_in("dw", &["shop"])).unwrap();
    let base = rules(&objs, "drainwatch");
    let attach = rules(&objs, ATTACH);
    let nodes = rules(&objs, ATTACH_NODES);
    let ca = rules(&objs, ATTACH_CA);
    let mut checked = 0;
    for trigger in Trigger::ALL {
        for need in needs(trigger, true, true, true) {
            assert!(
                granted(&base, &need),
                "{trigger:?}: {}",
                need.describe("dw")
            );
            checked += 1;
        }
        for kind in [WorkloadKind::Deployment, WorkloadKind::StatefulSet] {
            let (own, target) = attach_needs(trigger, kind, true);
            for need in own {
                assert!(
                    granted(&base, &need),
                    "{trigger:?} own: {}",
                    need.describe("dw")
                );
                checked += 1;
            }
            for need in target {
                let by = if need.namespaced { &attach } else { &nodes };
                assert!(
                    granted(by, &need),
                    "{trigger:?} {kind:?}: {}",
                    need.describe("shop")
                );
                checked += 1;
            }
        }
    }
    for need in client_ca_needs() {
        assert!(granted(&ca, &need), "{}", need.describe("dw"));
        checked += 1;
    }
    for need in ingress_needs() {
        assert!(granted(&attach, &need), "{}", need.describe("traefik"));
        checked += 1;
    }
    // --ingress-managed: the trial's side by the probe's rights and the trial role, the
    // target's by the attach-ingress role.
    let (trial, target) = ingress_managed_needs();
    let (ingress_trial, ingress_target) = (
        [
            base.clone(),
            rules(&objs, "drainwatch-attach-ingress-trial"),
        ]
        .concat(),
        rules(&objs, "drainwatch-attach-ingress"),
    );
    assert_eq!((trial.len(), target.len()), (12, 7));
    for need in trial {
        assert!(granted(&ingress_trial, &need), "{}", need.describe("dw"));
        checked += 1;
    }
    for need in target {
        assert!(granted(&ingress_target, &need), "{}", need.describe("shop"));
        checked += 1;
    }
    assert!(checked > 200, "{checked}");
    // And the check can fail: a right the files do not grant is not granted, nor a role
    // drainwatch may bind another than the one it is given.
    let no = Need::cluster("delete", "nodes");
    assert!(!granted(&nodes, &no) && !granted(&base, &no));
    let other_role = Need {
        name: Some("cluster-admin"),
        ..ingress_managed_needs().1[6].clone()
    };
    assert_eq!(other_role.verb, "bind");
    assert!(!granted(&ingress_target, &other_role));
}
