use super::*;
use crate::evidence::plan::client::{ClientInvocation, ProbeClient};

pub(crate) fn spec() -> WorkloadSpec {
    WorkloadSpec {
        namespace: "drainwatch-x".into(),
        instance: "drainwatch-x".into(),
        run: "20261201-124315-0a1b2c3d".into(),
        image: "img:1".into(),
        replicas: 1,
        behavior: DrainBehavior::Drain,
        drain_max_seconds: 25,
        exit_now_force_rst: true,
        grace_period_seconds: 30,
        prestop_sleep_seconds: 0,
        readiness_period_seconds: 1,
        tcp_port: 7001,
        udp_port: 7002,
        node_port: false,
        pdb: false,
        probe_env: vec![],
        flows: 20,
        heartbeat_ms: 2000,
    }
}

#[test]
fn pods_ask_for_cpu_in_proportion_to_the_flows_they_hold() {
    assert_eq!(cpu_request_millis(20), 10, "the floor");
    assert_eq!(cpu_request_millis(4_000), 200);
    assert_eq!(cpu_request_millis(200_000), 1000, "never more than a core");
    let cpu = |r: &ResourceRequirements| r.requests.as_ref().unwrap()["cpu"].0.clone();
    let mut s = spec();
    (s.flows, s.replicas) = (18_000, 2);
    let d = deployment(&s);
    let c = &d.spec.unwrap().template.spec.unwrap().containers[0];
    assert_eq!(
        cpu(c.resources.as_ref().unwrap()),
        "450m",
        "each replica's share"
    );
    let mut c = client_spec();
    (probe(&mut c).tcp_flows, probe(&mut c).udp_flows) = (4_500, 4_500);
    let p = client_pod(&c);
    let k = &p.spec.unwrap().containers[0];
    assert_eq!(cpu(k.resources.as_ref().unwrap()), "450m");
}

#[test]
fn deployment_carries_the_trial_settings() {
    let mut s = spec();
    s.prestop_sleep_seconds = 5;
    s.readiness_period_seconds = 2;
    let d = deployment(&s);
    let pod = d.spec.unwrap().template.spec.unwrap();
    assert_eq!(pod.termination_grace_period_seconds, Some(30));
    let c = &pod.containers[0];
    assert_eq!(c.name, "probe");
    assert_eq!(c.image_pull_policy.as_deref(), Some("IfNotPresent"));
    let env: BTreeMap<_, _> = c
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.as_str(), e.value.clone()))
        .collect();
    assert_eq!(env["DRAIN_BEHAVIOR"].as_deref(), Some("drain"));
    assert_eq!(env["DRAIN_MAX_SECONDS"].as_deref(), Some("25"));
    assert_eq!(
        env["PROBE_HEARTBEAT_MS"].as_deref(),
        Some("2000"),
        "the probe heartbeats at the trial's interval"
    );
    assert_eq!(
        env["POD_NAME"], None,
        "POD_NAME comes from the downward API"
    );
    let ready = c.readiness_probe.as_ref().unwrap();
    assert_eq!(ready.period_seconds, Some(2));
    assert_eq!(
        (ready.failure_threshold, ready.timeout_seconds),
        (Some(1), Some(3)),
        "one failure flips it; a loaded kubelet gets 3 s for the request"
    );
    let sleep = c.lifecycle.as_ref().unwrap().pre_stop.as_ref().unwrap();
    assert_eq!(sleep.sleep.as_ref().unwrap().seconds, 5);
    let sc = c.security_context.as_ref().unwrap();
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert!(
        deployment(&spec())
            .spec
            .unwrap()
            .template
            .spec
            .unwrap()
            .containers[0]
            .lifecycle
            .is_none()
    );
}

#[test]
fn yaml_has_every_object_labelled_and_no_pdb_unless_asked() {
    let y = render_yaml(&spec(), true).unwrap();
    assert_eq!(y.matches("---\n").count(), 3);
    for doc in y.split("---\n").filter(|d| !d.is_empty()) {
        assert!(
            doc.contains("app.kubernetes.io/managed-by: drainwatch"),
            "{doc}"
        );
    }
    assert!(y.contains("pod-security.kubernetes.io/enforce: restricted"));
    assert!(y.contains("type: ClusterIP"));
    assert!(!y.contains("PodDisruptionBudget"));
    let mut s = spec();
    s.pdb = true;
    s.node_port = true;
    let y = render_yaml(&s, false).unwrap();
    assert!(y.contains("kind: PodDisruptionBudget") && y.contains("maxUnavailable: 0"));
    assert!(y.contains("type: NodePort"));
    assert!(!y.contains("kind: Namespace"));
}

