//! The ingress controller drainwatch deploys for a trial (`--ingress-managed`): Traefik in the
//! trial's own namespace, with its access log, API and counters as drainwatch reads them, and
//! beside the target's Service an Ingress to it and a RoleBinding that lets this Traefik read
//! that namespace only. A pure function of the trial, so what is applied is tested without a
//! cluster.
//!
//! Least privilege: the controller's ServiceAccount is the trial's own, bound in the target's
//! namespace alone to the ClusterRole [`TRAEFIK_ROLE`] (deploy/rbac-attach.yaml), which
//! drainwatch may bind but does not hold (the right to bind it is as strong as holding it in
//! that namespace; docs/permissions.md says so). The Ingress carries a class of this trial's
//! own, so no other controller serves it and this Traefik serves nothing else.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Service, ServiceAccount};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::api::rbac::v1::RoleBinding;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::ingress::{METRICS_PORT_NAME, TRAEFIK_CONTAINER};
use super::labels;
use crate::evidence::ingress::traefik;
use crate::evidence::ingress::traefik_api::API_PORT_NAME;
use crate::evidence::plan::attach::ingress::{
    IngressProvider, MANAGED_PORT, MANAGED_SERVICE, ManagedIngress,
};

/// The ClusterRole the managed controller is bound to in the target's namespace: what
/// Traefik's Kubernetes providers list and watch there.
pub const TRAEFIK_ROLE: &str = "drainwatch-ingress-traefik";

/// The port of the controller's Service, named [`MANAGED_PORT`].
pub const SERVICE_PORT: u16 = 80;

/// The managed controller of one trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedSpec {
    /// The trial's namespace: the controller's Deployment, Service and ServiceAccount.
    pub namespace: String,
    /// The target's namespace: the Ingress and the RoleBinding.
    pub target_namespace: String,
    /// The target's Service and its port, the Ingress's backend.
    pub target_service: String,
    /// The Service port the backend names.
    pub target_port: u16,
    /// The Host the Ingress rule matches.
    pub host: String,
    /// The trial's instance (`drainwatch-RUN-NNN`, its namespace's name unless `--namespace`):
    /// the Ingress class and the names in the target's namespace, so two trials never share
    /// them.
    pub instance: String,
    /// The run's mark.
    pub run: String,
    /// What to deploy.
    pub managed: ManagedIngress,
}

/// The objects of a managed ingress, in the order they are created.
#[derive(Debug, Clone)]
pub struct ManagedObjects {
    /// The controller's identity, in the trial's namespace.
    pub service_account: ServiceAccount,
    /// Its rights in the target's namespace.
    pub role_binding: RoleBinding,
    /// The controller.
    pub deployment: Deployment,
    /// What the client pods dial.
    pub service: Service,
    /// The rule to the target's Service.
    pub ingress: Ingress,
}

/// The name the client pods dial a managed ingress by, in the trial's namespace `ns`: its
/// Service's, as the cluster's DNS would answer it, written into the client pods' /etc/hosts
/// with the Service's ClusterIP (the configuration is recorded before the Service has one, and
/// a cluster may have no DNS).
pub fn dial_name(ns: &str) -> String {
    format!("{MANAGED_SERVICE}.{ns}.svc")
}

impl ManagedSpec {
    /// The name of the Ingress and the RoleBinding in the target's namespace.
    pub fn target_side_name(&self) -> String {
        format!("{MANAGED_SERVICE}-{}", self.instance)
    }

    /// The Ingress class this trial's controller alone serves.
    pub fn class(&self) -> String {
        format!("drainwatch-{}", self.instance)
    }

