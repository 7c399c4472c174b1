//! `drainwatch rbac`: the shipped RBAC (`deploy/rbac.yaml`, `deploy/rbac-attach.yaml`) rendered
//! for the namespaces a user chooses. The two files stay the one statement of what drainwatch
//! may do (each rule commented with what it is for, and proven on the cluster by the e2e tests);
//! this module reads them as typed objects and only moves them: the ServiceAccount's namespace,
//! one attach RoleBinding per target namespace, and the opt-in node and CA rights left out
//! unless asked for. Rendering is pure: no cluster is read.

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

use super::access::Need;

/// `deploy/rbac.yaml`: the identity, its namespace, the probe trial's rights and the
/// environment record's.
pub const RBAC_YAML: &str = include_str!("../../deploy/rbac.yaml");
/// `deploy/rbac-attach.yaml`: the opt-in rights to attach to a workload.
pub const RBAC_ATTACH_YAML: &str = include_str!("../../deploy/rbac-attach.yaml");

/// The namespace and ServiceAccount the shipped files name.
pub const DEFAULT_NAMESPACE: &str = "drainwatch-system";
const SERVICE_ACCOUNT: &str = "drainwatch";
/// The attach ClusterRole, bound once per target namespace.
const ATTACH: &str = "drainwatch-attach";
/// The cluster-wide node rights of `--trigger drain-node`.
const ATTACH_NODES: &str = "drainwatch-attach-nodes";
/// The CA ConfigMap rights of `--tls --ca-file`.
const ATTACH_CA: &str = "drainwatch-attach-ca";
/// What `--ingress-managed` needs in the target's namespace, bound once per target namespace.
const ATTACH_INGRESS: &str = "drainwatch-attach-ingress";
/// What `--ingress-managed` needs in the trial's namespace, and the role its controller reads
/// the target's namespace with.
const INGRESS_OBJECTS: [&str; 2] = [
    "drainwatch-attach-ingress-trial",
    "drainwatch-ingress-traefik",
];

/// What to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RbacRequest {
    /// Where the ServiceAccount lives (created here).
    pub namespace: String,
    /// The namespaces of the workloads to attach to; empty renders the probe rights only.
    pub targets: Vec<String>,
    /// Grant the cluster-wide node rights `--trigger drain-node` needs (cordon, uncordon).
    pub drain_node: bool,
    /// Grant the CA ConfigMap rights `--tls --ca-file` needs.
    pub tls_ca: bool,
    /// Grant what `--ingress-managed` needs, and the role its controller reads with.
    pub ingress_managed: bool,
}

/// Why the RBAC could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RbacError {
    /// A shipped file is not the RBAC this module knows (a build-time defect; the unit tests
    /// read both files).
    #[error("the shipped RBAC does not parse: {0}")]
    Parse(#[from] serde_norway::Error),
    /// A shipped object this module moves is missing or of another kind.
    #[error("the shipped RBAC has no {0}")]
    Missing(&'static str),
    /// A namespace that Kubernetes would refuse, named before anything is printed.
    #[error(
        "{flag} {value:?} is not a namespace name (lowercase letters, digits and '-', at most 63, starting and ending with a letter or digit)"
    )]
    BadNamespace {
        /// The flag that gave it.
        flag: &'static str,
        /// The value.
        value: String,
    },
    /// `--drain-node` or `--tls-ca` without a target namespace: they extend the attach rights.
    #[error("{0} extends the attach rights: give the workload's namespace with --target-namespace")]
    NeedsTarget(&'static str),
}

/// One object of the shipped files.
#[derive(Debug, Clone, PartialEq)]
pub enum Object {
    /// The ServiceAccount's namespace.
    Namespace(Namespace),
    /// drainwatch's identity.
    ServiceAccount(ServiceAccount),
    /// Rights, cluster-wide or bound in a namespace.
    ClusterRole(ClusterRole),
    /// A cluster-wide grant.
    ClusterRoleBinding(ClusterRoleBinding),
    /// Rights in one namespace.
    Role(Role),
    /// A grant in one namespace.
    RoleBinding(RoleBinding),
}

