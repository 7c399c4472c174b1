use super::*;

fn deployment(json: serde_json::Value) -> Deployment {
    serde_json::from_value(json).expect("a Deployment")
}

#[test]
fn a_deployment_with_a_sleep_exec_prestop_and_percent_strategy() {
    let d = deployment(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {"spec": {
                "terminationGracePeriodSeconds": 45,
                "containers": [
                    {"name": "app",
                     "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "sleep 5"]}}},
                     "readinessProbe": {"httpGet": {"path": "/", "port": 80},
                                        "periodSeconds": 2, "failureThreshold": 3}},
                    {"name": "sidecar",
                     "lifecycle": {"preStop": {"httpGet": {"path": "/quit", "port": 9}}}}
                ]}}
        }
    }));
    let s = of_deployment(&d, SettingsSource::Workload);
    assert_eq!(s.workload, "deployment/web");
    assert_eq!(s.termination_grace_period_seconds, Some(45));
    let cs = s.containers.as_ref().expect("containers");
    assert_eq!(cs.len(), 2);
    assert_eq!(
        cs[0].pre_stop,
        Some(PreStop {
            kind: PreStopKind::Exec,
            sleep_seconds: Some(5)
        })
    );
    assert_eq!(
        cs[0]
            .readiness_probe
            .as_ref()
            .and_then(ReadinessProbe::worst_case_detection_ms),
        Some(6000)
    );
    assert_eq!(
        cs[1].pre_stop.as_ref().map(|p| p.kind),
        Some(PreStopKind::HttpGet)
    );
    assert_eq!(cs[1].readiness_probe, None);
    // An httpGet hook's duration is unknown, so the workload's preStop delay is too.
    assert_eq!(s.prestop_seconds(), None);
    let r = s.rollout.as_ref().expect("rollout");
    assert_eq!(
        (r.max_surge_pods, r.max_unavailable_pods),
        (Some(1), Some(0))
    );
    assert_eq!(r.max_surge, Some(IntOrPercent::Percent("25%".into())));
    assert_eq!(
        s.pdbs, None,
        "PDBs are matched by read, not by the translation"
    );
}

#[test]
fn a_statefulset_records_its_partition_and_one_at_a_time() {
    let st: StatefulSet = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3, "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}},
            "template": {"spec": {"containers": [
                {"name": "db", "lifecycle": {"preStop": {"sleep": {"seconds": 3}}}}
            ]}}
        }
    }))
    .expect("a StatefulSet");
    let s = of_statefulset(&st, SettingsSource::Workload);
    assert_eq!(s.workload, "statefulset/db");
    assert_eq!(
        s.termination_grace_period_seconds, None,
        "not set: null, not 0"
    );
    assert_eq!(s.prestop_seconds(), Some(3));
    let r = s.rollout.expect("rollout");
    assert_eq!(r.strategy, RolloutStrategy::RollingUpdate);
    assert_eq!((r.partition, r.max_unavailable_pods), (Some(1), Some(1)));
}

#[test]
fn exec_sleeps_are_recognised_and_other_commands_are_not() {
    let v = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(exec_sleep(&v(&["sleep", "10"])), Some(10));
    assert_eq!(exec_sleep(&v(&["/bin/sleep", "2.5"])), Some(2));
    assert_eq!(exec_sleep(&v(&["/bin/sh", "-c", "sleep 7s"])), Some(7));
    assert_eq!(
        exec_sleep(&v(&["sh", "-c", "nginx -s quit; sleep 5"])),
        None
    );
    assert_eq!(exec_sleep(&v(&["/app/shutdown"])), None);
}

#[test]
fn only_pdbs_selecting_one_of_the_pods_match() {
    let pdb = |name: &str, sel: serde_json::Value, allowed: i32| -> PodDisruptionBudget {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "spec": {"selector": sel, "minAvailable": 2},
            "status": {"disruptionsAllowed": allowed, "currentHealthy": 2,
                       "desiredHealthy": 2, "expectedPods": 2}
        }))
        .expect("a PDB")
    };
    let all = [
        pdb(
            "b-web",
            serde_json::json!({"matchLabels": {"app": "web"}}),
            0,
        ),
        pdb(
            "other",
            serde_json::json!({"matchLabels": {"app": "db"}}),
            1,
        ),
        pdb(
            "a-expr",
            serde_json::json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}),
            1,
        ),
    ];
    let pods: BTreeMap<String, BTreeMap<String, String>> = [(
        "web-1".to_string(),
        [("app".to_string(), "web".to_string())].into(),
    )]
    .into();
    let m = matching_pdbs(&all, &pods);
    let names: Vec<&str> = m.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["a-expr", "b-web"]);
    assert_eq!(m[1].disruptions_allowed, Some(0));
    assert_eq!(m[1].min_available, Some(IntOrPercent::Int(2)));
    assert_eq!(m[1].max_unavailable, None);
}
