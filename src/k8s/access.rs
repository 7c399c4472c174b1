//! The permissions preflight: one SelfSubjectAccessReview per verb and resource the trial
//! needs, so a denied permission is named before anything is created.

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::Api;
use kube::api::PostParams;

use super::K8sError;
use crate::evidence::plan::attach::WorkloadKind;
use crate::evidence::trigger::Trigger;

/// One permission: verb on group/resource[/subresource], in a namespace or cluster-wide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    /// API verb.
    pub verb: &'static str,
    /// API group ("" for core).
    pub group: &'static str,
    /// Resource.
    pub resource: &'static str,
    /// Subresource, if any.
    pub subresource: Option<&'static str>,
    /// Whether the permission is checked in the trial's namespace.
    pub namespaced: bool,
    /// The one object it is on (`bind` of one ClusterRole); None: any.
    pub name: Option<&'static str>,
}

impl Need {
    const fn ns(verb: &'static str, group: &'static str, resource: &'static str) -> Self {
        Self {
            verb,
            group,
            resource,
            subresource: None,
            namespaced: true,
            name: None,
        }
    }

    const fn named(
        verb: &'static str,
        group: &'static str,
        resource: &'static str,
        name: &'static str,
    ) -> Self {
        Self {
            name: Some(name),
            ..Self::ns(verb, group, resource)
        }
    }

    const fn sub(
        verb: &'static str,
        resource: &'static str,
        sub: &'static str,
        group: &'static str,
    ) -> Self {
        Self {
            verb,
            group,
            resource,
            subresource: Some(sub),
            namespaced: true,
            name: None,
        }
    }

    /// A cluster-wide permission on a core resource.
    pub const fn cluster(verb: &'static str, resource: &'static str) -> Self {
        Self {
            verb,
            group: "",
            resource,
            subresource: None,
            namespaced: false,
            name: None,
        }
    }

    /// `create pods/eviction (group policy)`, as printed in a denial.
    pub fn describe(&self, ns: &str) -> String {
        let res = match self.subresource {
            Some(s) => format!("{}/{s}", self.resource),
            None => self.resource.to_string(),
        };
        let res = match self.name {
            Some(n) => format!("{res} {n}"),
            None => res,
        };
        let group = if self.group.is_empty() {
            "core"
        } else {
            self.group
        };
        if self.namespaced {
            format!("{} {res} (group {group}) in namespace {ns}", self.verb)
        } else {
            format!("{} {res} (group {group}, cluster-wide)", self.verb)
        }
    }
}

/// What a trial that creates (and removes) its own namespace needs beyond the namespace's
/// contents.
fn namespace_needs() -> [Need; 4] {
    [
        Need::cluster("create", "namespaces"),
        Need::cluster("delete", "namespaces"),
        Need::cluster("get", "namespaces"),
        Need::cluster("watch", "namespaces"),
    ]
}

/// What a trial needs, given its trigger, whether it creates its namespace, uses a client pod
/// and a PodDisruptionBudget. `deploy/rbac.yaml` grants exactly these.
pub fn needs(trigger: Trigger, create_namespace: bool, client_pod: bool, pdb: bool) -> Vec<Need> {
    let mut v = vec![
        Need::cluster("list", "nodes"),
        Need::ns("create", "apps", "deployments"),
        Need::ns("get", "apps", "deployments"),
        Need::ns("delete", "apps", "deployments"),
        Need::ns("create", "", "services"),
        Need::ns("get", "", "services"),
        Need::ns("delete", "", "services"),
        Need::ns("list", "", "pods"),
        Need::ns("watch", "", "pods"),
        Need::ns("delete", "", "pods"),
        Need::ns("deletecollection", "", "pods"),
        Need::sub("get", "pods", "log", ""),
        Need::ns("list", "discovery.k8s.io", "endpointslices"),
        Need::ns("watch", "discovery.k8s.io", "endpointslices"),
    ];
    if create_namespace {
        v.extend(namespace_needs());
    }
    if client_pod {
        v.push(Need::ns("create", "", "pods"));
    }
    if pdb {
        v.push(Need::ns("create", "policy", "poddisruptionbudgets"));
        v.push(Need::ns("get", "policy", "poddisruptionbudgets"));
        v.push(Need::ns("delete", "policy", "poddisruptionbudgets"));
    }
    match trigger {
        Trigger::Evict => v.push(Need::sub("create", "pods", "eviction", "")),
        Trigger::Scale => v.push(Need::sub("patch", "deployments", "scale", "apps")),
        // Deleting the pod is in the list above; the others are not probe triggers.
        Trigger::Delete
        | Trigger::Sigterm
        | Trigger::RolloutRestart
        | Trigger::DrainNode
        | Trigger::Manual => {}
    }
    v
}

