//! The workload's termination settings (`evidence::settings`): read from a Deployment or
//! StatefulSet and the PodDisruptionBudgets that select its pods at the start of an attach
//! trial, or taken from the objects drainwatch renders for a probe trial. The translation from
//! API objects is pure and tested without a cluster; [`read`] does the I/O, and what it cannot
//! read is null with a sentence in `unread`, never a made-up 0.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Container, PodTemplateSpec};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::Api;
use kube::api::ListParams;

use crate::evidence::plan::attach::WorkloadKind;
use crate::evidence::settings::{
    ContainerSettings, IntOrPercent, PdbSettings, PreStop, PreStopKind, ReadinessProbe,
    RolloutSettings, RolloutStrategy, SettingsSource, TerminationSettings, resolve_rolling,
};

use super::target::Workload;

fn int_or(v: &IntOrString) -> IntOrPercent {
    match v {
        IntOrString::Int(n) => IntOrPercent::Int(*n),
        IntOrString::String(s) => IntOrPercent::Percent(s.clone()),
    }
}

fn secs(v: Option<i64>) -> Option<u32> {
    v.and_then(|v| u32::try_from(v).ok())
}

fn count(v: Option<i32>) -> Option<u32> {
    v.and_then(|v| u32::try_from(v).ok())
}

/// The seconds of an exec preStop that is a plain sleep: `sleep N`, or a shell running only
/// `sleep N` (`sh -c "sleep 5"`); None for anything else, whose duration the spec cannot say.
fn exec_sleep(cmd: &[String]) -> Option<u32> {
    let words: Vec<&str> = match cmd {
        [sh, flag, script] if sh.ends_with("sh") && flag == "-c" => {
            script.split_whitespace().collect()
        }
        _ => cmd.iter().map(String::as_str).collect(),
    };
    match words.as_slice() {
        [sleep, n] if sleep.rsplit('/').next() == Some("sleep") => n
            .strip_suffix('s')
            .unwrap_or(n)
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0)
            // Rounded down: the hook holds SIGTERM back at least this long.
            .map(|s| s.floor() as u32),
        _ => None,
    }
}

fn pre_stop(c: &Container) -> Option<PreStop> {
    let h = c.lifecycle.as_ref()?.pre_stop.as_ref()?;
    Some(if let Some(s) = &h.sleep {
        PreStop {
            kind: PreStopKind::Sleep,
            sleep_seconds: secs(Some(s.seconds)),
        }
    } else if let Some(e) = &h.exec {
        PreStop {
            kind: PreStopKind::Exec,
            sleep_seconds: e.command.as_deref().and_then(exec_sleep),
        }
    } else if h.http_get.is_some() {
        PreStop {
            kind: PreStopKind::HttpGet,
            sleep_seconds: None,
        }
    } else {
        PreStop {
            kind: PreStopKind::TcpSocket,
            sleep_seconds: None,
        }
    })
}

fn container(c: &Container) -> ContainerSettings {
    ContainerSettings {
        name: c.name.clone(),
        pre_stop: pre_stop(c),
        // The API server defaults periodSeconds (10) and failureThreshold (3) on write, so a
        // probe read back carries both; a rendered one may not, and then they stay null.
        readiness_probe: c.readiness_probe.as_ref().map(|p| ReadinessProbe {
            period_seconds: count(p.period_seconds),
            failure_threshold: count(p.failure_threshold),
        }),
    }
}

fn from_template(
    source: SettingsSource,
    workload: String,
    t: &PodTemplateSpec,
    rollout: RolloutSettings,
) -> TerminationSettings {
    let spec = t.spec.as_ref();
    TerminationSettings {
        source,
        workload,
        termination_grace_period_seconds: secs(
            spec.and_then(|s| s.termination_grace_period_seconds),
        ),
        containers: spec.map(|s| s.containers.iter().map(container).collect()),
        rollout: Some(rollout),
        pdbs: None,
        unread: vec![],
    }
}

/// The settings of Deployment `d` (PDBs not yet matched: `pdbs` is null).
pub fn of_deployment(d: &Deployment, source: SettingsSource) -> TerminationSettings {
    let name = d.metadata.name.clone().unwrap_or_default();
    let spec = d.spec.clone().unwrap_or_default();
    let replicas = spec.replicas.unwrap_or(1);
    let strategy = spec.strategy.unwrap_or_default();
    let recreate = strategy.type_.as_deref() == Some("Recreate");
    let ru = strategy.rolling_update.unwrap_or_default();
    // Unset means the API's defaults (25% each); a read-back object always has them set.
    let surge = (!recreate).then(|| {
        ru.max_surge
            .as_ref()
            .map_or(IntOrPercent::Percent("25%".into()), int_or)
    });
    let unavailable = (!recreate).then(|| {
        ru.max_unavailable
            .as_ref()
            .map_or(IntOrPercent::Percent("25%".into()), int_or)
    });
    let (s, u) = resolve_rolling(replicas, surge.as_ref(), unavailable.as_ref());
    let rollout = RolloutSettings {
        strategy: if recreate {
            RolloutStrategy::Recreate
        } else {
            RolloutStrategy::RollingUpdate
        },
        replicas: Some(replicas),
        max_surge: surge,
        max_unavailable: unavailable,
        max_surge_pods: s,
        // Recreate takes every pod down before the new ones start.
        max_unavailable_pods: if recreate { Some(replicas) } else { u },
        partition: None,
    };
    from_template(
        source,
        format!("deployment/{name}"),
        &spec.template,
        rollout,
    )
}

