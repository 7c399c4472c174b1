//! Findings that rest on the workload's recorded termination settings (schema 3.1,
//! `trial.termination_settings`): `pdb-blocked-eviction` and the attach side of
//! `sigkill-at-grace` (an attached pod killed at its grace period).

use super::{
    Derived, EvidenceRef, Finding, FindingId, Recommendation, Severity, Unit, at, field, row, secs,
};
use crate::event::EventName;
use crate::report::{Report, TrialStatus};
use crate::settings::{IntOrPercent, PdbSettings};

/// The exit code of a process killed by SIGKILL (128 + 9).
const SIGKILL_EXIT: i32 = 137;

/// How much earlier than the grace period an exit 137 may be seen and still count as the
/// kubelet's kill at its end: the deletion time is the API's, the exit the watch's.
const GRACE_TOLERANCE_MS: i64 = 1000;

/// The healthy pods a PDB demands of `replicas` (its desiredHealthy when recorded, else from
/// minAvailable / maxUnavailable as the disruption controller computes it).
fn demanded(p: &PdbSettings, replicas: Option<i32>) -> Option<i32> {
    if let Some(d) = p.desired_healthy {
        return Some(d);
    }
    let n = replicas?;
    let pct = |v: &IntOrPercent, up: bool| crate::settings::resolve(v, n, up);
    match (&p.min_available, &p.max_unavailable) {
        (Some(m), _) => pct(m, true),
        (None, Some(u)) => pct(u, true).map(|u| n - u),
        (None, None) => None,
    }
}

/// `pdb-blocked-eviction`: the Eviction API refused (429) because a PodDisruptionBudget
/// allowed no disruption: the trial was blocked, or the eviction went through only after
/// refusals.
pub(super) fn pdb_blocked_eviction(report: &Report) -> Option<Finding> {
    let t = &report.trial;
    // Blocked: one refused attempt (evict), or refusals until the drain's bound with nothing
    // terminated (drain-node).
    let blocked = t.status == TrialStatus::BlockedByPdb
        || (t.status == TrialStatus::NotTerminated
            && t.timeline
                .iter()
                .any(|e| e.event == EventName::EvictionGaveUp));
    let refused = t
        .timeline
        .iter()
        .filter(|e| e.event == EventName::EvictionRefused)
        .count();
    if !blocked && refused == 0 {
        return None;
    }
    let mut evidence: Vec<EvidenceRef> = Vec::new();
    evidence.extend(row(report, &EventName::TrialBlockedByPdb, None));
    evidence.extend(row(report, &EventName::EvictionRefused, None));
    evidence.extend(row(report, &EventName::PodEvicted, None));
    evidence.push(field("trial.status"));
    let settings = t.termination_settings.as_ref();
    let replicas = settings
        .and_then(|s| s.rollout.as_ref())
        .and_then(|r| r.replicas);
    let pdbs: Vec<&PdbSettings> = settings
        .and_then(|s| s.pdbs.as_ref())
        .map(|p| p.iter().collect())
        .unwrap_or_default();
    if !pdbs.is_empty() {
        evidence.push(field("trial.termination_settings.pdbs"));
    }
    let budget = |p: &PdbSettings| {
        let mut parts = Vec::new();
        if let Some(m) = &p.min_available {
            parts.push(format!("minAvailable {m}"));
        }
        if let Some(u) = &p.max_unavailable {
            parts.push(format!("maxUnavailable {u}"));
        }
        match p.disruptions_allowed {
            Some(d) => parts.push(format!("disruptionsAllowed {d} at the start")),
            None => parts.push("its status not read".into()),
        }
        if let (Some(c), Some(e)) = (p.current_healthy, p.expected_pods) {
            parts.push(format!("{c} of {e} pods healthy"));
        }
        format!("{} ({})", p.name, parts.join(", "))
    };
    let why_pdb = if pdbs.is_empty() {
        match settings.and_then(|s| s.pdbs.as_ref()) {
            Some(_) => "no PodDisruptionBudget selecting the pods was recorded at the start of the trial, so one was created or changed during it".to_string(),
            None => "the PodDisruptionBudgets were not recorded".to_string(),
        }
    } else {
        format!(
            "the budget{} selecting the pods: {}",
            if pdbs.len() > 1 { "s" } else { "" },
            pdbs.iter()
                .map(|p| budget(p))
                .collect::<Vec<_>>()
                .join("; ")
        )
    };
    // The tightest budget decides: the replicas it needs so that one pod may go.
    let need = pdbs
        .iter()
        .filter_map(|p| demanded(p, replicas).map(|d| (p, d)))
        .max_by_key(|(_, d)| *d);
    let derived = need.and_then(|(p, d)| {
        let value = u64::try_from(d).ok()? + 1;
        Some(Derived {
            value,
            unit: Unit::Pods,
            rule: format!(
                "PDB {} demands {d} healthy{}; one more lets an eviction take one away: with fewer ready replicas the Eviction API answers 429",
                p.name,
                replicas.map_or_else(String::new, |r| format!(" (of {r} replicas)"))
            ),
        })
    });
    let what = if blocked {
        format!(
            "The PodDisruptionBudget blocked the eviction for the whole trial{}: nothing was terminated, so nothing was measured.",
            if refused > 0 {
                format!(" ({refused} refusals)")
            } else {
                String::new()
            }
        )
    } else {
        format!(
            "The PodDisruptionBudget refused the eviction {refused} times before it went through{}.",
            row_time(report, EventName::PodEvicted)
                .map(|t| format!(" at {}", secs(t)))
                .unwrap_or_default()
        )
    };
    Some(Finding {
        id: FindingId::PdbBlockedEviction,
        severity: if blocked {
            Severity::Warning
        } else {
            Severity::Info
        },
        title: what,
        why: format!(
            "The Eviction API honours PodDisruptionBudgets and refuses (429) while an eviction would leave fewer healthy pods than the budget demands: {why_pdb}."
        ),
        recommendation: Some(Recommendation {
            text: "Let the budget allow one disruption: run more ready replicas than it demands, or relax minAvailable / maxUnavailable, so that a drain or an eviction can proceed; a budget that allows none blocks every node drain.".into(),
            derived,
        }),
        evidence,
    })
}