/// The probe client of `c`, to change its flows.
fn probe(c: &mut ClientSpec) -> &mut ProbeClient {
    match &mut c.invocation {
        ClientInvocation::Probe(p) => p,
        ClientInvocation::Attach(_) => panic!("client_spec() is a probe client"),
    }
}

fn client_spec() -> ClientSpec {
    ClientSpec {
        name: "drainwatch-client".into(),
        namespace: "ns".into(),
        instance: "ns".into(),
        run: "20261201-124315-0a1b2c3d".into(),
        image: "img:1".into(),
        invocation: ClientInvocation::Probe(ProbeClient {
            host: "10.96.0.10".into(),
            tcp_port: 7001,
            udp_port: 7002,
            tcp_flows: 3,
            udp_flows: 2,
            first_tcp_flow: 1,
            first_udp_flow: 1,
            interval_ms: 500,
            flow_timeout_ms: 10_000,
            udp_silence_datagrams: 6,
            duration_seconds: 600,
            clock_extension: true,
        }),
        ca_config_map: None,
        node: None,
        spread: false,
        host_alias: None,
    }
}

#[test]
fn client_pod_streams_events_against_the_cluster_ip() {
    let p = client_pod(&client_spec());
    let pod = p.spec.as_ref().unwrap();
    assert_eq!(pod.volumes, None, "no CA without --tls --ca-file");
    assert_eq!(pod.containers[0].volume_mounts, None);
    // A probe client stops within 10 s (an attach client's request timeout is added).
    assert_eq!(pod.termination_grace_period_seconds, Some(10));
    let args = p.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap()
        .join(" ");
    assert_eq!(
        args,
        "client --events-stdout --host 10.96.0.10 --tcp-port 7001 --udp-port 7002 --tcp-flows 3 --udp-flows 2 --first-tcp-flow 1 --first-udp-flow 1 --interval 500ms --flow-timeout 10000ms --udp-silence-datagrams 6 --duration 600s --clock-extension"
    );
}

#[test]
fn a_managed_ingress_reaches_the_client_pod_by_its_name_in_etc_hosts_alone() {
    assert_eq!(client_pod(&client_spec()).spec.unwrap().host_aliases, None);
    let mut s = client_spec();
    s.host_alias = Some(("10.96.0.77".into(), "drainwatch-ingress.ns.svc".into()));
    let aliases = client_pod(&s).spec.unwrap().host_aliases.unwrap();
    assert_eq!(aliases.len(), 1);
    assert_eq!(aliases[0].ip, "10.96.0.77");
    assert_eq!(
        aliases[0].hostnames.as_deref(),
        Some(&["drainwatch-ingress.ns.svc".to_string()][..])
    );
}

