//! Pod lanes from the control-plane timeline, and the attribution of a failure to one pod and
//! one phase of its termination.

use std::collections::BTreeMap;

use super::section::{Attribution, Phase};
use crate::event::{EventLine, EventName, Source};

/// Deletion requested (the watcher places it at deletionTimestamp − grace).
pub const DELETION_REQUESTED: EventName = EventName::PodDeletionTimestampSet;
/// The endpoint stopped being ready or serving; the first of either counts.
pub const NOT_READY: [EventName; 2] = [
    EventName::EndpointsliceReadyFalse,
    EventName::EndpointsliceServingFalse,
];
/// The endpoint left the EndpointSlice.
pub const ENDPOINT_REMOVED: EventName = EventName::EndpointsliceEndpointRemoved;
/// The container was seen terminated.
pub const EXITED: EventName = EventName::ContainerTerminated;

/// One terminated pod: the first time of each transition, on the orchestrator's timebase (ns).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodLane {
    /// Pod name (the k8s line's `instance`).
    pub pod: String,
    /// Deletion requested.
    pub deletion_ns: Option<i64>,
    /// Endpoint not ready (or not serving).
    pub not_ready_ns: Option<i64>,
    /// Endpoint removed.
    pub removed_ns: Option<i64>,
    /// Container terminated.
    pub exited_ns: Option<i64>,
    /// Exit code, when seen.
    pub exit_code: Option<i32>,
    /// Whether its endpoint was ever seen ready: false when the first observation of the
    /// endpoint already said not ready and no later one said ready (a pod listed while it was
    /// already leaving), None when the lines cannot say (no endpoint seen, or an added endpoint
    /// recorded without `ready`, before schema 3.1).
    pub endpoint_seen_ready: Option<bool>,
}

impl PodLane {
    fn times(&self) -> impl Iterator<Item = i64> {
        [
            self.deletion_ns,
            self.not_ready_ns,
            self.removed_ns,
            self.exited_ns,
        ]
        .into_iter()
        .flatten()
    }

    /// The lane's first observed transition.
    pub fn start(&self) -> Option<i64> {
        self.times().min()
    }

    /// The lane's last observed transition.
    pub fn end(&self) -> Option<i64> {
        self.times().max()
    }

    /// The phase this pod was in at `t`: the latest transition at or before `t` decides, and
    /// later transitions outrank earlier ones (an exit seen before a removal is still an exit).
    /// An endpoint never seen ready is not ready once the pod terminates: it cannot have
    /// "stayed ready".
    pub fn phase_at(&self, t: i64) -> Phase {
        let reached = |x: Option<i64>| x.is_some_and(|x| x <= t);
        if reached(self.exited_ns) {
            Phase::AfterExit
        } else if reached(self.removed_ns) {
            Phase::AfterEndpointRemoval
        } else if reached(self.not_ready_ns) {
            Phase::TerminatingNotReady
        } else if reached(self.deletion_ns) {
            if self.endpoint_seen_ready == Some(false) {
                Phase::TerminatingNotReady
            } else {
                Phase::TerminatingReady
            }
        } else {
            Phase::BeforeTermination
        }
    }

    /// Whether the pod's deletion was requested before `t0_ns`, the trigger: it was already
    /// leaving when the trial acted (an earlier rollout still terminating), so it is context,
    /// never the trial's own termination.
    pub fn before_trigger(&self, t0_ns: i64) -> bool {
        self.deletion_ns.is_some_and(|d| d < t0_ns)
    }
}

/// `lanes` split at the trigger: the trial's own (deletion at or after `t0_ns`, or not seen)
/// and the context (deletion requested before it), each still sorted by pod name.
pub fn split(lanes: Vec<PodLane>, t0_ns: i64) -> (Vec<PodLane>, Vec<PodLane>) {
    lanes.into_iter().partition(|l| !l.before_trigger(t0_ns))
}

fn set_first(slot: &mut Option<i64>, at: i64) {
    if slot.is_none_or(|s| at < s) {
        *slot = Some(at);
    }
}