    /// The labels of the controller's pods: not the trial's instance label, which selects the
    /// trial's client pods.
    fn pod_labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (labels::MANAGED_BY.to_string(), labels::MANAGER.to_string()),
            (labels::NAME.to_string(), MANAGED_SERVICE.to_string()),
            (labels::RUN.to_string(), self.run.clone()),
        ])
    }

    /// The labels of every object: the run's mark (teardown, `cleanup --run`) and the trial.
    fn object_labels(&self) -> BTreeMap<String, String> {
        let mut l = self.pod_labels();
        l.insert(labels::INSTANCE.to_string(), self.instance.clone());
        l
    }

    /// The provider's flags, on the target's namespace only and this trial's class.
    fn provider_args(&self) -> Vec<String> {
        let (ns, class) = (&self.target_namespace, self.class());
        match self.managed.provider {
            // With no right to IngressClasses (cluster-scoped) it matches the class annotation.
            IngressProvider::KubernetesIngress => vec![
                "--providers.kubernetesingress=true".into(),
                format!("--providers.kubernetesingress.namespaces={ns}"),
                "--providers.kubernetesingress.disableclusterscoperesources=true".into(),
                format!("--providers.kubernetesingress.ingressclass={class}"),
            ],
            IngressProvider::KubernetesIngressNginx => vec![
                "--providers.kubernetesingressnginx=true".into(),
                format!("--providers.kubernetesingressnginx.watchnamespace={ns}"),
                format!("--providers.kubernetesingressnginx.ingressclass={class}"),
            ],
        }
    }

    /// Traefik's flags: entry points web, its API (port named traefik) and metrics, the JSON
    /// access log keeping X-Drainwatch-Request, unbuffered.
    fn args(&self) -> Vec<String> {
        let mut a: Vec<String> = [
            "--global.checknewversion=false",
            "--global.sendanonymoususage=false",
            "--entrypoints.web.address=:8000",
            "--entrypoints.traefik.address=:8080",
            "--entrypoints.metrics.address=:9100",
            "--metrics.prometheus=true",
            "--metrics.prometheus.entrypoint=metrics",
            "--api.insecure=true",
            "--ping=true",
            "--log.level=INFO",
            "--log.format=json",
            "--accesslog=true",
            "--accesslog.bufferingsize=0",
        ]
        .map(String::from)
        .to_vec();
        a.extend(traefik::ACCESS_LOG_FLAGS.map(String::from));
        a.extend(self.provider_args());
        a
    }

    /// The objects, built as JSON and read into the typed structs (a field the API does not
    /// have fails the build's tests, not the run).
    pub fn objects(&self) -> Result<ManagedObjects, serde_json::Error> {
        let (ns, tns) = (&self.namespace, &self.target_namespace);
        let (meta, target_meta) = (
            json!({"name": MANAGED_SERVICE, "namespace": ns, "labels": self.object_labels()}),
            json!({"name": self.target_side_name(), "namespace": tns, "labels": self.object_labels()}),
        );
        let service_account = typed(json!({
            "metadata": meta,
            "automountServiceAccountToken": true,
        }))?;
        let role_binding = typed(json!({
            "metadata": target_meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": TRAEFIK_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": MANAGED_SERVICE, "namespace": ns}],
        }))?;
        let deployment = typed(self.deployment(&meta))?;
        let service = typed(json!({
            "metadata": meta,
            "spec": {
                "selector": self.pod_labels(),
                "ports": [{"name": MANAGED_PORT, "port": SERVICE_PORT, "targetPort": MANAGED_PORT, "protocol": "TCP"}],
            },
        }))?;
        let mut annotations = BTreeMap::new();
        annotations.insert("kubernetes.io/ingress.class", self.class());
        let mut ingress_meta = target_meta;
        ingress_meta["annotations"] = json!(annotations);
        let ingress = typed(json!({
            "metadata": ingress_meta,
            "spec": {"rules": [{
                "host": self.host,
                "http": {"paths": [{
                    "path": "/",
                    "pathType": "Prefix",
                    "backend": {"service": {"name": self.target_service, "port": {"number": self.target_port}}},
                }]},
            }]},
        }))?;
        Ok(ManagedObjects {
            service_account,
            role_binding,
            deployment,
            service,
            ingress,
        })
    }

    /// One replica under the restricted Pod Security profile, ready when Traefik answers
    /// /ping.
    fn deployment(&self, meta: &Value) -> Value {
        json!({
            "metadata": meta,
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": self.pod_labels()},
                "template": {
                    "metadata": {"labels": self.pod_labels()},
                    "spec": {
                        "serviceAccountName": MANAGED_SERVICE,
                        "enableServiceLinks": false,
                        "securityContext": {
                            "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "containers": [{
                            "name": TRAEFIK_CONTAINER,
                            "image": self.managed.image,
                            "imagePullPolicy": "IfNotPresent",
                            "args": self.args(),
                            "ports": [
                                {"name": MANAGED_PORT, "containerPort": 8000, "protocol": "TCP"},
                                {"name": API_PORT_NAME, "containerPort": 8080, "protocol": "TCP"},
                                {"name": METRICS_PORT_NAME, "containerPort": 9100, "protocol": "TCP"},
                            ],
                            "readinessProbe": {"httpGet": {"path": "/ping", "port": API_PORT_NAME}, "periodSeconds": 1},
                            "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                            "securityContext": {
                                "allowPrivilegeEscalation": false,
                                "readOnlyRootFilesystem": true,
                                "capabilities": {"drop": ["ALL"]},
                            },
                        }],
                    },
                },
            },
        })
    }
}

fn typed<T: DeserializeOwned>(v: Value) -> Result<T, serde_json::Error> {
    serde_json::from_value(v)
}

