//! `--ingress-managed`: the trial deploys its own Traefik (`k8s::ingress_managed`) before its
//! watches start, waits until the controller is ready and routes the target's Service (its API
//! lists a server of the target's namespace: the RoleBinding, the class and the Ingress all
//! worked), then locates it as a user's controller is located. Preflight `ingress-deployed`
//! names what did not come up. Teardown deletes what is in the target's namespace by name,
//! run mark and uid; the trial's namespace takes the rest, or teardown deletes it too when the
//! namespace is not the trial's own.

use std::time::Duration;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, Service, ServiceAccount};
use kube::api::{ListParams, LogParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::Resolution;
use crate::evidence::ingress::traefik_api;
use crate::evidence::journal::{Change, CreatedKind};
use crate::evidence::plan::attach::ingress::MANAGED_SERVICE;
use crate::evidence::plan::attach::ingress::{IngressTarget, ManagedIngress};
use crate::k8s::cleanup::{delete_created, delete_marked};
use crate::k8s::ingress::{self, Located};
use crate::k8s::ingress_managed::{ManagedSpec, TRAEFIK_ROLE};
use crate::k8s::{K8sError, labels};
use crate::platform::PlatformError;
use crate::platform::kubernetes::{chain, fail, ok};
use crate::{console, preflight};

/// How long the controller may take to be ready and route the target (an image pulled on a
/// fresh node included).
const READY_WITHIN: Duration = Duration::from_secs(120);

/// The pause between two looks at the controller while it comes up.
const LOOK_EVERY: Duration = Duration::from_millis(500);

/// The pause between two reads of a ready controller's log while it routes nothing yet.
const LOG_LOOK_EVERY: Duration = Duration::from_secs(2);

/// The managed controller of a trial in namespace `ns` (instance `instance`, run `run`).
pub(super) fn spec(
    res: &Resolution,
    it: &IngressTarget,
    m: &ManagedIngress,
    (ns, instance, run): (&str, &str, &str),
) -> ManagedSpec {
    ManagedSpec {
        namespace: ns.to_string(),
        target_namespace: res.ns.clone(),
        target_service: res.endpoint.service.clone(),
        target_port: res.endpoint.port,
        host: it.host.clone(),
        instance: instance.to_string(),
        run: run.to_string(),
        managed: m.clone(),
    }
}

/// Creates the controller's objects, waits until it routes the target, and locates it.
pub(super) async fn deploy(
    client: &kube::Client,
    spec: &ManagedSpec,
    it: &IngressTarget,
) -> Result<Located, PlatformError> {
    let t = Instant::now();
    let objects = spec.objects().map_err(|e| {
        fail(
            preflight::INGRESS_DEPLOYED,
            t,
            format!("the managed ingress's objects do not build: {e}"),
        )
    })?;
    let (ns, tns) = (&spec.namespace, &spec.target_namespace);
    create(client, ns, &objects.service_account, "serviceaccount").await?;
    create(client, tns, &objects.role_binding, "rolebinding").await?;
    create(client, ns, &objects.deployment, "deployment").await?;
    create(client, ns, &objects.service, "service").await?;
    create(client, tns, &objects.ingress, "ingress").await?;
    console::progress!(
        "drainwatch: managed ingress: {} in namespace {ns} ({} provider, class {}), Ingress {tns}/{} for Host {}",
        spec.managed.image,
        spec.managed.provider,
        spec.class(),
        spec.target_side_name(),
        spec.host
    );
    match tokio::time::timeout(READY_WITHIN, routed(client, spec, it)).await {
        Ok(Routed::Yes(located)) => {
            ok(&preflight::INGRESS_DEPLOYED, t);
            Ok(*located)
        }
        Ok(Routed::Never) => Err(fail(
            preflight::INGRESS_DEPLOYED,
            t,
            stuck(client, spec, None).await,
        )),
        Ok(Routed::MissingRole(line)) => Err(fail(
            preflight::INGRESS_DEPLOYED,
            t,
            missing_role(spec, &line),
        )),
        Err(_) => Err(fail(
            preflight::INGRESS_DEPLOYED,
            t,
            stuck(client, spec, Some(READY_WITHIN)).await,
        )),
    }
}

/// The `target_resolved` line of a deployed controller: what the client pods dial it by.
pub(super) fn resolved(spec: &ManagedSpec, (ip, name): &(String, String)) -> String {
    format!(
        "managed ingress {} in namespace {} ({} provider, Ingress class {}, Ingress {}/{} for Host {}): the client pods dial {name} port {}, ClusterIP {ip} in their /etc/hosts",
        spec.managed.image,
        spec.namespace,
        spec.managed.provider,
        spec.class(),
        spec.target_namespace,
        spec.target_side_name(),
        spec.host,
        crate::k8s::ingress_managed::SERVICE_PORT,
    )
}

/// Creates `o` in `ns`; one already there (a parallel trial in a shared `--namespace`) is
/// named and left alone.
async fn create<K>(client: &kube::Client, ns: &str, o: &K, kind: &str) -> Result<(), PlatformError>
where
    K: Resource<Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let name = o.meta().name.clone().unwrap_or_default();
    match Api::<K>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), o)
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if crate::k8s::status_code(&e) == Some(409) => Err(PlatformError::Exists {
            what: format!("{kind} {ns}/{name}"),
            owner: None,
        }),
        Err(e) => Err(PlatformError::Cluster(K8sError::api(format!(
            "create {kind} {ns}/{name}"
        ))(e))),
    }
}