impl Object {
    fn name(&self) -> Option<&str> {
        match self {
            Self::Namespace(o) => o.metadata.name.as_deref(),
            Self::ServiceAccount(o) => o.metadata.name.as_deref(),
            Self::ClusterRole(o) => o.metadata.name.as_deref(),
            Self::ClusterRoleBinding(o) => o.metadata.name.as_deref(),
            Self::Role(o) => o.metadata.name.as_deref(),
            Self::RoleBinding(o) => o.metadata.name.as_deref(),
        }
    }

    /// Reads one document, by its kind (k8s-openapi's types check apiVersion and kind).
    fn from_doc(v: serde_norway::Value) -> Result<Self, RbacError> {
        let kind = v.get("kind").and_then(serde_norway::Value::as_str);
        let o = match kind {
            Some("Namespace") => Self::Namespace(serde_norway::from_value(v)?),
            Some("ServiceAccount") => Self::ServiceAccount(serde_norway::from_value(v)?),
            Some("ClusterRole") => Self::ClusterRole(serde_norway::from_value(v)?),
            Some("ClusterRoleBinding") => Self::ClusterRoleBinding(serde_norway::from_value(v)?),
            Some("Role") => Self::Role(serde_norway::from_value(v)?),
            Some("RoleBinding") => Self::RoleBinding(serde_norway::from_value(v)?),
            _ => return Err(RbacError::Missing("known kind on every object")),
        };
        Ok(o)
    }

    /// The object as YAML, apiVersion and kind first.
    fn to_yaml(&self) -> Result<String, serde_norway::Error> {
        match self {
            Self::Namespace(o) => serde_norway::to_string(o),
            Self::ServiceAccount(o) => serde_norway::to_string(o),
            Self::ClusterRole(o) => serde_norway::to_string(o),
            Self::ClusterRoleBinding(o) => serde_norway::to_string(o),
            Self::Role(o) => serde_norway::to_string(o),
            Self::RoleBinding(o) => serde_norway::to_string(o),
        }
    }

    /// The subjects a binding grants to; none for the other kinds.
    fn subjects_mut(&mut self) -> &mut [k8s_openapi::api::rbac::v1::Subject] {
        let s = match self {
            Self::ClusterRoleBinding(b) => b.subjects.as_mut(),
            Self::RoleBinding(b) => b.subjects.as_mut(),
            _ => None,
        };
        s.map_or(&mut [], Vec::as_mut_slice)
    }
}

/// Reads a multi-document YAML file of RBAC objects.
pub fn parse(yaml: &str) -> Result<Vec<Object>, RbacError> {
    let mut out = Vec::new();
    for doc in serde_norway::Deserializer::from_str(yaml) {
        out.push(Object::from_doc(serde_norway::Value::deserialize(doc)?)?);
    }
    Ok(out)
}

/// The objects for `req`, in the order `kubectl apply` needs them (the namespace first).
pub fn objects(req: &RbacRequest) -> Result<Vec<Object>, RbacError> {
    check_namespace("--namespace", &req.namespace)?;
    for t in &req.targets {
        check_namespace("--target-namespace", t)?;
    }
    if req.targets.is_empty() {
        if req.drain_node {
            return Err(RbacError::NeedsTarget("--drain-node"));
        }
        if req.tls_ca {
            return Err(RbacError::NeedsTarget("--tls-ca"));
        }
        if req.ingress_managed {
            return Err(RbacError::NeedsTarget("--ingress-managed"));
        }
    }
    let mut out = parse(RBAC_YAML)?;
    if !req.targets.is_empty() {
        out.extend(attach_objects(req)?);
    }
    for o in &mut out {
        home(o, &req.namespace);
    }
    Ok(out)
}

