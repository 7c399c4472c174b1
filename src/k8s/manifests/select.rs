//! The labels drainwatch puts on what it creates and the selectors that find them again: by
//! trial (watches), by trial and run (teardown), by run (`cleanup --run`) and all of them
//! (`cleanup --all`). Pure, so what selects what is tested without a cluster.

use std::collections::BTreeMap;

use super::super::{PROBE_NAME, labels};

/// The labels of one object: managed-by, what it is, its trial and its run.
pub(super) fn labels_of(name: &str, instance: &str, run: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::MANAGED_BY.to_string(), labels::MANAGER.to_string()),
        (labels::NAME.to_string(), name.to_string()),
        (labels::INSTANCE.to_string(), instance.to_string()),
        (labels::RUN.to_string(), run.to_string()),
    ])
}

/// The label selector of this trial's probe pods, as a string for list and watch calls.
pub fn probe_selector(instance: &str) -> String {
    format!(
        "{}={PROBE_NAME},{}={instance}",
        labels::NAME,
        labels::INSTANCE
    )
}

/// The label selector of every pod of this trial (probe and client).
pub fn trial_selector(instance: &str) -> String {
    format!("{}={instance}", labels::INSTANCE)
}

/// The label selector of what one trial of run `run` created: its own mark and its instance,
/// so a deletion by this selector cannot reach another run's (or another trial's) objects.
pub fn owned_selector(run: &str, instance: &str) -> String {
    format!("{}={run},{}={instance}", labels::RUN, labels::INSTANCE)
}

/// The label selector of everything run `run` created.
pub fn run_selector(run: &str) -> String {
    format!(
        "{}={},{}={run}",
        labels::MANAGED_BY,
        labels::MANAGER,
        labels::RUN
    )
}

/// The label selector of everything any drainwatch run created.
pub fn managed_selector() -> String {
    format!("{}={}", labels::MANAGED_BY, labels::MANAGER)
}

/// Whether an object with `labels` carries run `run`'s mark: the test teardown applies before
/// deleting an object by name.
pub fn marked_by(labels: Option<&BTreeMap<String, String>>, run: &str) -> bool {
    labels
        .and_then(|l| l.get(labels::RUN))
        .is_some_and(|v| v == run)
}
