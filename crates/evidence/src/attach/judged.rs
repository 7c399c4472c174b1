//! The pods an attach trial judges: its own lanes that were terminated (deleted or exited after
//! the trigger), never the context pods already leaving before it, and the worst of one lane
//! time over them. Thresholds and baseline metrics read the same figure from here.

use super::AttachReport;
use super::section::PodLaneReport;

/// The pods the trial terminated: its own lanes with a deletion request or an exit; a lane that
/// only flapped readiness was not terminated.
pub fn terminated(a: &AttachReport) -> Vec<&PodLaneReport> {
    a.pods
        .iter()
        .filter(|p| p.deletion_requested_t_ms.is_some() || p.exited_t_ms.is_some())
        .collect()
}

/// The latest of one lane time over the terminated pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Worst<'a> {
    /// The trial terminated no pod.
    NoPods,
    /// These terminated pods' time was not observed: any of them could be the worst.
    Unseen(Vec<&'a str>),
    /// Every terminated pod's time was seen; this one is the latest.
    Value {
        /// The pod.
        pod: &'a str,
        /// Its time, ms from the trigger.
        t_ms: i64,
        /// How many pods were terminated.
        of: usize,
    },
}

/// The worst (latest) of `time` over the pods `a` terminated.
pub fn worst(a: &AttachReport, time: impl Fn(&PodLaneReport) -> Option<i64>) -> Worst<'_> {
    let pods = terminated(a);
    if pods.is_empty() {
        return Worst::NoPods;
    }
    let unseen: Vec<&str> = pods
        .iter()
        .filter(|p| time(p).is_none())
        .map(|p| p.pod.as_str())
        .collect();
    if !unseen.is_empty() {
        return Worst::Unseen(unseen);
    }
    pods.iter()
        .filter_map(|p| time(p).map(|t| (p.pod.as_str(), t)))
        .max_by_key(|(_, t)| *t)
        .map_or(Worst::NoPods, |(pod, t_ms)| Worst::Value {
            pod,
            t_ms,
            of: pods.len(),
        })
}

impl Worst<'_> {
    /// The value, when every terminated pod's was seen.
    pub fn value(&self) -> Option<i64> {
        match self {
            Self::Value { t_ms, .. } => Some(*t_ms),
            _ => None,
        }
    }
}
