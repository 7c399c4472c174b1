//! The workload's termination settings as recorded at the start of a trial (schema 3.1,
//! `trial.termination_settings`): what findings cite beside the measured numbers.
//!
//! An attach trial reads them from the user's Deployment or StatefulSet and the
//! PodDisruptionBudgets that select its pods; a probe trial records what drainwatch deployed.
//! They travel in one `termination_settings_recorded` event line, so a report stays a function
//! of its events and a replay of an older recording, which has no such line, leaves the field
//! absent. A value that could not be read is null, never 0.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Where the settings were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SettingsSource {
    /// From the workload object in the API at the start of the trial (attach).
    Workload,
    /// From the objects drainwatch rendered and applied (probe trials).
    Plan,
}

/// The kind of a preStop hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PreStopKind {
    /// `exec` (a command in the container).
    Exec,
    /// The kubelet's own `sleep` action.
    Sleep,
    /// `httpGet`.
    HttpGet,
    /// `tcpSocket` (deprecated; the kubelet does not run it).
    TcpSocket,
}

impl PreStopKind {
    /// The name written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exec => "exec",
            Self::Sleep => "sleep",
            Self::HttpGet => "http-get",
            Self::TcpSocket => "tcp-socket",
        }
    }
}

/// A container's preStop hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreStop {
    /// Its kind.
    pub kind: PreStopKind,
    /// How long it delays SIGTERM, seconds, when that is known from the spec (a `sleep` action,
    /// or an exec of `sleep N`); null otherwise (an exec of anything else, an httpGet).
    pub sleep_seconds: Option<u32>,
}

impl fmt::Display for PreStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind, self.sleep_seconds) {
            (PreStopKind::Sleep, Some(s)) => write!(f, "sleep {s} s"),
            (PreStopKind::Exec, Some(s)) => write!(f, "exec `sleep {s}` ({s} s)"),
            (k, _) => write!(f, "{} (duration not known from the spec)", k.as_str()),
        }
    }
}

/// A container's readiness probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadinessProbe {
    /// periodSeconds.
    pub period_seconds: Option<u32>,
    /// failureThreshold.
    pub failure_threshold: Option<u32>,
}

impl ReadinessProbe {
    /// The longest a failing probe takes to mark the pod not ready, ms: period × threshold.
    pub fn worst_case_detection_ms(&self) -> Option<u64> {
        Some(u64::from(self.period_seconds?) * u64::from(self.failure_threshold?) * 1000)
    }
}

/// One container of the pod template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContainerSettings {
    /// Container name.
    pub name: String,
    /// Its preStop hook; null when it has none.
    pub pre_stop: Option<PreStop>,
    /// Its readiness probe; null when it has none.
    pub readiness_probe: Option<ReadinessProbe>,
}

/// How the controller replaces pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RolloutStrategy {
    /// Deployment or StatefulSet RollingUpdate.
    RollingUpdate,
    /// Deployment Recreate: every old pod goes before any new one starts.
    Recreate,
    /// StatefulSet OnDelete: pods are replaced only when deleted.
    OnDelete,
}

impl RolloutStrategy {
    /// The name written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RollingUpdate => "rolling-update",
            Self::Recreate => "recreate",
            Self::OnDelete => "on-delete",
        }
    }
}

/// An integer or a percentage, as the API spells `maxSurge`, `minAvailable` and the like.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum IntOrPercent {
    /// A count of pods.
    Int(i32),
    /// A percentage of the replicas, e.g. `25%`.
    Percent(String),
}

impl fmt::Display for IntOrPercent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Int(n) => write!(f, "{n}"),
            Self::Percent(p) => f.write_str(p),
        }
    }
}

/// The rollout strategy of the workload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RolloutSettings {
    /// The strategy type.
    pub strategy: RolloutStrategy,
    /// spec.replicas.
    pub replicas: Option<i32>,
    /// maxSurge as written (Deployment RollingUpdate); null otherwise.
    pub max_surge: Option<IntOrPercent>,
    /// maxUnavailable as written (RollingUpdate); null otherwise.
    pub max_unavailable: Option<IntOrPercent>,
    /// maxSurge resolved against the replicas (a percentage rounds up), pods.
    pub max_surge_pods: Option<i32>,
    /// maxUnavailable resolved against the replicas (a percentage rounds down; 1 when both
    /// resolve to 0, as the Deployment controller does), pods.
    pub max_unavailable_pods: Option<i32>,
    /// StatefulSet RollingUpdate partition; null for a Deployment.
    pub partition: Option<i32>,
}

