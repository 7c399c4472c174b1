//! Preflight: named checks with an invariant and a hint. The first failure aborts the trial
//! and no report is written, because a broken harness must not produce evidence.

use std::fmt;
use std::time::Duration;

mod poll;
pub use poll::{Poll, Stopped, poll};

/// A check that must hold before anything is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    /// Short name, printed in the preflight list.
    pub name: &'static str,
    /// What it enforces.
    pub invariant: &'static str,
    /// Where to look when it fails.
    pub hint: &'static str,
}

/// A failed check, with what was observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The check.
    pub check: Check,
    /// What went wrong, with the last observation.
    pub error: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "preflight check \"{}\" failed: {}\n  invariant: {}\n  check: {}",
            self.check.name, self.error, self.check.invariant, self.check.hint
        )
    }
}

impl std::error::Error for Failure {}

impl Check {
    /// This check failed with `error`.
    pub fn fail(self, error: impl Into<String>) -> Failure {
        Failure {
            check: self,
            error: error.into(),
        }
    }
}

/// The line printed for a check: `preflight [ ok ] name   123ms`.
pub fn line(check: &Check, ok: bool, took: Duration) -> String {
    format!(
        "preflight [{}] {:<34} {:>6}ms",
        if ok { " ok " } else { "FAIL" },
        check.name,
        took.as_millis()
    )
}

/// Ports free before the local probe starts.
pub const LOCAL_PORTS_FREE: Check = Check {
    name: "local-ports-free",
    invariant: "the probe's TCP, UDP and readiness ports are free on this machine before the probe starts",
    hint: "another process holds the port (ss -ltnup); choose other --tcp-port/--udp-port/--ready-port",
};

/// The probe runs and answers readiness.
pub const PROBE_READY: Check = Check {
    name: "probe-ready",
    invariant: "exactly one probe is running and its /readyz answers 200 before any flow is opened",
    hint: "the probe's stderr above; its DRAIN_BEHAVIOR and port variables",
};

/// The probe's event lines reach the orchestrator.
pub const PROBE_EVENTS_DELIVERING: Check = Check {
    name: "probe-events-delivering",
    invariant: "the probe's probe_started event line has been received, so its SIGTERM will be seen",
    hint: "the probe's stdout must carry JSON event lines; a wrapper that swallows stdout breaks this",
};

/// Every flow dialled.
pub const FLOWS_DIALED: Check = Check {
    name: "flows-dialed",
    invariant: "every TCP connection and UDP socket opens within the dial window",
    hint: "that the target host's tcp and udp ports reach the probe (firewall, NodePort mapping)",
};

/// Every TCP flow heartbeating.
pub const TCP_ESTABLISHED: Check = Check {
    name: "tcp-flows-established",
    invariant: "every TCP flow has received at least one heartbeat before t=0",
    hint: "the probe log for tcp_accept; that the TCP port maps to the probe's port 7001",
};

/// Every UDP flow answered.
pub const UDP_REPLYING: Check = Check {
    name: "udp-flows-replying",
    invariant: "every UDP flow has received at least one ack before t=0",
    hint: "that the UDP port maps to the probe's port 7002 (a common omission in port mappings)",
};

/// The API server answers.
pub const API_REACHABLE: Check = Check {
    name: "api-reachable",
    invariant: "the kubeconfig loads and the API server answers its version within the preflight timeout",
    hint: "the server URL above, --kubeconfig/--context, and that the cluster is up (kubectl version)",
};

/// Every permission the trial needs is granted.
pub const PERMISSIONS: Check = Check {
    name: "permissions",
    invariant: "a SelfSubjectAccessReview allows every verb and resource the trial uses, before anything is created",
    hint: "bind the identity to deploy/rbac.yaml's ClusterRole (kubectl auth can-i --list)",
};

/// The image is present or pullable.
pub const IMAGE_PRESENT: Check = Check {
    name: "image-present",
    invariant: "every probe pod's container starts from --image: the image is present on the node or pullable",
    hint: "--image, and that every node has it or can pull it (make image; make cluster-up imports it); the pod's waiting reason is in the error above",
};

