//! Teardown: the trial's objects go, the namespace last, and the call returns only once the
//! namespace is gone (a trial that leaves a terminating namespace behind would race the next).

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::{DeleteParams, ListParams};

use super::TrialState;
use crate::k8s::{K8sError, PROBE_NAME, manifests};

/// Deletes what the trial created; returns what was removed.
pub(super) async fn objects(
    client: &kube::Client,
    st: &TrialState,
    wait: Duration,
) -> Result<String, K8sError> {
    let ns = &st.ns;
    let now = DeleteParams::background().grace_period(0);
    // An attach trial deployed no probe: only its client pod (and namespace) are drainwatch's.
    let probe = st.attach.is_none();
    if probe {
        gone(
            Api::<Deployment>::namespaced(client.clone(), ns)
                .delete(PROBE_NAME, &now)
                .await
                .map(|_| ()),
            format!("delete deployment {ns}/{PROBE_NAME}"),
        )?;
    }
    // The trial is over: its pods need no grace, and a namespace waits for every pod's.
    gone(
        Api::<Pod>::namespaced(client.clone(), ns)
            .delete_collection(
                &now,
                &ListParams::default().labels(&manifests::trial_selector(&st.instance)),
            )
            .await
            .map(|_| ()),
        format!("delete the trial's pods in {ns}"),
    )?;
    if st.created_ns {
        namespace(client, ns, wait).await?;
        return Ok(format!("namespace {ns} and everything in it deleted"));
    }
    if !probe {
        return Ok(format!(
            "the trial's client pod deleted from namespace {ns}"
        ));
    }
    gone(
        Api::<Service>::namespaced(client.clone(), ns)
            .delete(PROBE_NAME, &now)
            .await
            .map(|_| ()),
        format!("delete service {ns}/{PROBE_NAME}"),
    )?;
    gone(
        Api::<PodDisruptionBudget>::namespaced(client.clone(), ns)
            .delete(PROBE_NAME, &now)
            .await
            .map(|_| ()),
        format!("delete poddisruptionbudget {ns}/{PROBE_NAME}"),
    )?;
    Ok(format!(
        "the trial's deployment, service, budget and pods deleted from namespace {ns}"
    ))
}

/// A deletion's result, where an object already gone (404) counts as deleted.
fn gone<T>(r: Result<T, kube::Error>, what: String) -> Result<(), K8sError> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if crate::k8s::status_code(&e) == Some(404) => Ok(()),
        Err(e) => Err(K8sError::api(what)(e)),
    }
}

/// Deletes the trial's namespace and waits until it is gone.
async fn namespace(client: &kube::Client, ns: &str, wait: Duration) -> Result<(), K8sError> {
    let nss: Api<Namespace> = Api::all(client.clone());
    let uid = nss
        .get_opt(ns)
        .await
        .ok()
        .flatten()
        .and_then(|n| n.metadata.uid);
    gone(
        nss.delete(ns, &DeleteParams::background())
            .await
            .map(|_| ()),
        format!("delete namespace {ns}"),
    )?;
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