/// Whether the controller came up.
enum Routed {
    /// Ready, and routing the target.
    Yes(Box<Located>),
    /// A container in a state it does not leave by waiting ([`NEVER_READY`]).
    Never,
    /// Ready, but its log says the ClusterRole its RoleBinding names does not exist: the log
    /// line that says so.
    MissingRole(String),
}

/// Container waiting reasons the kubelet only retries with backoff or never: the image cannot
/// be pulled or named, the container exits at once, or its configuration cannot be built.
/// `ErrImagePull` (a first failed pull, which a registry's hiccup may cause) is not among them:
/// its backoff is.
const NEVER_READY: [&str; 5] = [
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
];

/// Waits until the controller's pod is ready and its API lists a server of the target's
/// namespace; then locates it. A failed look is looked at again until the caller's bound,
/// unless a container is in a state waiting does not end, or the controller's log says the
/// role it is bound to does not exist (no wait creates it).
async fn routed(client: &kube::Client, spec: &ManagedSpec, it: &IngressTarget) -> Routed {
    let search = traefik_api::services_path(&spec.target_namespace);
    let api = Api::<Pod>::namespaced(client.clone(), &spec.namespace);
    let mut log_read: Option<Instant> = None;
    loop {
        let pods = api
            .list(&ListParams::default().labels(&pod_selector(&spec.run)))
            .await
            .map(|l| l.items)
            .unwrap_or_default();
        if pods.iter().any(never_ready) {
            return Routed::Never;
        }
        if !pods.is_empty() && pods.iter().all(pod_ready) {
            if let Ok(Ok(located)) = ingress::locate(client, it, &spec.namespace).await
                && serves(client, &located, &search).await
            {
                return Routed::Yes(Box::new(located));
            }
            if log_read.is_none_or(|t| t.elapsed() >= LOG_LOOK_EVERY)
                && let Some(p) = pods.first()
            {
                log_read = Some(Instant::now());
                let log = last_log_lines(&api, &p.name_any())
                    .await
                    .unwrap_or_default();
                if let Some(line) = missing_role_line(&log) {
                    return Routed::MissingRole(line.trim().to_string());
                }
            }
        }
        tokio::time::sleep(LOOK_EVERY).await;
    }
}

/// The line of the controller's log that says the API server denied its reads because the
/// ClusterRole its RoleBinding names does not exist: applied once per cluster by an admin
/// (deploy/rbac-attach.yaml), which no trial creates.
fn missing_role_line(log: &str) -> Option<&str> {
    log.lines().find(|l| {
        l.contains("clusterrole.rbac.authorization.k8s.io")
            && l.contains(TRAEFIK_ROLE)
            && l.contains("not found")
    })
}

/// The failure of a controller whose ClusterRole is missing: what to apply, and the log line.
fn missing_role(spec: &ManagedSpec, line: &str) -> String {
    format!(
        "the managed ingress ({}) is ready but reads nothing in namespace {}: the ClusterRole {TRAEFIK_ROLE} its RoleBinding names does not exist on this cluster. An admin applies it once per cluster: kubectl apply -f deploy/rbac-attach.yaml, or `drainwatch rbac --ingress-managed` (drainwatch/action/setup applies it to the kind cluster it creates). Its log said:\n    {line}",
        spec.managed.image, spec.target_namespace
    )
}