/// The settings of StatefulSet `s` (PDBs not yet matched).
pub fn of_statefulset(s: &StatefulSet, source: SettingsSource) -> TerminationSettings {
    let name = s.metadata.name.clone().unwrap_or_default();
    let spec = s.spec.clone().unwrap_or_default();
    let replicas = spec.replicas.unwrap_or(1);
    let us = spec.update_strategy.unwrap_or_default();
    let on_delete = us.type_.as_deref() == Some("OnDelete");
    let ru = us.rolling_update.unwrap_or_default();
    // A StatefulSet replaces one pod at a time unless maxUnavailable (beta) says more; it
    // never surges.
    let unavailable = (!on_delete).then(|| {
        ru.max_unavailable
            .as_ref()
            .map_or(IntOrPercent::Int(1), int_or)
    });
    let rollout = RolloutSettings {
        strategy: if on_delete {
            RolloutStrategy::OnDelete
        } else {
            RolloutStrategy::RollingUpdate
        },
        replicas: Some(replicas),
        max_surge: None,
        max_unavailable_pods: unavailable
            .as_ref()
            .and_then(|u| crate::evidence::settings::resolve(u, replicas, false))
            .map(|u| u.max(1)),
        max_unavailable: unavailable,
        max_surge_pods: (!on_delete).then_some(0),
        partition: (!on_delete).then(|| ru.partition.unwrap_or(0)),
    };
    from_template(
        source,
        format!("statefulset/{name}"),
        &spec.template,
        rollout,
    )
}

/// One PDB as recorded.
pub fn of_pdb(p: &PodDisruptionBudget) -> PdbSettings {
    let spec = p.spec.as_ref();
    let st = p.status.as_ref();
    PdbSettings {
        name: p.metadata.name.clone().unwrap_or_default(),
        min_available: spec.and_then(|s| s.min_available.as_ref()).map(int_or),
        max_unavailable: spec.and_then(|s| s.max_unavailable.as_ref()).map(int_or),
        disruptions_allowed: st.map(|s| s.disruptions_allowed),
        current_healthy: st.map(|s| s.current_healthy),
        desired_healthy: st.map(|s| s.desired_healthy),
        expected_pods: st.map(|s| s.expected_pods),
    }
}

/// Whether label selector `s` selects `labels` (policy/v1: an empty selector selects every
/// pod of the namespace; an expression with an unknown operator selects nothing).
pub fn selector_matches(s: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let ml = s
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let me = s.match_expressions.iter().flatten().all(|e| {
        let vals = e.values.as_deref().unwrap_or_default();
        let has = labels.get(&e.key);
        match e.operator.as_str() {
            "In" => has.is_some_and(|v| vals.contains(v)),
            "NotIn" => has.is_none_or(|v| !vals.contains(v)),
            "Exists" => has.is_some(),
            "DoesNotExist" => has.is_none(),
            _ => false,
        }
    });
    ml && me
}

/// The PDBs of `all` that select at least one of `pods`, sorted by name.
pub fn matching_pdbs<'a>(
    all: impl IntoIterator<Item = &'a PodDisruptionBudget>,
    pods: &BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<PdbSettings> {
    let mut out: Vec<PdbSettings> = all
        .into_iter()
        .filter(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.selector.as_ref())
                .is_some_and(|sel| pods.values().any(|l| selector_matches(sel, l)))
        })
        .map(of_pdb)
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// What drainwatch deploys for a probe trial of `spec`, from the very objects it applies; the
/// PDB has no status yet, so its disruptionsAllowed is null.
pub fn planned(spec: &super::manifests::WorkloadSpec) -> TerminationSettings {
    let mut s = of_deployment(&super::manifests::deployment(spec), SettingsSource::Plan);
    s.pdbs = Some(super::manifests::pdb(spec).iter().map(of_pdb).collect());
    s
}

/// Reads the settings of `w` and its PDBs now, at the start of an attach trial. Never fails:
/// what cannot be read stays null and is named in `unread`.
pub async fn read(client: &kube::Client, w: &Workload) -> TerminationSettings {
    let ns = &w.namespace;
    let mut s = match w.kind {
        WorkloadKind::Deployment => {
            let api: Api<Deployment> = Api::namespaced(client.clone(), ns);
            api.get(&w.name)
                .await
                .map(|d| of_deployment(&d, SettingsSource::Workload))
                .map_err(|e| format!("deployment {ns}/{}: {e}", w.name))
        }
        WorkloadKind::StatefulSet => {
            let api: Api<StatefulSet> = Api::namespaced(client.clone(), ns);
            api.get(&w.name)
                .await
                .map(|d| of_statefulset(&d, SettingsSource::Workload))
                .map_err(|e| format!("statefulset {ns}/{}: {e}", w.name))
        }
    }
    .unwrap_or_else(|why| TerminationSettings {
        source: SettingsSource::Workload,
        workload: format!("{}/{}", w.kind.as_str(), w.name),
        termination_grace_period_seconds: None,
        containers: None,
        rollout: None,
        pdbs: None,
        unread: vec![format!("the workload could not be read ({why})")],
    });
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), ns);
    match pdbs.list(&ListParams::default()).await {
        Ok(l) => s.pdbs = Some(matching_pdbs(&l.items, &w.pods)),
        Err(e) => s.unread.push(format!(
            "the PodDisruptionBudgets of namespace {ns} could not be listed ({e})"
        )),
    }
    s
}

#[cfg(test)]
mod tests;
