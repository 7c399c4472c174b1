//! `drainwatch cleanup`: removes what runs left on the cluster (a killed or cancelled run
//! cannot tear down) and says what it removed. What it removes is explicit: one run's objects
//! (`--run ID`, by the `drainwatch.dev/run` mark), marked objects older than a bound
//! (`--older-than`, the leftovers of killed runs, safe beside runs in progress), or everything
//! `app.kubernetes.io/managed-by: drainwatch` (`--all`, also objects of versions before the
//! mark).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{DeleteParams, ListParams, Preconditions};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::{K8sError, labels, manifests};
use crate::console;
use crate::evidence::journal::{Change, CreatedKind};

/// Which objects a cleanup removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The objects marked with this run id.
    Run(String),
    /// Objects marked with any run id and created more than `seconds` before `now_unix`.
    OlderThan {
        /// The age bound.
        seconds: i64,
        /// The wall clock now, Unix seconds (the caller reads the clock).
        now_unix: i64,
    },
    /// Everything managed by drainwatch, marked or not.
    All,
}

impl Scope {
    /// The label selector the list calls use.
    fn selector(&self) -> String {
        match self {
            Self::Run(id) => manifests::run_selector(id),
            Self::OlderThan { .. } => format!("{},{}", manifests::managed_selector(), labels::RUN),
            Self::All => manifests::managed_selector(),
        }
    }

    /// Whether an object with these labels, created at `created_unix` (None: unknown), is in
    /// scope. The list's selector already narrows; this is the whole rule, so it is tested
    /// without a cluster.
    pub fn selects(
        &self,
        object_labels: Option<&BTreeMap<String, String>>,
        created_unix: Option<i64>,
    ) -> bool {
        let l = |k: &str| object_labels.and_then(|m| m.get(k));
        if l(labels::MANAGED_BY).map(String::as_str) != Some(labels::MANAGER) {
            return false;
        }
        match self {
            Self::Run(id) => l(labels::RUN) == Some(id),
            // An object whose age is unknown is not known to be old: it stays.
            Self::OlderThan { seconds, now_unix } => {
                l(labels::RUN).is_some() && created_unix.is_some_and(|c| now_unix - c > *seconds)
            }
            Self::All => true,
        }
    }

    /// What the scope is, for messages.
    pub fn describe(&self) -> String {
        match self {
            Self::Run(id) => format!("labelled {}={id}", labels::RUN),
            Self::OlderThan { seconds, .. } => {
                format!("labelled {} and older than {seconds}s", labels::RUN)
            }
            Self::All => format!("labelled {}={}", labels::MANAGED_BY, labels::MANAGER),
        }
    }
}

fn created_unix<K: Resource>(o: &K) -> Option<i64> {
    o.meta()
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.as_second())
}

/// A background deletion of exactly this object, by uid: one re-created under the name
/// meanwhile is not hit. `grace_zero`: without the pods' grace period.
pub fn by_uid(uid: Option<String>, grace_zero: bool) -> DeleteParams {
    let mut p = DeleteParams::background();
    if grace_zero {
        p = p.grace_period(0);
    }
    p.preconditions = Some(Preconditions {
        uid,
        resource_version: None,
    });
    p
}

/// Whether a deletion failed only because the object is already gone (404) or is another
/// object now (409 on the uid precondition).
pub fn already_gone(e: &kube::Error) -> bool {
    matches!(super::status_code(e), Some(404 | 409))
}

async fn sweep<K>(
    client: &kube::Client,
    scope: &Scope,
    kind: &str,
    skip_ns: &[String],
    out: &mut Vec<String>,
) -> Result<(), K8sError>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let all: Api<K> = Api::all(client.clone());
    let sel = ListParams::default().labels(&scope.selector());
    let list = all
        .list(&sel)
        .await
        .map_err(K8sError::api(format!("list {kind}s {}", scope.describe())))?;
    for o in list.items {
        let ns = o.namespace().unwrap_or_default();
        if skip_ns.contains(&ns) || !scope.selects(o.meta().labels.as_ref(), created_unix(&o)) {
            continue;
        }
        let name = o.name_any();
        match Api::<K>::namespaced(client.clone(), &ns)
            .delete(&name, &by_uid(o.uid(), true))
            .await
        {
            Ok(_) => out.push(format!("{kind} {ns}/{name}")),
            Err(e) if already_gone(&e) => {}
            Err(e) => return Err(K8sError::api(format!("delete {kind} {ns}/{name}"))(e)),
        }
    }
    Ok(())
}

/// [`sweep`] where listing `kind` in every namespace is an opt-in right (deploy/rbac-attach.yaml
/// grants configmaps and serviceaccounts so, ingresses and rolebindings only in the namespaces
/// it binds): without it the sweep is skipped with a note naming the selector.
async fn sweep_opt_in<K>(
    client: &kube::Client,
    scope: &Scope,
    kind: &str,
    skip_ns: &[String],
    out: &mut Vec<String>,
) -> Result<(), K8sError>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    match sweep::<K>(client, scope, kind, skip_ns, out).await {
        Err(K8sError::Api { source, .. }) if super::status_code(&source) == Some(403) => {
            console::note!(
                "drainwatch: note: {kind}s not swept: listing them in every namespace is forbidden to these credentials (kubectl get {kind}s -A -l {} finds them)",
                scope.selector()
            );
            Ok(())
        }
        r => r,
    }
}