/// The lanes of every pod that has at least one termination transition, sorted by pod name.
/// Only k8s lines that name their pod in `instance` count.
pub fn lanes(lines: &[EventLine]) -> Vec<PodLane> {
    let mut by_pod: BTreeMap<&str, PodLane> = BTreeMap::new();
    // Per pod: whether its endpoint was seen ready, from the lines that say (an added
    // endpoint's `ready`, a ready:true transition); a replacement is no lane for this alone.
    let mut seen_ready: BTreeMap<&str, bool> = BTreeMap::new();
    for l in lines.iter().filter(|l| l.source == Some(Source::K8s)) {
        let (Some(pod), Some(at)) = (l.instance.as_deref(), l.at_ns) else {
            continue;
        };
        let ev = &l.event;
        match (ev, l.ready) {
            (EventName::EndpointsliceEndpointAdded, Some(r)) => {
                *seen_ready.entry(pod).or_default() |= r;
            }
            (EventName::EndpointsliceReadyTrue, _) => {
                seen_ready.insert(pod, true);
            }
            _ => {}
        }
        let known = *ev == DELETION_REQUESTED
            || NOT_READY.contains(ev)
            || *ev == ENDPOINT_REMOVED
            || *ev == EXITED;
        if !known {
            continue;
        }
        let lane = by_pod.entry(pod).or_insert_with(|| PodLane {
            pod: pod.to_string(),
            ..PodLane::default()
        });
        match *ev {
            DELETION_REQUESTED => set_first(&mut lane.deletion_ns, at),
            ENDPOINT_REMOVED => set_first(&mut lane.removed_ns, at),
            EXITED => {
                if lane.exited_ns.is_none_or(|s| at < s) {
                    lane.exit_code = l.exit_code;
                }
                set_first(&mut lane.exited_ns, at);
            }
            _ => set_first(&mut lane.not_ready_ns, at),
        }
    }
    by_pod
        .into_values()
        .map(|mut lane| {
            lane.endpoint_seen_ready = seen_ready.get(lane.pod.as_str()).copied();
            lane
        })
        .collect()
}

pub(super) fn unattributed() -> Attribution {
    Attribution {
        pod: None,
        phase: Phase::Unattributed,
    }
}

fn of(lane: &PodLane, t: i64) -> Attribution {
    Attribution {
        pod: Some(lane.pod.clone()),
        phase: lane.phase_at(t),
    }
}

/// [`attribute`] for a failure an ingress logged, `upstream` the pod at the upstream address it
/// chose (mapped through the EndpointSlice addresses, so a pod of the target's Service) and
/// whether that upstream decided the outcome ([`IngressOutcome::decided_by_upstream`]). A pod
/// with no termination transition in the trial was serving, not terminating: a failure it
/// decided is that pod's, before its termination, never the time's guess at a terminating one.
///
/// [`IngressOutcome::decided_by_upstream`]: crate::ingress::IngressOutcome::decided_by_upstream
pub fn attribute_through(
    lanes: &[PodLane],
    t: i64,
    instance: Option<&str>,
    upstream: Option<(&str, bool)>,
) -> Attribution {
    let is_lane = |p: &str| lanes.iter().any(|l| l.pod == p);
    match (instance.filter(|i| is_lane(i)), upstream) {
        (Some(named), _) => attribute(lanes, t, Some(named)),
        (None, Some((pod, _))) if is_lane(pod) => attribute(lanes, t, Some(pod)),
        (None, Some((pod, true))) => Attribution {
            pod: Some(pod.to_string()),
            phase: Phase::BeforeTermination,
        },
        _ => attribute(lanes, t, instance),
    }
}

/// The pod and phase of a failure at `t` (ns). In order:
/// 1. the endpoint that answered (`instance`), when it names a lane's pod;
/// 2. the one lane whose span (first to last transition) contains `t`;
/// 3. after every span that started, the lane that ended last before `t` (its after-phase),
///    when no other ended at the same time;
/// 4. before every lane, the only lane, when there is exactly one (before-termination).
///
/// Anything else (two spans overlap `t`, no lanes, several candidates) is unattributed: a guess
/// between pods would be worse than saying so.
pub fn attribute(lanes: &[PodLane], t: i64, instance: Option<&str>) -> Attribution {
    if let Some(lane) = instance.and_then(|i| lanes.iter().find(|l| l.pod == i)) {
        return of(lane, t);
    }
    let containing: Vec<&PodLane> = lanes
        .iter()
        .filter(|l| matches!((l.start(), l.end()), (Some(s), Some(e)) if s <= t && t <= e))
        .collect();
    match containing.as_slice() {
        [one] => return of(one, t),
        [] => {}
        _ => return unattributed(),
    }
    let ended: Vec<(i64, &PodLane)> = lanes
        .iter()
        .filter_map(|l| l.end().filter(|e| *e < t).map(|e| (e, l)))
        .collect();
    if let Some(last) = ended.iter().map(|(e, _)| *e).max() {
        let at_last: Vec<&PodLane> = ended
            .iter()
            .filter(|(e, _)| *e == last)
            .map(|(_, l)| *l)
            .collect();
        return match at_last.as_slice() {
            [one] => of(one, t),
            _ => unattributed(),
        };
    }
    match lanes {
        [one] => of(one, t),
        _ => unattributed(),
    }
}