/// Whether a container of `p` waits for a reason in [`NEVER_READY`].
fn never_ready(p: &Pod) -> bool {
    waiting(p).any(|(reason, _)| NEVER_READY.contains(&reason))
}

/// The waiting reasons and messages of `p`'s containers.
fn waiting(p: &Pod) -> impl Iterator<Item = (&str, Option<&str>)> {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|c| c.state.as_ref()?.waiting.as_ref())
        .map(|w| (w.reason.as_deref().unwrap_or("?"), w.message.as_deref()))
}

fn pod_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// This run's controller pods: in a shared `--namespace`, a pod of an earlier run's
/// controller (still terminating, or left crash-looping) is not this trial's.
fn pod_selector(run: &str) -> String {
    format!("{}={MANAGED_SERVICE},{}={run}", labels::NAME, labels::RUN)
}

/// Whether the controller's API lists at least one server of the target's namespace: its
/// provider read the Ingress, the Service and its EndpointSlices with the rights bound.
async fn serves(client: &kube::Client, located: &Located, search: &str) -> bool {
    let Some((pod, port)) = located.api_ports.iter().next() else {
        return false;
    };
    match ingress::proxy_get(client, &located.namespace, pod, *port, search).await {
        Ok(text) => traefik_api::servers(&text).is_ok_and(|s| !s.is_empty()),
        Err(_) => false,
    }
}

/// The controller log lines a failure quotes: enough for a provider's refusal (a forbidden
/// list, an unknown flag), few enough to read on a console.
const LOG_TAIL: i64 = 12;

/// What the controller's pod shows when it did not come up in time, or never will: its phase and waiting
/// reason (an image that cannot be pulled) and its last log lines (a forbidden list, the
/// class), quoted because teardown deletes the pod before the failure is printed.
/// `waited` is the bound it ran out, or None for a state waiting does not end.
async fn stuck(client: &kube::Client, spec: &ManagedSpec, waited: Option<Duration>) -> String {
    let ns = &spec.namespace;
    let api = Api::<Pod>::namespaced(client.clone(), ns);
    let pods = api
        .list(&ListParams::default().labels(&pod_selector(&spec.run)))
        .await;
    let (states, log) = match pods {
        Ok(l) => {
            let log = match l.items.first() {
                Some(p) => log_tail(&api, &p.name_any()).await,
                None => String::new(),
            };
            (l.items.iter().map(describe).collect::<Vec<_>>(), log)
        }
        Err(e) => (
            vec![format!(
                "its pods not listed: {}",
                chain(&K8sError::api("list pods".to_string())(e))
            )],
            String::new(),
        ),
    };
    format!(
        "the managed ingress ({}) {}: {}{log}",
        spec.managed.image,
        match waited {
            Some(w) => format!(
                "was not ready and routing the target's Service within {}s",
                w.as_secs()
            ),
            None => "will not become ready".to_string(),
        },
        if states.is_empty() {
            "no pod".to_string()
        } else {
            states.join("; ")
        },
    )
}

/// The last [`LOG_TAIL`] lines of the controller's log, indented under the failure; empty when
/// there is none (a container that never started).
async fn log_tail(api: &Api<Pod>, pod: &str) -> String {
    match last_log_lines(api, pod).await {
        Some(text) if !text.trim().is_empty() => {
            let lines: String = text.lines().map(|l| format!("\n    {l}")).collect();
            format!("; its last log lines:{lines}")
        }
        _ => String::new(),
    }
}

/// The last [`LOG_TAIL`] lines of the controller's log as it wrote them, or None when they
/// could not be read.
async fn last_log_lines(api: &Api<Pod>, pod: &str) -> Option<String> {
    let params = LogParams {
        container: Some(ingress::TRAEFIK_CONTAINER.to_string()),
        tail_lines: Some(LOG_TAIL),
        ..LogParams::default()
    };
    api.logs(pod, &params).await.ok()
}

fn describe(p: &Pod) -> String {
    let status = p.status.as_ref();
    let waiting = waiting(p)
        .map(|(reason, message)| {
            format!(
                " waiting: {reason}{}",
                message.map(|m| format!(" ({m})")).unwrap_or_default()
            )
        })
        .collect::<String>();
    format!(
        "pod {} {}{}{waiting}",
        p.name_any(),
        status.and_then(|s| s.phase.as_deref()).unwrap_or("?"),
        if pod_ready(p) { " ready" } else { " not ready" },
    )
}