/// What an attach trial needs: in drainwatch's own namespace (`own`, the client pod) and in
/// the target's namespace (`target`), given the trigger and the target's kind.
/// `deploy/rbac-attach.yaml` grants the target side and the cluster-wide node rights.
pub fn attach_needs(
    trigger: Trigger,
    kind: WorkloadKind,
    create_namespace: bool,
) -> (Vec<Need>, Vec<Need>) {
    let mut own = vec![
        Need::cluster("list", "nodes"),
        Need::ns("create", "", "pods"),
        Need::ns("delete", "", "pods"),
        Need::ns("deletecollection", "", "pods"),
        Need::ns("list", "", "pods"),
        Need::ns("watch", "", "pods"),
        Need::sub("get", "pods", "log", ""),
    ];
    if create_namespace {
        own.extend(namespace_needs());
    }
    let workloads = match kind {
        WorkloadKind::Deployment => "deployments",
        WorkloadKind::StatefulSet => "statefulsets",
    };
    let mut target = vec![
        Need::ns("get", "apps", workloads),
        Need::ns("list", "apps", workloads),
        Need::ns("watch", "apps", workloads),
        Need::ns("list", "", "pods"),
        Need::ns("watch", "", "pods"),
        Need::ns("list", "", "services"),
        Need::ns("list", "discovery.k8s.io", "endpointslices"),
        Need::ns("watch", "discovery.k8s.io", "endpointslices"),
    ];
    match trigger {
        Trigger::Delete => target.push(Need::ns("delete", "", "pods")),
        Trigger::Evict => target.push(Need::sub("create", "pods", "eviction", "")),
        Trigger::Scale => {
            target.push(Need::sub("patch", workloads, "scale", "apps"));
            target.push(Need::ns("patch", "", "pods"));
        }
        Trigger::RolloutRestart => target.push(Need::ns("patch", "apps", workloads)),
        Trigger::DrainNode => {
            target.push(Need::sub("create", "pods", "eviction", ""));
            target.push(Need::cluster("get", "nodes"));
            target.push(Need::cluster("patch", "nodes"));
        }
        // Not attach triggers: the plan refuses them with --target.
        Trigger::Sigterm | Trigger::Manual => {}
    }
    (own, target)
}

/// What `run --target --ingress-service` needs in the controller's namespace: its Service and
/// pods found, their log followed (deploy/rbac-attach.yaml, bound there too).
pub fn ingress_needs() -> Vec<Need> {
    vec![
        Need::ns("list", "", "services"),
        Need::ns("list", "", "pods"),
        Need::sub("get", "pods", "log", ""),
    ]
}