/// Deletes every namespace in `scope` (with its contents) and every object in scope
/// elsewhere; returns one line per object removed.
pub async fn cleanup(client: &kube::Client, scope: &Scope) -> Result<Vec<String>, K8sError> {
    let mut out = Vec::new();
    let nss: Api<Namespace> = Api::all(client.clone());
    let list = nss
        .list(&ListParams::default().labels(&scope.selector()))
        .await
        .map_err(K8sError::api(format!(
            "list namespaces {}",
            scope.describe()
        )))?;
    let mut deleted = Vec::new();
    for n in list.items {
        if !scope.selects(n.meta().labels.as_ref(), created_unix(&n)) {
            continue;
        }
        let name = n.name_any();
        if n.metadata.deletion_timestamp.is_none() {
            match nss.delete(&name, &by_uid(n.uid(), false)).await {
                Ok(_) => out.push(format!("namespace {name} (and everything in it)")),
                Err(e) if already_gone(&e) => {}
                Err(e) => return Err(K8sError::api(format!("delete namespace {name}"))(e)),
            }
        } else {
            out.push(format!("namespace {name} (already terminating)"));
        }
        deleted.push(name);
    }
    sweep::<Pod>(client, scope, "pod", &deleted, &mut out).await?;
    sweep::<Deployment>(client, scope, "deployment", &deleted, &mut out).await?;
    sweep::<Service>(client, scope, "service", &deleted, &mut out).await?;
    sweep::<PodDisruptionBudget>(client, scope, "poddisruptionbudget", &deleted, &mut out).await?;
    // Objects whose list is an opt-in right (deploy/rbac-attach.yaml), so a sweep without it
    // is skipped and said, not failed: the CA ConfigMap of `run --target --tls --ca-file` (in
    // a shared --namespace; a trial's own namespace took it with it), and what
    // `--ingress-managed` put beside the target's Service (the Ingress and the controller's
    // RoleBinding) or in a shared --namespace (its ServiceAccount).
    sweep_opt_in::<ConfigMap>(client, scope, "configmap", &deleted, &mut out).await?;
    sweep_opt_in::<Ingress>(client, scope, "ingress", &deleted, &mut out).await?;
    sweep_opt_in::<RoleBinding>(client, scope, "rolebinding", &deleted, &mut out).await?;
    sweep_opt_in::<ServiceAccount>(client, scope, "serviceaccount", &deleted, &mut out).await?;
    Ok(out)
}

/// Undoes one change of run `run` replayed from its restore journal, idempotently: the
/// namespace it created is deleted (only while it carries the run's mark), the workload and
/// node changes restored (`trigger::restore::change`). Returns what was done.
pub async fn undo_change(client: &kube::Client, run: &str, c: &Change) -> Result<String, K8sError> {
    if let Change::ObjectCreated {
        kind,
        namespace,
        name,
    } = c
    {
        return Ok(
            match delete_created(client, *kind, namespace, name, run).await? {
                Some(done) => done,
                None => format!("{} is gone already", c.describe()),
            },
        );
    }
    let Change::NamespaceCreated { namespace: ns } = c else {
        return super::trigger::restore::change(client, c).await;
    };
    let nss: Api<Namespace> = Api::all(client.clone());
    Ok(match delete_marked_namespace(&nss, ns, run).await? {
        NamespaceDeletion::Gone => format!("namespace {ns} is gone already"),
        NamespaceDeletion::Deleting { .. } => format!("namespace {ns} is being deleted already"),
        NamespaceDeletion::Deleted { .. } => {
            format!("namespace {ns} deleted, with everything in it")
        }
    })
}

/// [`delete_marked`] for a journalled [`CreatedKind`].
pub async fn delete_created(
    client: &kube::Client,
    kind: CreatedKind,
    ns: &str,
    name: &str,
    run: &str,
) -> Result<Option<String>, K8sError> {
    match kind {
        CreatedKind::Ingress => {
            delete_marked::<Ingress>(client, kind.as_str(), ns, name, run).await
        }
        CreatedKind::RoleBinding => {
            delete_marked::<RoleBinding>(client, kind.as_str(), ns, name, run).await
        }
    }
}

