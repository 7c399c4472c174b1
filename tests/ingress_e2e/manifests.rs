//! The objects `tests/ingress_e2e.rs` applies: Traefik as a user would run it, with one of its
//! Kubernetes providers on its namespace only, and bad-shutdown behind an Ingress rule.

/// The Host the Ingress rule matches.
pub const HOST: &str = "bad.drainwatch.test";

/// Which of Traefik's Kubernetes providers reads the Ingress: each in a namespace of its own.
#[derive(Clone, Copy)]
pub enum Provider {
    /// `kubernetesingress`: Traefik's own.
    Ingress,
    /// `kubernetesingressnginx`: ingress-nginx's annotations, the migration path; it puts a
    /// retry (3 tries on network errors) on every route.
    IngressNginx,
}

impl Provider {
    pub fn ns(self) -> &'static str {
        match self {
            Self::Ingress => "drainwatch-ingress-e2e",
            Self::IngressNginx => "drainwatch-ingress-nginx-e2e",
        }
    }

    /// Traefik's flags for the provider, on the namespace only.
    fn flags(self) -> String {
        let ns = self.ns();
        match self {
            Self::Ingress => format!(
                "            - --providers.kubernetesingress=true\n            - --providers.kubernetesingress.namespaces={ns}\n            - --providers.kubernetesingress.disableclusterscoperesources=true\n"
            ),
            // With no right to list IngressClasses it reads the class annotation.
            Self::IngressNginx => format!(
                "            - --providers.kubernetesingressnginx=true\n            - --providers.kubernetesingressnginx.watchnamespace={ns}\n"
            ),
        }
    }

    /// The Ingress's annotations.
    fn annotations(self) -> &'static str {
        match self {
            Self::Ingress => "{}",
            Self::IngressNginx => "{kubernetes.io/ingress.class: nginx}",
        }
    }
}

pub fn traefik_image() -> String {
    std::env::var("DRAINWATCH_E2E_TRAEFIK_IMAGE")
        .unwrap_or_else(|_| "docker.io/library/traefik:v3.7.13".into())
}

fn example_image() -> String {
    format!(
        "ghcr.io/drainwatch/example-bad-shutdown:{}",
        env!("CARGO_PKG_VERSION")
    )
}

/// Traefik as a user would run it for drainwatch: `provider` on its namespace only (a Role, no
/// ClusterRole), its JSON access log keeping X-Drainwatch-Request, its request counters on a
/// port named `metrics` (as the Helm chart serves them); and bad-shutdown behind an Ingress for
/// HOST.
pub fn manifests(provider: Provider) -> String {
    let traefik = traefik_image();
    let (ns, flags, annotations) = (provider.ns(), provider.flags(), provider.annotations());
    let (namespace, workload) = (namespace(ns), workload(ns));
    format!(
        r#"{namespace}---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: traefik, namespace: {ns}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: traefik, namespace: {ns}}}
rules:
  - apiGroups: [""]
    resources: [services, secrets, configmaps]
    verbs: [get, list, watch]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [get, list, watch]
  - apiGroups: [networking.k8s.io]
    resources: [ingresses]
    verbs: [get, list, watch]
  - apiGroups: [networking.k8s.io]
    resources: [ingresses/status]
    verbs: [update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: traefik, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: traefik}}
subjects: [{{kind: ServiceAccount, name: traefik, namespace: {ns}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: traefik, namespace: {ns}}}
spec:
  replicas: 1
  selector:
    matchLabels: {{app.kubernetes.io/name: traefik}}
  template:
    metadata:
      labels: {{app.kubernetes.io/name: traefik}}
    spec:
      serviceAccountName: traefik
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        seccompProfile: {{type: RuntimeDefault}}
      containers:
        - name: traefik
          image: {traefik}
          imagePullPolicy: IfNotPresent
          args:
            - --global.checknewversion=false
            - --global.sendanonymoususage=false
            - --entrypoints.web.address=:8000
            - --entrypoints.traefik.address=:8080
            - --entrypoints.metrics.address=:9100
            - --metrics.prometheus=true
            - --metrics.prometheus.entrypoint=metrics
{flags}            - --api.insecure=true
            - --ping=true
            - --log.level=INFO
            - --log.format=json
            - --accesslog=true
            - --accesslog.format=json
            - --accesslog.bufferingsize=0
            - --accesslog.fields.headers.defaultmode=drop
            - --accesslog.fields.headers.names.X-Drainwatch-Request=keep
          ports:
            - {{name: web, containerPort: 8000, protocol: TCP}}
            - {{name: traefik, containerPort: 8080, protocol: TCP}}
            - {{name: metrics, containerPort: 9100, protocol: TCP}}
          readinessProbe:
            httpGet: {{path: /ping, port: traefik}}
            periodSeconds: 1
          resources:
            requests: {{cpu: 50m, memory: 64Mi}}
            limits: {{memory: 256Mi}}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {{drop: [ALL]}}
---
apiVersion: v1
kind: Service
metadata: {{name: traefik, namespace: {ns}}}
spec:
  selector: {{app.kubernetes.io/name: traefik}}
  ports:
    - {{name: web, port: 80, targetPort: web, protocol: TCP}}
    - {{name: admin, port: 8080, targetPort: traefik, protocol: TCP}}
---
{workload}---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: bad-shutdown, namespace: {ns}, annotations: {annotations}}}
spec:
  rules:
    - host: {HOST}
      http:
        paths:
          - path: /
            pathType: Prefix
            backend:
              service:
                name: bad-shutdown
                port: {{number: 80}}