/// One PodDisruptionBudget whose selector matches the workload's pods.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PdbSettings {
    /// Its name.
    pub name: String,
    /// spec.minAvailable; null when not set.
    pub min_available: Option<IntOrPercent>,
    /// spec.maxUnavailable; null when not set.
    pub max_unavailable: Option<IntOrPercent>,
    /// status.disruptionsAllowed at the start of the trial; null when not read (a rendered
    /// object has no status).
    pub disruptions_allowed: Option<i32>,
    /// status.currentHealthy.
    pub current_healthy: Option<i32>,
    /// status.desiredHealthy.
    pub desired_healthy: Option<i32>,
    /// status.expectedPods.
    pub expected_pods: Option<i32>,
}

/// `trial.termination_settings`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TerminationSettings {
    /// Where they were read.
    pub source: SettingsSource,
    /// `deployment/NAME` or `statefulset/NAME`.
    pub workload: String,
    /// terminationGracePeriodSeconds of the pod template.
    pub termination_grace_period_seconds: Option<u32>,
    /// The pod template's containers, in spec order; null when the workload could not be read.
    pub containers: Option<Vec<ContainerSettings>>,
    /// The rollout strategy; null when the workload could not be read.
    pub rollout: Option<RolloutSettings>,
    /// The PDBs selecting the pods (`[]`: none); null when they could not be listed.
    pub pdbs: Option<Vec<PdbSettings>>,
    /// What could not be read, one sentence each; `[]` when everything was.
    pub unread: Vec<String>,
}

/// Seconds an observation window needs beyond a pod's grace period: the kubelet's one-off 2 s
/// for a preStop that outlasts the grace (then SIGKILL: a longer preStop does not extend the
/// pod's life), the exit's and the endpoint's removal's way through the watches, and room for a
/// rollout that deletes its old pods a few seconds apart.
pub const WINDOW_BEYOND_GRACE_SECONDS: u32 = 30;

/// Why the window cannot see a terminated pod's own end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{workload} declares {what}; a SIGKILL at its grace boundary would come after the observation window of {window}s closes and be cut off: set --observe-timeout (observe-timeout in a policy arm) to {needed} or more, or shorten the workload's grace period"
)]
pub struct GraceOutsideWindow {
    /// `deployment/NAME`.
    pub workload: String,
    /// What the pods declare, in words.
    pub what: String,
    /// The trial's window, seconds.
    pub window: u32,
    /// The window that would see the end, seconds.
    pub needed: u32,
}

impl TerminationSettings {
    /// The window, seconds, in which a pod of the workload that ignores SIGTERM is still seen
    /// to exit (its SIGKILL at the grace boundary); `None` when the grace period was not read.
    pub fn window_needed_seconds(&self) -> Option<u32> {
        let grace = self.termination_grace_period_seconds?;
        Some(grace.saturating_add(WINDOW_BEYOND_GRACE_SECONDS))
    }

    /// Whether an observation window of `window` seconds sees every terminated pod's end,
    /// SIGKILL at the grace boundary included.
    pub fn covered_by(&self, window: u32) -> Result<(), GraceOutsideWindow> {
        let Some(needed) = self.window_needed_seconds().filter(|n| *n > window) else {
            return Ok(());
        };
        let grace = self.termination_grace_period_seconds.unwrap_or(0);
        let what = format!("terminationGracePeriodSeconds {grace}");
        Err(GraceOutsideWindow {
            workload: self.workload.clone(),
            what,
            window,
            needed,
        })
    }

    /// The longest preStop delay known from the spec over the containers, seconds; `Some(0)`
    /// when no container has a hook; `None` when a hook's duration is unknown or the
    /// containers were not read.
    pub fn prestop_seconds(&self) -> Option<u32> {
        let cs = self.containers.as_ref()?;
        let mut max = 0;
        for c in cs {
            if let Some(p) = &c.pre_stop {
                max = max.max(p.sleep_seconds?);
            }
        }
        Some(max)
    }

    /// The preStop hooks as one phrase: "none", or each container's hook.
    pub fn prestop_phrase(&self) -> String {
        let Some(cs) = self.containers.as_ref() else {
            return "not read".into();
        };
        let hooks: Vec<String> = cs
            .iter()
            .filter_map(|c| c.pre_stop.as_ref().map(|p| format!("{p} on {}", c.name)))
            .collect();
        if hooks.is_empty() {
            "none".into()
        } else {
            hooks.join(", ")
        }
    }