#[test]
fn a_shard_pod_is_named_for_its_shard_holds_its_slice_and_keeps_apart_when_spread() {
    let mut s = client_spec();
    s.name = "drainwatch-client-2".into();
    (probe(&mut s).first_tcp_flow, probe(&mut s).first_udp_flow) = (4, 3);
    let p = client_pod(&s);
    assert_eq!(p.metadata.name.as_deref(), Some("drainwatch-client-2"));
    // The component label stays the client's: the pod watch knows it as a client pod.
    assert_eq!(
        p.metadata.labels.as_ref().unwrap()["app.kubernetes.io/name"],
        "drainwatch-client"
    );
    let spec = p.spec.unwrap();
    let args = spec.containers[0].args.clone().unwrap().join(" ");
    assert!(
        args.contains("--first-tcp-flow 4 --first-udp-flow 3"),
        "{args}"
    );
    let apart = |spec: &k8s_openapi::api::core::v1::PodSpec| {
        spec.affinity
            .as_ref()
            .unwrap()
            .pod_anti_affinity
            .as_ref()
            .unwrap()
            .preferred_during_scheduling_ignored_during_execution
            .clone()
            .unwrap()
            .iter()
            .map(|t| {
                t.pod_affinity_term
                    .label_selector
                    .as_ref()
                    .unwrap()
                    .match_labels
                    .as_ref()
                    .unwrap()["app.kubernetes.io/name"]
                    .clone()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(apart(&spec), vec!["drainwatch-probe"]);
    s.spread = true;
    assert_eq!(
        apart(&client_pod(&s).spec.unwrap()),
        vec!["drainwatch-probe", "drainwatch-client"]
    );
    s.node = Some("node2".into());
    let pinned = client_pod(&s).spec.unwrap();
    assert!(pinned.affinity.is_none());
    assert_eq!(
        pinned.node_selector.unwrap()["kubernetes.io/hostname"],
        "node2"
    );
}

#[test]
fn the_client_ca_is_a_marked_configmap_mounted_read_only() {
    let run = "20261201-124315-0a1b2c3d";
    let cm = client_ca("ns", "inst", run, "-----BEGIN CERTIFICATE-----\n");
    assert_eq!(cm.metadata.name.as_deref(), Some("drainwatch-client-ca"));
    assert_eq!(cm.metadata.namespace.as_deref(), Some("ns"));
    // Marked like the run's other objects: teardown and `cleanup --run` select it.
    assert!(marked_by(cm.metadata.labels.as_ref(), run));
    let l = cm.metadata.labels.as_ref().unwrap();
    assert_eq!(l["app.kubernetes.io/instance"], "inst");
    assert_eq!(
        cm.data.as_ref().unwrap()["ca.crt"],
        "-----BEGIN CERTIFICATE-----\n"
    );
    assert_eq!(cm.immutable, Some(true));

    let mut s = client_spec();
    s.ca_config_map = Some("drainwatch-client-ca".into());
    let pod = client_pod(&s).spec.unwrap();
    let vols = pod.volumes.unwrap();
    assert_eq!(vols.len(), 1);
    let src = vols[0].config_map.as_ref().unwrap();
    assert_eq!(src.name, "drainwatch-client-ca");
    assert_eq!(src.optional, Some(false));
    let items = src.items.as_ref().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(
        (items[0].key.as_str(), items[0].path.as_str()),
        ("ca.crt", "ca.crt")
    );
    let mounts = pod.containers[0].volume_mounts.clone().unwrap();
    assert_eq!(mounts.len(), 1);
    assert_eq!(mounts[0].name, vols[0].name);
    assert_eq!(mounts[0].mount_path, "/etc/drainwatch/ca");
    assert_eq!(mounts[0].read_only, Some(true));
    assert_eq!(client_ca_path(), "/etc/drainwatch/ca/ca.crt");
    // The restricted profile still holds with the mount.
    let sc = pod.containers[0].security_context.as_ref().unwrap();
    assert_eq!(sc.read_only_root_filesystem, Some(true));
}

#[test]
fn memory_limits_grow_with_the_flows_a_pod_holds() {
    assert_eq!(PROBE_MEMORY.mib(20), 128, "the floor");
    assert_eq!(CLIENT_MEMORY.mib(20), 256, "the floor");
    assert_eq!(PROBE_MEMORY.mib(36_000), 32 + 36 * 4);
    assert_eq!(CLIENT_MEMORY.mib(18_000), 32 + 18 * 14);
    let limit = |r: &ResourceRequirements| r.limits.as_ref().unwrap()["memory"].0.clone();
    let mut s = spec();
    (s.flows, s.replicas) = (72_000, 2);
    let d = deployment(&s);
    let c = &d.spec.unwrap().template.spec.unwrap().containers[0];
    assert_eq!(
        limit(c.resources.as_ref().unwrap()),
        "176Mi",
        "each replica's share"
    );
    let mut c = client_spec();
    (probe(&mut c).tcp_flows, probe(&mut c).udp_flows) = (9_000, 9_000);
    let p = client_pod(&c);
    let k = &p.spec.unwrap().containers[0];
    assert_eq!(limit(k.resources.as_ref().unwrap()), "284Mi");
}