/// The attach file's objects for `req`: the ClusterRole once, its RoleBinding once per target
/// namespace, the node and CA rights only when asked for.
fn attach_objects(req: &RbacRequest) -> Result<Vec<Object>, RbacError> {
    let all = parse(RBAC_ATTACH_YAML)?;
    let mut out = Vec::new();
    let (mut binding, mut ingress_binding) = (None, None);
    for o in all {
        let name = o.name().unwrap_or_default();
        let wanted = match name {
            ATTACH_NODES => req.drain_node,
            ATTACH_CA => req.tls_ca,
            ATTACH_INGRESS => req.ingress_managed,
            n if INGRESS_OBJECTS.contains(&n) => req.ingress_managed,
            _ => true,
        };
        match o {
            Object::RoleBinding(b) if name == ATTACH => binding = Some(b),
            Object::RoleBinding(b) if name == ATTACH_INGRESS => ingress_binding = Some(b),
            o if wanted => out.push(o),
            _ => {}
        }
    }
    let binding = binding.ok_or(RbacError::Missing("RoleBinding drainwatch-attach"))?;
    let ingress_binding =
        ingress_binding.ok_or(RbacError::Missing("RoleBinding drainwatch-attach-ingress"))?;
    for t in &req.targets {
        let mut b = binding.clone();
        b.metadata.namespace = Some(t.clone());
        out.push(Object::RoleBinding(b));
        if req.ingress_managed {
            let mut b = ingress_binding.clone();
            b.metadata.namespace = Some(t.clone());
            out.push(Object::RoleBinding(b));
        }
    }
    Ok(out)
}

/// Moves an object's references to drainwatch's own namespace: the Namespace itself, the
/// ServiceAccount, and every binding's ServiceAccount subject. Objects in other namespaces
/// (kube-system's environment Role, the target's RoleBindings) stay where they are.
///
/// Outside the default namespace, every binding that does not live in `ns` (the
/// ClusterRoleBindings, kube-system's, the targets') takes the namespace into its name: two
/// identities rendered for two namespaces would otherwise share one binding, and applying the
/// second would take the rights from the first. The roles are the same for both and shared.
fn home(o: &mut Object, ns: &str) {
    match o {
        Object::Namespace(n) if n.metadata.name.as_deref() == Some(DEFAULT_NAMESPACE) => {
            n.metadata.name = Some(ns.to_string());
        }
        Object::ServiceAccount(sa) => sa.metadata.namespace = Some(ns.to_string()),
        Object::ClusterRoleBinding(b) if ns != DEFAULT_NAMESPACE => own_name(&mut b.metadata, ns),
        Object::RoleBinding(b)
            if ns != DEFAULT_NAMESPACE && b.metadata.namespace.as_deref() != Some(ns) =>
        {
            own_name(&mut b.metadata, ns)
        }
        _ => {}
    }
    for s in o.subjects_mut() {
        if s.kind == "ServiceAccount" && s.name == SERVICE_ACCOUNT {
            s.namespace = Some(ns.to_string());
        }
    }
}

/// `drainwatch-attach` bound for the identity in `ci-gate` is `drainwatch-attach-ci-gate`.
fn own_name(meta: &mut ObjectMeta, ns: &str) {
    if let Some(name) = &meta.name {
        meta.name = Some(format!("{name}-{ns}"));
    }
}

/// A DNS-1123 label, as Kubernetes requires of a namespace name.
fn check_namespace(flag: &'static str, value: &str) -> Result<(), RbacError> {
    let ok = !value.is_empty()
        && value.len() <= 63
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(RbacError::BadNamespace {
            flag,
            value: value.to_string(),
        })
    }
}

/// The objects as one YAML stream for `kubectl apply -f -`.
pub fn render(req: &RbacRequest) -> Result<String, RbacError> {
    let mut out = String::new();
    for o in objects(req)? {
        out.push_str("---\n");
        out.push_str(&o.to_yaml()?);
    }
    Ok(out)
}

/// Whether `rule` allows `need` (its verb on its group, resource and subresource; `*` counts;
/// a rule limited to some objects by name allows only a need on one of them).
pub fn grants(rule: &PolicyRule, need: &Need) -> bool {
    let has = |list: Option<&Vec<String>>, want: &str| {
        list.is_some_and(|l| l.iter().any(|x| x == want || x == "*"))
    };
    let resource = match need.subresource {
        Some(sub) => format!("{}/{sub}", need.resource),
        None => need.resource.to_string(),
    };
    rule.verbs.iter().any(|v| v == need.verb || v == "*")
        && has(rule.api_groups.as_ref(), need.group)
        && has(rule.resources.as_ref(), &resource)
        && match (
            rule.resource_names.as_ref().filter(|n| !n.is_empty()),
            need.name,
        ) {
            (None, _) => true,
            (Some(names), Some(n)) => names.iter().any(|x| x == n),
            (Some(_), None) => false,
        }
}

#[cfg(test)]
mod tests;