/// Deletes the `kind` object `ns/name` when it carries run `run`'s mark, by its uid. Returns
/// what was done (deleted, or left as not this run's), None when it is gone already.
pub async fn delete_marked<K>(
    client: &kube::Client,
    kind: &str,
    ns: &str,
    name: &str,
    run: &str,
) -> Result<Option<String>, K8sError>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let what = format!("{kind} {ns}/{name}");
    let api = Api::<K>::namespaced(client.clone(), ns);
    let Some(o) = api
        .get_opt(name)
        .await
        .map_err(K8sError::api(format!("get {what}")))?
    else {
        return Ok(None);
    };
    if !manifests::marked_by(o.meta().labels.as_ref(), run) {
        return Ok(Some(format!("{what} left: not this run's")));
    }
    match api.delete(name, &by_uid(o.uid(), false)).await {
        Ok(_) => Ok(Some(format!("{what} deleted"))),
        Err(e) if already_gone(&e) => Ok(None),
        Err(e) => Err(K8sError::api(format!("delete {what}"))(e)),
    }
}

/// What [`delete_marked_namespace`] found and did.
pub enum NamespaceDeletion {
    /// Absent, or replaced by another of the same name (a 409 on the uid precondition).
    Gone,
    /// Being deleted already (by someone else, or an earlier attempt); nothing sent.
    Deleting {
        /// Its uid, to wait on.
        uid: Option<String>,
    },
    /// Deletion sent now.
    Deleted {
        /// Its uid, to wait on.
        uid: Option<String>,
    },
}

/// Deletes namespace `ns` only while it carries run `run`'s mark (the one place both the
/// trial's teardown and `cleanup`'s journal replay decide that): a namespace without the mark
/// is [`K8sError::NotOurs`] and left alone. Does not wait for the deletion to finish.
pub async fn delete_marked_namespace(
    nss: &Api<Namespace>,
    ns: &str,
    run: &str,
) -> Result<NamespaceDeletion, K8sError> {
    let Some(n) = nss
        .get_opt(ns)
        .await
        .map_err(K8sError::api(format!("get namespace {ns}")))?
    else {
        return Ok(NamespaceDeletion::Gone);
    };
    if !manifests::marked_by(n.metadata.labels.as_ref(), run) {
        // This run created it, but the mark is gone: someone relabelled it; leave it.
        return Err(K8sError::NotOurs(format!("namespace {ns}")));
    }
    let uid = n.uid();
    if n.metadata.deletion_timestamp.is_some() {
        return Ok(NamespaceDeletion::Deleting { uid });
    }
    match nss.delete(ns, &by_uid(uid.clone(), false)).await {
        Ok(_) => Ok(NamespaceDeletion::Deleted { uid }),
        Err(e) if already_gone(&e) => Ok(NamespaceDeletion::Gone),
        Err(e) => Err(K8sError::api(format!("delete namespace {ns}"))(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "20261201-124315-0a1b2c3d";
    const OTHER: &str = "20261201-124315-ffff0000";

    fn marked(run: Option<&str>) -> BTreeMap<String, String> {
        let mut m = BTreeMap::from([(labels::MANAGED_BY.to_string(), labels::MANAGER.to_string())]);
        if let Some(r) = run {
            m.insert(labels::RUN.to_string(), r.to_string());
        }
        m
    }

    #[test]
    fn a_run_selects_only_its_own_marked_objects() {
        let s = Scope::Run(RUN.into());
        assert_eq!(
            s.selector(),
            format!("app.kubernetes.io/managed-by=drainwatch,drainwatch.dev/run={RUN}")
        );
        assert!(s.selects(Some(&marked(Some(RUN))), Some(0)));
        assert!(!s.selects(Some(&marked(Some(OTHER))), Some(0)));
        assert!(
            !s.selects(Some(&marked(None)), Some(0)),
            "unmarked: not this run's"
        );
        assert!(!s.selects(None, Some(0)));
        let mut foreign = marked(Some(RUN));
        foreign.remove(labels::MANAGED_BY);
        assert!(
            !s.selects(Some(&foreign), Some(0)),
            "not managed by drainwatch"
        );
    }

    #[test]
    fn older_than_spares_young_unmarked_and_undated_objects() {
        let s = Scope::OlderThan {
            seconds: 1800,
            now_unix: 10_000,
        };
        assert_eq!(
            s.selector(),
            "app.kubernetes.io/managed-by=drainwatch,drainwatch.dev/run"
        );
        assert!(s.selects(Some(&marked(Some(RUN))), Some(10_000 - 1801)));
        assert!(
            !s.selects(Some(&marked(Some(RUN))), Some(10_000 - 1800)),
            "exactly the bound is not older"
        );
        assert!(
            !s.selects(Some(&marked(Some(OTHER))), Some(9_999)),
            "a run in progress"
        );
        assert!(
            !s.selects(Some(&marked(None)), Some(0)),
            "unmarked: only --all"
        );
        assert!(!s.selects(Some(&marked(Some(RUN))), None), "age unknown");
    }

    #[test]
    fn all_selects_every_managed_object() {
        let s = Scope::All;
        assert_eq!(s.selector(), "app.kubernetes.io/managed-by=drainwatch");
        assert!(s.selects(Some(&marked(None)), None));
        assert!(s.selects(Some(&marked(Some(OTHER))), Some(0)));
        assert!(!s.selects(Some(&BTreeMap::new()), None));
    }
}