#[cfg(test)]
mod tests {
    use super::{ManagedSpec, TRAEFIK_ROLE};
    use crate::evidence::plan::attach::ingress::{
        DEFAULT_TRAEFIK_IMAGE, IngressProvider, ManagedIngress,
    };
    use crate::k8s::labels;

    fn spec(provider: IngressProvider) -> ManagedSpec {
        ManagedSpec {
            namespace: "drainwatch-run-001".into(),
            target_namespace: "shop".into(),
            target_service: "web".into(),
            target_port: 80,
            host: "drainwatch.test".into(),
            instance: "drainwatch-run-001".into(),
            run: "run".into(),
            managed: ManagedIngress {
                image: DEFAULT_TRAEFIK_IMAGE.into(),
                provider,
            },
        }
    }

    #[test]
    fn the_controller_reads_the_target_namespace_only_under_its_own_class() {
        let s = spec(IngressProvider::KubernetesIngress);
        let o = s.objects().unwrap();
        // The binding: the trial's ServiceAccount, in the target's namespace, to the role.
        let rb = &o.role_binding;
        assert_eq!(rb.metadata.namespace.as_deref(), Some("shop"));
        assert_eq!(rb.role_ref.name, TRAEFIK_ROLE);
        assert_eq!(rb.role_ref.kind, "ClusterRole");
        let subjects = rb.subjects.clone().unwrap();
        assert_eq!(subjects.len(), 1);
        assert_eq!(
            (subjects[0].name.as_str(), subjects[0].namespace.as_deref()),
            ("drainwatch-ingress", Some("drainwatch-run-001"))
        );
        // The Ingress: this trial's class, to the target's Service and port.
        let ing = &o.ingress;
        assert_eq!(ing.metadata.namespace.as_deref(), Some("shop"));
        let class = ing.metadata.annotations.clone().unwrap();
        assert_eq!(
            class.get("kubernetes.io/ingress.class").map(String::as_str),
            Some("drainwatch-drainwatch-run-001")
        );
        let rules = ing.spec.clone().unwrap().rules.unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].host.as_deref(), Some("drainwatch.test"));
        let backend = rules[0].http.clone().unwrap().paths[0]
            .backend
            .service
            .clone()
            .unwrap();
        assert_eq!(backend.name, "web");
        assert_eq!(backend.port.unwrap().number, Some(80));
        // The controller: its provider on the target's namespace and the class.
        let args = o.deployment.spec.unwrap().template.spec.unwrap().containers[0]
            .args
            .clone()
            .unwrap();
        for want in [
            "--providers.kubernetesingress.namespaces=shop",
            "--providers.kubernetesingress.disableclusterscoperesources=true",
            "--providers.kubernetesingress.ingressclass=drainwatch-drainwatch-run-001",
            "--accesslog.fields.headers.names.X-Drainwatch-Request=keep",
        ] {
            assert!(args.iter().any(|a| a == want), "{want} in {args:?}");
        }
        assert!(!args.iter().any(|a| a.contains("nginx")), "{args:?}");
    }

    #[test]
    fn the_controller_pods_are_not_the_trial_client_pods() {
        let o = spec(IngressProvider::KubernetesIngress).objects().unwrap();
        let pod = o.deployment.spec.unwrap().template.metadata.unwrap();
        let pod_labels = pod.labels.unwrap();
        // The trial's watch on its own pods selects the instance label.
        assert!(!pod_labels.contains_key(labels::INSTANCE), "{pod_labels:?}");
        assert_eq!(
            o.service.spec.unwrap().selector.unwrap(),
            pod_labels,
            "the Service selects the controller's pods"
        );
        // Every object carries the run's mark, for teardown and cleanup --run.
        let marks = [
            o.service_account.metadata.labels,
            o.role_binding.metadata.labels,
            o.ingress.metadata.labels,
            o.deployment.metadata.labels,
        ];
        assert_eq!(marks.len(), 4);
        for l in marks {
            assert_eq!(l.unwrap().get(labels::RUN).map(String::as_str), Some("run"));
        }
    }

    #[test]
    fn the_ingress_nginx_provider_watches_the_target_namespace_under_the_class() {
        let o = spec(IngressProvider::KubernetesIngressNginx)
            .objects()
            .unwrap();
        let args = o.deployment.spec.unwrap().template.spec.unwrap().containers[0]
            .args
            .clone()
            .unwrap();
        for want in [
            "--providers.kubernetesingressnginx=true",
            "--providers.kubernetesingressnginx.watchnamespace=shop",
            "--providers.kubernetesingressnginx.ingressclass=drainwatch-drainwatch-run-001",
        ] {
            assert!(args.iter().any(|a| a == want), "{want} in {args:?}");
        }
        assert!(
            !args.iter().any(|a| a.contains("kubernetesingress.")),
            "{args:?}"
        );
    }
}