fn row_time(report: &Report, event: EventName) -> Option<i64> {
    report
        .trial
        .timeline
        .iter()
        .find(|e| e.event == event)
        .map(|e| e.t_ms)
}

/// `sigkill-at-grace` on an attach trial: a terminated pod's container exited 137, killed
/// when its grace period ran out: at least the recorded grace period (less a second) after its
/// deletion request. The measured window is set beside the recorded grace period and preStop.
pub(super) fn attach_sigkill(report: &Report) -> Option<Finding> {
    let a = report.trial.attach.as_ref()?;
    let settings = report.trial.termination_settings.as_ref();
    // Without the recorded grace period a 137 cannot be told from another SIGKILL (an OOM
    // kill, a kill by hand): no finding then.
    let grace = settings.and_then(|s| s.termination_grace_period_seconds)?;
    let at_boundary = |p: &&crate::attach::section::PodLaneReport| {
        p.exit_code == Some(SIGKILL_EXIT)
            && p.deletion_requested_t_ms
                .zip(p.exited_t_ms)
                .is_some_and(|(d, e)| e - d >= i64::from(grace) * 1000 - GRACE_TOLERANCE_MS)
    };
    let killed: Vec<_> = a.pods.iter().filter(at_boundary).collect();
    let p = killed.first()?;
    let window = p
        .deletion_requested_t_ms
        .zip(p.exited_t_ms)
        .map(|(d, e)| e - d);
    let broke = a
        .failures
        .iter()
        .filter(|f| {
            f.pod.as_deref() == Some(p.pod.as_str()) && p.exited_t_ms.is_some_and(|e| f.t_ms >= e)
        })
        .count();
    let mut evidence: Vec<EvidenceRef> = killed
        .iter()
        .map(|p| EvidenceRef::Pod { pod: p.pod.clone() })
        .collect();
    evidence.extend(row(report, &EventName::ContainerTerminated, p.exited_t_ms));
    evidence.push(field(
        "trial.termination_settings.termination_grace_period_seconds",
    ));
    let prestop = settings.map_or_else(|| "not recorded".to_string(), |s| s.prestop_phrase());
    Some(Finding {
        id: FindingId::SigkillAtGrace,
        severity: Severity::Failure,
        title: format!(
            "SIGKILL at the grace-period boundary (exit {SIGKILL_EXIT}): {} of {} terminated pods were killed (pod {}: exited {} after its deletion request; {broke} failures attributed to it after the exit).",
            killed.len(),
            a.pods.len(),
            p.pod,
            window.map_or_else(|| "not-measured".to_string(), secs),
        ),
        why: format!(
            "The drain window measured from the deletion request to the exit was {} against terminationGracePeriodSeconds {grace} s (preStop: {prestop}, which the grace period includes): the process was still running when the grace period ran out (deletion at {}, exit at {}).",
            window.map_or_else(|| "not-measured".to_string(), secs),
            at(p.deletion_requested_t_ms),
            at(p.exited_t_ms),
        ),
        recommendation: Some(Recommendation {
            text: "Handle SIGTERM: stop accepting, finish in-flight work and exit before the grace period ends, or raise terminationGracePeriodSeconds above the preStop plus the time the drain needs.".into(),
            derived: Some(Derived {
                value: u64::from(grace),
                unit: Unit::Seconds,
                rule: format!(
                    "the recorded terminationGracePeriodSeconds ({grace} s) bounds the preStop plus the drain: the application must exit within it after the deletion request"
                ),
            }),
        }),
        evidence,
    })
}