/// The restore journal's records of what a trial puts beside the target, made before it is
/// created, so that `drainwatch cleanup --run` deletes them by name after a SIGKILL (listing
/// them in every namespace is a right drainwatch is not given).
pub(in crate::platform::kubernetes) fn target_side(spec: &ManagedSpec) -> [Change; 2] {
    let at = |kind| Change::ObjectCreated {
        kind,
        namespace: spec.target_namespace.clone(),
        name: spec.target_side_name(),
    };
    [at(CreatedKind::Ingress), at(CreatedKind::RoleBinding)]
}

/// Deletes the managed ingress's objects of run `run`: the Ingress and RoleBinding in the
/// target's namespace and, when the trial's namespace is not its own (`owns_ns` false), the
/// controller in it. Every deletion is tried; returns what was removed, or the first error.
pub(in crate::platform::kubernetes) async fn remove(
    client: &kube::Client,
    spec: &ManagedSpec,
    owns_ns: bool,
) -> Result<Vec<String>, K8sError> {
    let (mut out, mut first) = (Vec::new(), None);
    let run = &spec.run;
    for c in target_side(spec) {
        if let Change::ObjectCreated {
            kind,
            namespace,
            name,
        } = &c
        {
            match delete_created(client, *kind, namespace, name, run).await {
                Ok(done) => out.extend(done),
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
    }
    if !owns_ns {
        let (ns, name) = (&spec.namespace, MANAGED_SERVICE);
        for r in [
            delete_marked::<Deployment>(client, "deployment", ns, name, run).await,
            delete_marked::<Service>(client, "service", ns, name, run).await,
            delete_marked::<ServiceAccount>(client, "serviceaccount", ns, name, run).await,
        ] {
            match r {
                Ok(done) => out.extend(done),
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
    }
    match first {
        None => Ok(out),
        Some(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::{describe, missing_role_line, never_ready};

    fn pod(reason: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "drainwatch-ingress-1"},
            "status": {
                "phase": "Pending",
                "containerStatuses": [{
                    "name": "traefik", "image": "x", "imageID": "", "ready": false,
                    "restartCount": 0,
                    "state": {"waiting": {"reason": reason, "message": "not found"}},
                }],
            },
        }))
        .unwrap()
    }

    #[test]
    fn a_pull_backoff_ends_the_wait_and_a_first_failed_pull_does_not() {
        assert!(never_ready(&pod("ImagePullBackOff")));
        assert!(never_ready(&pod("CrashLoopBackOff")));
        assert!(!never_ready(&pod("ErrImagePull")));
        assert!(!never_ready(&pod("ContainerCreating")));
        assert_eq!(
            describe(&pod("ImagePullBackOff")),
            "pod drainwatch-ingress-1 Pending not ready waiting: ImagePullBackOff (not found)"
        );
    }

    /// A managed Traefik's log on a kind cluster without the ClusterRole (the Action's kind
    /// path before its setup applied it), as the failure quoted it; and a denial with the role
    /// there (a RoleBinding not yet seen by the authorizer), which waiting may end.
    #[test]
    fn only_a_missing_cluster_role_in_the_log_ends_the_wait() {
        let missing = r#"    E1207 15:23:21.939289       1 reflector.go:227] "Failed to watch" err="failed to list *v1.EndpointSlice: endpointslices.discovery.k8s.io is forbidden: User \"system:serviceaccount:drainwatch-20261207-152300-ca0571ad-001:drainwatch-ingress\" cannot list resource \"endpointslices\" in API group \"discovery.k8s.io\" in the namespace \"gate-ingress-96656469-1\": RBAC: clusterrole.rbac.authorization.k8s.io \"drainwatch-ingress-traefik\" not found" logger="UnhandledError""#;
        let denied = r#"    E1207 15:23:21.939289       1 reflector.go:227] "Failed to watch" err="failed to list *v1.Service: services is forbidden: User \"system:serviceaccount:ns:drainwatch-ingress\" cannot list resource \"services\" in API group \"\" in the namespace \"shop\"" logger="UnhandledError""#;
        let log = format!("{denied}\n{missing}\n");
        assert_eq!(missing_role_line(&log), Some(missing));
        assert_eq!(missing_role_line(denied), None);
        assert_eq!(missing_role_line(""), None);
    }
}