/// What `run --target --ingress-managed` adds: in drainwatch's own namespace (the trial's,
/// `own`) the controller it deploys, reached through the pod proxy; in the target's namespace
/// (`target`) the Ingress and the RoleBinding to [`crate::k8s::ingress_managed::TRAEFIK_ROLE`],
/// which drainwatch may bind but does not hold (deploy/rbac.yaml, deploy/rbac-attach.yaml).
pub fn ingress_managed_needs() -> (Vec<Need>, Vec<Need>) {
    let mut own = Vec::new();
    for (group, resource) in [
        ("", "serviceaccounts"),
        ("apps", "deployments"),
        ("", "services"),
    ] {
        for verb in ["create", "get", "delete"] {
            own.push(Need::ns(verb, group, resource));
        }
    }
    // Located as a user's controller is: its Service and pods listed, its API proxied.
    own.push(Need::ns("list", "", "services"));
    own.push(Need::ns("list", "", "pods"));
    own.push(Need::sub("get", "pods", "proxy", ""));
    let mut target = Vec::new();
    for (group, resource) in [
        ("networking.k8s.io", "ingresses"),
        ("rbac.authorization.k8s.io", "rolebindings"),
    ] {
        for verb in ["create", "get", "delete"] {
            target.push(Need::ns(verb, group, resource));
        }
    }
    target.push(Need::named(
        "bind",
        "rbac.authorization.k8s.io",
        "clusterroles",
        crate::k8s::ingress_managed::TRAEFIK_ROLE,
    ));
    (own, target)
}

/// What `run --target --tls --ca-file` adds in drainwatch's own namespace: the CA ConfigMap
/// of the trial, created, read back and deleted at teardown (deploy/rbac-attach.yaml).
pub fn client_ca_needs() -> Vec<Need> {
    vec![
        Need::ns("create", "", "configmaps"),
        Need::ns("get", "", "configmaps"),
        Need::ns("delete", "", "configmaps"),
    ]
}

/// Asks the API server about each need; returns the denied ones, described.
pub async fn denied(
    client: &kube::Client,
    ns: &str,
    needs: &[Need],
) -> Result<Vec<String>, K8sError> {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let mut out = Vec::new();
    for n in needs {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(n.verb.into()),
                    group: Some(n.group.into()),
                    resource: Some(n.resource.into()),
                    subresource: n.subresource.map(str::to_string),
                    namespace: n.namespaced.then(|| ns.to_string()),
                    name: n.name.map(str::to_string),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(K8sError::api("create a SelfSubjectAccessReview"))?;
        if !answer.status.is_some_and(|s| s.allowed) {
            out.push(n.describe(ns));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_needs_follow_the_trigger() {
        let (own, target) = attach_needs(Trigger::DrainNode, WorkloadKind::Deployment, true);
        assert!(own.iter().any(|n| n.resource == "namespaces"));
        assert!(
            target
                .iter()
                .any(|n| n.resource == "nodes" && n.verb == "patch" && !n.namespaced)
        );
        assert!(target.iter().any(|n| n.subresource == Some("eviction")));
        let (_, t) = attach_needs(Trigger::RolloutRestart, WorkloadKind::StatefulSet, false);
        let p = t.iter().find(|n| n.verb == "patch").unwrap();
        assert_eq!(
            p.describe("shop"),
            "patch statefulsets (group apps) in namespace shop"
        );
        let (_, t) = attach_needs(Trigger::Scale, WorkloadKind::Deployment, false);
        assert!(t.iter().any(|n| n.subresource == Some("scale")));
        assert!(t.iter().any(|n| n.resource == "pods" && n.verb == "patch"));
    }

    #[test]
    fn needs_follow_the_trial() {
        let d = needs(Trigger::Delete, true, true, false);
        assert!(
            d.iter()
                .any(|n| n.resource == "namespaces" && n.verb == "create")
        );
        assert!(!d.iter().any(|n| n.subresource == Some("eviction")));
        let e = needs(Trigger::Evict, false, false, true);
        assert!(!e.iter().any(|n| n.resource == "namespaces"));
        let ev = e
            .iter()
            .find(|n| n.subresource == Some("eviction"))
            .unwrap();
        assert_eq!(
            ev.describe("ns1"),
            "create pods/eviction (group core) in namespace ns1"
        );
        assert!(
            needs(Trigger::Scale, false, false, false)
                .iter()
                .any(|n| n.subresource == Some("scale") && n.verb == "patch")
        );
    }
}