    /// One line for the timeline's detail.
    pub fn describe(&self) -> String {
        let grace = self
            .termination_grace_period_seconds
            .map_or_else(|| "not read".to_string(), |g| format!("{g} s"));
        let rollout = self.rollout.as_ref().map_or_else(
            || "not read".to_string(),
            |r| {
                let n = |v: Option<i32>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
                format!(
                    "{} maxSurge {} maxUnavailable {} partition {}",
                    r.strategy.as_str(),
                    n(r.max_surge_pods),
                    n(r.max_unavailable_pods),
                    n(r.partition)
                )
            },
        );
        let pdbs = self.pdbs.as_ref().map_or_else(
            || "not read".to_string(),
            |p| {
                if p.is_empty() {
                    "none".to_string()
                } else {
                    p.iter()
                        .map(|b| {
                            format!(
                                "{} (disruptionsAllowed {})",
                                b.name,
                                b.disruptions_allowed
                                    .map_or_else(|| "not read".to_string(), |d| d.to_string())
                            )
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            },
        );
        format!(
            "{} ({}): terminationGracePeriodSeconds {grace}; preStop {}; rollout {rollout}; PDBs {pdbs}",
            self.workload,
            match self.source {
                SettingsSource::Workload => "read from the workload",
                SettingsSource::Plan => "as deployed by drainwatch",
            },
            self.prestop_phrase()
        )
    }
}

/// maxSurge / maxUnavailable resolved against `replicas` as the Deployment controller does
/// (surge rounds up, unavailable down; both 0 makes unavailable 1).
pub fn resolve_rolling(
    replicas: i32,
    surge: Option<&IntOrPercent>,
    unavailable: Option<&IntOrPercent>,
) -> (Option<i32>, Option<i32>) {
    let s = surge.and_then(|v| resolve(v, replicas, true));
    let u = unavailable.and_then(|v| resolve(v, replicas, false));
    match (s, u) {
        (Some(0), Some(0)) => (Some(0), Some(1)),
        other => other,
    }
}

/// One value resolved against `replicas`; None when the percentage does not parse.
pub fn resolve(v: &IntOrPercent, replicas: i32, round_up: bool) -> Option<i32> {
    match v {
        IntOrPercent::Int(n) => Some(*n),
        IntOrPercent::Percent(p) => {
            let pct: i64 = p.strip_suffix('%')?.trim().parse().ok()?;
            let num = pct * i64::from(replicas);
            let r = if round_up {
                (num + 99).div_euclid(100)
            } else {
                num.div_euclid(100)
            };
            i32::try_from(r).ok()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_resolve_as_the_deployment_controller_does() {
        let p = |s: &str| IntOrPercent::Percent(s.into());
        assert_eq!(
            resolve_rolling(3, Some(&p("25%")), Some(&p("25%"))),
            (Some(1), Some(0))
        );
        assert_eq!(
            resolve_rolling(4, Some(&IntOrPercent::Int(0)), Some(&p("10%"))),
            (Some(0), Some(1))
        );
        assert_eq!(resolve(&p("x%"), 3, true), None);
    }

    #[test]
    fn prestop_seconds_is_unknown_when_a_hook_has_no_known_duration() {
        let c = |p: Option<PreStop>| ContainerSettings {
            name: "app".into(),
            pre_stop: p,
            readiness_probe: None,
        };
        let mut s = TerminationSettings {
            source: SettingsSource::Workload,
            workload: "deployment/x".into(),
            termination_grace_period_seconds: Some(30),
            containers: Some(vec![c(None)]),
            rollout: None,
            pdbs: Some(vec![]),
            unread: vec![],
        };
        assert_eq!(s.prestop_seconds(), Some(0));
        assert_eq!(s.prestop_phrase(), "none");
        s.containers = Some(vec![c(Some(PreStop {
            kind: PreStopKind::HttpGet,
            sleep_seconds: None,
        }))]);
        assert_eq!(s.prestop_seconds(), None);
        s.containers = None;
        assert_eq!(s.prestop_seconds(), None);
    }

    #[test]
    fn a_grace_period_the_window_cannot_see_out_is_refused_by_name() {
        let mut s = TerminationSettings {
            source: SettingsSource::Workload,
            workload: "deployment/ignore-sigterm".into(),
            termination_grace_period_seconds: Some(240),
            containers: Some(vec![]),
            rollout: None,
            pdbs: Some(vec![]),
            unread: vec![],
        };
        assert_eq!(s.window_needed_seconds(), Some(270));
        assert_eq!(s.covered_by(270), Ok(()));
        let e = s.covered_by(180).unwrap_err();
        assert_eq!(e.needed, 270);
        let msg = e.to_string();
        assert!(
            msg.starts_with(
                "deployment/ignore-sigterm declares terminationGracePeriodSeconds 240;"
            ),
            "{msg}"
        );
        assert!(
            msg.contains("--observe-timeout (observe-timeout in a policy arm) to 270"),
            "{msg}"
        );
        // A preStop longer than the grace does not keep the pod: the kubelet kills it at the
        // grace period (+ 2 s), so the grace alone decides.
        s.termination_grace_period_seconds = Some(30);
        s.containers = Some(vec![ContainerSettings {
            name: "app".into(),
            pre_stop: Some(PreStop {
                kind: PreStopKind::Sleep,
                sleep_seconds: Some(200),
            }),
            readiness_probe: None,
        }]);
        assert_eq!(s.covered_by(60), Ok(()));
        assert_eq!(s.covered_by(59).unwrap_err().needed, 60);
        // Not read: nothing to hold the window to.
        s.termination_grace_period_seconds = None;
        assert_eq!(s.covered_by(1), Ok(()));
    }
}