/// The probe pod runs, stays up and is Ready.
pub const POD_READY: Check = Check {
    name: "probe-pod-ready",
    invariant: "the pod under test is Ready and has not restarted (a crash-looping probe measures nothing)",
    hint: "the probe's last termination in the error above and its lines in the trial's events.jsonl under --out; the probe's DRAIN_BEHAVIOR and port variables",
};

/// The probe's log reaches the orchestrator.
pub const PROBE_LOG_DELIVERING: Check = Check {
    name: "probe-events-delivering",
    invariant: "the pod under test's probe_started line arrived over the followed log stream, so its SIGTERM will be seen",
    hint: "RBAC for pods/log (deploy/rbac.yaml); --image must run `drainwatch probe`, which writes JSON event lines to stdout",
};

/// Watches have synced and deliver the pod under test.
pub const WATCHES_SYNCED: Check = Check {
    name: "k8s-watches-delivering",
    invariant: "the pod and EndpointSlice watches have listed and each delivers the pod under test",
    hint: "RBAC for watching pods and discovery.k8s.io endpointslices (deploy/rbac.yaml; kubectl auth can-i watch endpointslices.discovery.k8s.io)",
};

/// The pod under test's endpoint has been ready long enough for the proxy to route to it.
pub const ENDPOINT_STABLE: Check = Check {
    name: "service-endpoint-stable",
    invariant: "the pod under test's own endpoint has been ready without interruption for 2 s, so kube-proxy routes to it before any flow dials",
    hint: "the endpoint lines in the trial's events.jsonl under --out; kube-proxy's log and the nodes' readiness (kubectl get nodes)",
};

/// The NodePort answers from where drainwatch runs.
pub const NODEPORT_PROGRAMMED: Check = Check {
    name: "nodeport-programmed",
    invariant: "the Service's NodePort accepts a TCP connection on the pod under test's node before any flow dials, so kube-proxy's rules (TCP and UDP, one sync) are in place",
    hint: "kube-proxy's log and sync period; that this host reaches the node IP (firewall)",
};

/// The client pod runs.
pub const CLIENT_POD_RUNNING: Check = Check {
    name: "client-pod-running",
    invariant: "the client pod runs and its event stream has started before the flows are counted",
    hint: "--image (the client pod runs it too) and that every node has it; the client's lines in the trial's events.jsonl under --out",
};

/// The `--target` workload exists.
pub const TARGET_FOUND: Check = Check {
    name: "target-found",
    invariant: "the --target workload exists in the target namespace and has a non-empty selector, before anything is changed",
    hint: "kubectl -n <target namespace> get deployments,statefulsets; --target-namespace (default: the kubeconfig context's namespace)",
};

/// The target has something to measure.
pub const TARGET_READY: Check = Check {
    name: "target-ready",
    invariant: "the target has at least one ready replica whose endpoint is ready in its Service, before anything is changed",
    hint: "kubectl -n <target namespace> rollout status <target>; kubectl get endpointslices -l kubernetes.io/service-name=<service>",
};

/// Exactly one Service, and it selects the target.
pub const SERVICE_SELECTS_TARGET: Check = Check {
    name: "service-selects-target",
    invariant: "the Service dialled exists and its selector selects pods of the target (without --service: exactly one Service does)",
    hint: "kubectl -n <target namespace> get services -o wide; name one with --service",
};

/// The Service has the port.
pub const SERVICE_PORT: Check = Check {
    name: "service-port",
    invariant: "the Service has the --port asked for (by number or name; without --port, exactly one port) and it is TCP",
    hint: "kubectl -n <target namespace> get service <service> -o jsonpath='{.spec.ports}'",
};

