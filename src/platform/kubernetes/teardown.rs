//! Teardown: the trial's objects go, the namespace last, and the call returns only once the
//! namespace is gone (a trial that leaves a terminating namespace behind would race the next).
//!
//! Only what this run created is deleted: every object is checked for the run's mark
//! (`drainwatch.dev/run`) and deleted with its uid as a precondition, pods by the run's and
//! trial's selector, and the namespace only when this run's create call made it. A parallel
//! run's objects of the same name (in a shared `--namespace`) are left, and named.

use std::fmt::Debug;
use std::time::Duration;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::{TrialMode, TrialState, disrupt};
use crate::evidence::event::EventName;
use crate::evidence::journal::Change;
use crate::k8s::cleanup::{NamespaceDeletion, already_gone, by_uid, delete_marked_namespace};
use crate::k8s::client::ClusterAccess;
use crate::k8s::{K8sError, PROBE_NAME, manifests};
use crate::platform::PlatformError;
use crate::recorder::Recorder;

/// Ends the trial: its host children stopped, its watches and log followers stopped first (so
/// teardown's own deletions are not recorded as the trial's), the user's workload restored as
/// found, then what the trial created deleted.
pub(super) async fn trial(
    mut st: TrialState,
    access: &ClusterAccess,
    wait: Duration,
    rec: &Recorder,
) -> Result<(), PlatformError> {
    let shards = match &mut st.mode {
        TrialMode::Probe(p) => p.shards.take(),
        TrialMode::Attach(_) => None,
    };
    let clients = match shards {
        Some(s) => s.teardown(rec).await,
        None => Ok(()),
    };
    // The client's window has closed: the ingress's counters after its last request, while
    // the access log is still followed.
    if let Some(a) = st.attach()
        && let Some(located) = &a.res.ingress
    {
        super::attach::ingress::after_last_request(
            &access.client,
            located,
            rec,
            a.ingress_seen.as_ref(),
        )
        .await;
    }
    st.cancel.cancel();
    for t in &st.tasks {
        t.abort();
    }
    let probe_log = st.probe().and_then(|p| p.probe_log.as_ref());
    for f in probe_log.into_iter().chain(&st.client_logs) {
        f.task.abort();
    }
    // The user's workload first: it is what must be left as found.
    let restored = match st.attach() {
        Some(a) => disrupt::restore(&access.client, a, rec).await,
        None => Ok(()),
    };
    // A managed ingress's Ingress and RoleBinding are in the target's namespace: they go
    // before the trial's namespace, which takes the controller with it.
    let managed = match st.attach().and_then(|a| a.managed_ingress.as_ref()) {
        Some(spec) => {
            let r = super::attach::managed::remove(&access.client, spec, st.owns_ns).await;
            if r.is_ok() {
                for c in super::attach::managed::target_side(spec) {
                    rec.restored_change(&c, "deleted at teardown");
                }
            }
            r
        }
        None => Ok(Vec::new()),
    };
    // The trial's own objects go even when the managed ingress's could not; the first error is
    // the one reported (the journal keeps what is left for `cleanup --run`).
    let own = objects(&access.client, &st, wait).await;
    let namespace_gone = own.is_ok();
    let removed = own.and_then(|what| {
        managed.map(|gone| {
            if gone.is_empty() {
                what
            } else {
                format!("{what}; managed ingress: {}", gone.join(", "))
            }
        })
    });
    if namespace_gone && st.owns_ns {
        rec.restored_change(
            &Change::NamespaceCreated {
                namespace: st.ns.clone(),
            },
            "deleted at teardown, with everything in it",
        );
    }
    let result = match (removed, restored) {
        (Ok(what), Ok(())) => {
            rec.orchestrator(EventName::WorkloadDeleted, what);
            Ok(())
        }
        (Ok(what), Err(restore)) => {
            rec.orchestrator(EventName::WorkloadDeleted, what);
            Err(PlatformError::Restore(restore))
        }
        (Err(source), restored) => Err(PlatformError::Remove {
            run: st.run.clone(),
            restored: restored.err().map(Box::new),
            source: Box::new(source),
        }),
    };
    result.and(clients)
}