"#
    )
}

/// A JSON patch that gives bad-shutdown's pods a sidecar: good-shutdown on port 9090, which
/// drains for 5 s after SIGTERM and so keeps the pod, and its address, alive after the app
/// container has exited (as a service mesh's proxy or a log shipper does).
pub fn sidecar_patch() -> String {
    let image = format!(
        "ghcr.io/drainwatch/example-good-shutdown:{}",
        env!("CARGO_PKG_VERSION")
    );
    serde_json::json!([{
        "op": "add",
        "path": "/spec/template/spec/containers/-",
        "value": {
            "name": "sidecar",
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "env": [{"name": "PORT", "value": "9090"}],
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
            "securityContext": {
                "allowPrivilegeEscalation": false,
                "readOnlyRootFilesystem": true,
                "runAsNonRoot": true,
                "capabilities": {"drop": ["ALL"]}
            }
        }
    }])
    .to_string()
}

/// The restricted namespace `ns`.
fn namespace(ns: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Namespace
metadata:
  name: {ns}
  labels:
    pod-security.kubernetes.io/enforce: restricted
"#
    )
}

/// bad-shutdown (two replicas, exits at once on SIGTERM) and its Service, in `ns`.
fn workload(ns: &str) -> String {
    let example = example_image();
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {{name: bad-shutdown, namespace: {ns}}}
spec:
  replicas: 2
  strategy:
    type: RollingUpdate
    rollingUpdate: {{maxSurge: 1, maxUnavailable: 0}}
  selector:
    matchLabels: {{app.kubernetes.io/name: bad-shutdown}}
  template:
    metadata:
      labels: {{app.kubernetes.io/name: bad-shutdown}}
    spec:
      terminationGracePeriodSeconds: 30
      automountServiceAccountToken: false
      enableServiceLinks: false
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        seccompProfile: {{type: RuntimeDefault}}
      containers:
        - name: app
          image: {example}
          imagePullPolicy: IfNotPresent
          env:
            - {{name: PORT, value: "8080"}}
            - name: POD_NAME
              valueFrom: {{fieldRef: {{fieldPath: metadata.name}}}}
          ports:
            - {{name: http, containerPort: 8080, protocol: TCP}}
          readinessProbe:
            httpGet: {{path: /readyz, port: http}}
            periodSeconds: 1
            timeoutSeconds: 1
            failureThreshold: 1
          resources:
            requests: {{cpu: 10m, memory: 16Mi}}
            limits: {{memory: 64Mi}}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            runAsNonRoot: true
            capabilities: {{drop: [ALL]}}
---
apiVersion: v1
kind: Service
metadata: {{name: bad-shutdown, namespace: {ns}}}
spec:
  selector: {{app.kubernetes.io/name: bad-shutdown}}
  ports:
    - {{name: http, port: 80, targetPort: http, protocol: TCP}}
"#
    )
}

/// A target alone: `ns` with bad-shutdown and its Service, no ingress (`--ingress-managed`
/// brings its own).
pub fn target(ns: &str) -> String {
    format!("{}---\n{}", namespace(ns), workload(ns))
}

/// The good example's manifest (examples/k8s/good-shutdown.yaml) in `ns`, draining for
/// `drain_s` seconds after SIGTERM (`DRAIN_DELAY`; its default is 5): through an ingress the
/// drain must outlast the controller's lag, which on a loaded two-core machine Traefik's
/// providers throttle and reload have taken past 5 s.
pub fn good_shutdown(ns: &str, drain_s: u32) -> String {
    let path = crate::support::manifest("good-shutdown.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let port = "            - name: PORT\n              value: \"8080\"\n";
    assert_eq!(text.matches(port).count(), 1, "{path}");
    text.replace(
        "namespace: drainwatch-examples",
        &format!("namespace: {ns}"),
    )
    .replace(
        port,
        &format!("{port}            - name: DRAIN_DELAY\n              value: \"{drain_s}\"\n"),
    )
}