/// The trigger can act on this target.
pub const TRIGGER_ALLOWED: Check = Check {
    name: "trigger-allowed",
    invariant: "the trigger can act on the target: rollout-restart needs a Deployment that is not paused or a StatefulSet that updates by RollingUpdate; drain-node needs another Ready, schedulable node for the client pod and the replacements",
    hint: "kubectl -n <target namespace> get <target> -o jsonpath='{.spec.paused}{.spec.updateStrategy}'; kubectl get nodes",
};

/// No pod of the target is terminating, so the trial's lanes are its own terminations.
pub const TARGET_NOT_TERMINATING: Check = Check {
    name: "target-not-terminating",
    invariant: "no pod of the target is terminating (deletionTimestamp set) before any flow is dialled, so every pod the trial sees terminate is one it terminated",
    hint: "kubectl -n <target namespace> get pods -l <selector> -o wide; an earlier rollout still replacing pods (kubectl rollout status <target>) or a pod held by a finalizer or a long preStop/grace period; raise --ready-timeout to wait longer",
};

/// Every endpoint of the attached Service is ready, and has stayed so for a settle period.
pub const TARGET_ENDPOINTS_READY: Check = Check {
    name: "target-endpoints-ready",
    invariant: "every pod of the target is Ready and listed ready in its Service's EndpointSlices (as many as its replicas, no other endpoint listed), unchanged for a settle period, before any flow is dialled",
    hint: "kubectl -n <target namespace> get pods,endpointslices -l kubernetes.io/service-name=<service>; raise --ready-timeout for a slow rollout",
};

/// The client pod's flows are up against the attached Service.
pub const ATTACH_FLOWS_ESTABLISHED: Check = Check {
    name: "attach-flows-established",
    invariant: "every held connection opened and, with a dial rate, a new connection was served, before t=0",
    hint: "the client's attach lines in the trial's events.jsonl under --out; that the Service's port reaches the workload (kubectl -n <target namespace> get endpointslices -l kubernetes.io/service-name=<service>); through an ingress, that its rule for --ingress-host routes to the Service (status 404: no route; the controller's log says why its provider built none)",
};

/// The observation window sees the target's pods to their end.
pub const WINDOW_COVERS_GRACE: Check = Check {
    name: "window-covers-grace",
    invariant: "the observation window is at least the target's terminationGracePeriodSeconds + 30 s, so a pod that ignores SIGTERM is seen killed at its grace boundary, never cut off",
    hint: "the workload's terminationGracePeriodSeconds and preStop hooks (kubectl -n <target namespace> get <target> -o yaml); raise --observe-timeout (observe-timeout in a policy arm) to the window the error names",
};

/// Through an ingress: its controller is found.
pub const INGRESS_LOCATED: Check = Check {
    name: "ingress-located",
    invariant: "the --ingress-service exists, has a ClusterIP and the port, and selects at least one running controller pod",
    hint: "kubectl -n <ingress namespace> get service,pods -o wide; --ingress-service is NAMESPACE/NAME[:PORT] of the controller's Service",
};

/// Through a managed ingress: the controller drainwatch deployed is up and routes the target.
pub const INGRESS_DEPLOYED: Check = Check {
    name: "ingress-deployed",
    invariant: "the Traefik drainwatch deployed in the trial's namespace (--ingress-managed) is ready and its API lists a server of the target's Service, read with the RoleBinding to drainwatch-ingress-traefik in the target's namespace",
    hint: "the controller pod's state and last log lines this failure quotes: an image the nodes cannot pull (--ingress-image; where nodes reach no registry, load it first: kind load docker-image, or make traefik-image on the project's cluster), the ClusterRole drainwatch-ingress-traefik missing (kubectl apply -f deploy/rbac-attach.yaml), the target Service with no ready endpoint (kubectl -n <target namespace> get endpointslices)",
};