/// Deletes what the trial created; returns what was removed (and what was left as not this
/// run's).
pub(super) async fn objects(
    client: &kube::Client,
    st: &TrialState,
    wait: Duration,
) -> Result<String, K8sError> {
    let ns = &st.ns;
    let now = DeleteParams::background().grace_period(0);
    let mut left = Vec::new();
    // An attach trial deployed no probe: only its client pod (and namespace) are drainwatch's.
    let probe = st.probe().is_some();
    if probe {
        let d = Api::<Deployment>::namespaced(client.clone(), ns);
        marked(&d, PROBE_NAME, &st.run, "deployment", &mut left).await?;
    }
    // The trial is over: its pods need no grace, and a namespace waits for every pod's.
    gone(
        Api::<Pod>::namespaced(client.clone(), ns)
            .delete_collection(
                &now,
                &ListParams::default().labels(&manifests::owned_selector(&st.run, &st.instance)),
            )
            .await
            .map(|_| ()),
        format!("delete the trial's pods in {ns}"),
    )?;
    if st.owns_ns {
        namespace(client, ns, &st.run, wait).await?;
        return Ok(format!("namespace {ns} and everything in it deleted"));
    }
    if !probe {
        let ca = st.attach().and_then(|a| a.ca_config_map.as_deref());
        if let Some(name) = ca {
            let cms = Api::<ConfigMap>::namespaced(client.clone(), ns);
            marked(&cms, name, &st.run, "configmap", &mut left).await?;
        }
        return Ok(format!(
            "the trial's client pod{} deleted from namespace {ns}{}",
            if ca.is_some() {
                " and CA configmap"
            } else {
                ""
            },
            kept(&st.run, &left)
        ));
    }
    let svc = Api::<Service>::namespaced(client.clone(), ns);
    marked(&svc, PROBE_NAME, &st.run, "service", &mut left).await?;
    let pdb = Api::<PodDisruptionBudget>::namespaced(client.clone(), ns);
    marked(&pdb, PROBE_NAME, &st.run, "poddisruptionbudget", &mut left).await?;
    Ok(format!(
        "the trial's deployment, service, budget and pods deleted from namespace {ns}{}",
        kept(&st.run, &left)
    ))
}

/// What teardown left because it was not this run's, for its message.
fn kept(run: &str, left: &[String]) -> String {
    if left.is_empty() {
        String::new()
    } else {
        format!(
            "; left alone, not marked drainwatch.dev/run={run}: {}",
            left.join(", ")
        )
    }
}

/// Deletes `name` when it carries run `run`'s mark, with its uid as a precondition (so an
/// object re-created under the name in between is not hit); one that is not this run's is
/// named in `left`. An object already gone counts as deleted.
async fn marked<K>(
    api: &Api<K>,
    name: &str,
    run: &str,
    kind: &str,
    left: &mut Vec<String>,
) -> Result<(), K8sError>
where
    K: Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Debug,
{
    let what = format!("{kind} {name}");
    let Some(o) = api
        .get_opt(name)
        .await
        .map_err(K8sError::api(format!("get {what}")))?
    else {
        return Ok(());
    };
    if !manifests::marked_by(o.meta().labels.as_ref(), run) {
        left.push(what);
        return Ok(());
    }
    gone(
        api.delete(name, &by_uid(o.uid(), true)).await.map(|_| ()),
        format!("delete {what}"),
    )
}

/// A deletion's result, where an object already gone (404) counts as deleted, and so does
/// one whose uid no longer matches (409: the object this run created is gone).
fn gone<T>(r: Result<T, kube::Error>, what: String) -> Result<(), K8sError> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if already_gone(&e) => Ok(()),
        Err(e) => Err(K8sError::api(what)(e)),
    }
}

/// Deletes the trial's namespace (only if it still carries this run's mark) and waits until
/// it is gone.
async fn namespace(
    client: &kube::Client,
    ns: &str,
    run: &str,
    wait: Duration,
) -> Result<(), K8sError> {
    let nss: Api<Namespace> = Api::all(client.clone());
    let uid = match delete_marked_namespace(&nss, ns, run).await? {
        NamespaceDeletion::Gone => None,
        NamespaceDeletion::Deleting { uid } | NamespaceDeletion::Deleted { uid } => uid,
    };
    if let Some(uid) = uid {
        let cond = kube::runtime::wait::conditions::is_deleted(&uid);
        let limit = wait.max(Duration::from_secs(120));
        tokio::time::timeout(limit, kube::runtime::wait::await_condition(nss, ns, cond))
            .await
            .map_err(|_| K8sError::Timeout {
                action: format!("wait for namespace {ns} to be deleted"),
                server: "the API server".into(),
                seconds: limit.as_secs(),
            })?
            .map_err(|source| K8sError::Wait {
                action: format!("wait for namespace {ns} to be deleted"),
                source,
            })?;
    }
    Ok(())
}