/// Through an ingress: its access log names this client's requests.
pub const INGRESS_ACCESS_LOG: Check = Check {
    name: "ingress-access-log",
    invariant: "a request of this trial's client appears in a controller pod's access log, as JSON that keeps the X-Drainwatch-Request header, before the trigger",
    hint: "the controller's access log (Traefik: --accesslog=true --accesslog.format=json --accesslog.fields.headers.names.X-Drainwatch-Request=keep, on stdout, its container named traefik; Envoy Gateway: the EnvoyProxy's telemetry.accessLog as JSON with x-drainwatch-request: \"%REQ(X-DRAINWATCH-REQUEST)%\", its container named envoy; docs/ingress.md), and the route for --ingress-host (kubectl -n <ingress namespace> logs <controller pod>)",
};

/// Every named check above, so that the tests hold each to the rules on hints.
pub const ALL: [Check; 26] = [
    LOCAL_PORTS_FREE,
    PROBE_READY,
    PROBE_EVENTS_DELIVERING,
    FLOWS_DIALED,
    TCP_ESTABLISHED,
    UDP_REPLYING,
    API_REACHABLE,
    PERMISSIONS,
    IMAGE_PRESENT,
    POD_READY,
    PROBE_LOG_DELIVERING,
    WATCHES_SYNCED,
    ENDPOINT_STABLE,
    NODEPORT_PROGRAMMED,
    CLIENT_POD_RUNNING,
    TARGET_FOUND,
    TARGET_READY,
    SERVICE_SELECTS_TARGET,
    SERVICE_PORT,
    TRIGGER_ALLOWED,
    TARGET_ENDPOINTS_READY,
    ATTACH_FLOWS_ESTABLISHED,
    WINDOW_COVERS_GRACE,
    INGRESS_LOCATED,
    INGRESS_DEPLOYED,
    INGRESS_ACCESS_LOG,
];

/// What teardown has deleted by the time a failure is printed: the run's own namespace
/// (`<namespace>`) and the pods drainwatch created in it. A preflight failure is printed after
/// teardown, so a hint naming them would send the reader to objects that no longer exist; the
/// trial's events.jsonl under `--out` keeps what they showed.
const DELETED_AT_TEARDOWN: &[&str] = &[
    "<namespace>",
    "<pod>",
    "drainwatch-client",
    "drainwatch-probe",
];

/// Whether `hint` names only what still exists once teardown has run: the user's own objects
/// (`<target namespace>`), the cluster, flags and files.
pub fn names_only_what_remains(hint: &str) -> bool {
    !DELETED_AT_TEARDOWN.iter().any(|gone| hint.contains(gone))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_names_check_invariant_and_hint() {
        let f = PROBE_READY.fail("no answer within 10s");
        let s = f.to_string();
        assert!(s.starts_with("preflight check \"probe-ready\" failed: no answer within 10s\n"));
        assert!(s.contains("\n  invariant: exactly one probe"));
        assert!(s.contains("\n  check: the probe's stderr"));
        assert_eq!(
            line(&PROBE_READY, true, Duration::from_millis(42)),
            "preflight [ ok ] probe-ready                            42ms"
        );
    }

    #[test]
    fn every_hint_names_only_what_teardown_left() {
        assert_eq!(ALL.len(), 26);
        let mut names: Vec<&str> = ALL.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        // probe-events-delivering is one name for the local and the Kubernetes check.
        assert_eq!(names.len(), 25);
        let named_gone: Vec<&str> = ALL
            .iter()
            .filter(|c| !names_only_what_remains(c.hint))
            .map(|c| c.name)
            .collect();
        assert_eq!(named_gone, Vec::<&str>::new());
    }

    #[test]
    fn a_hint_naming_the_run_namespace_or_its_pods_is_caught() {
        for hint in [
            "kubectl -n <namespace> describe pod -l app.kubernetes.io/name=drainwatch-probe",
            "kubectl logs <pod> --previous",
            "kubectl describe pod drainwatch-client",
        ] {
            assert!(!names_only_what_remains(hint), "{hint}");
        }
        assert!(names_only_what_remains(
            "kubectl -n <target namespace> get services -o wide; name one with --service"
        ));
    }
}
