//! The restore journal's records: what a run changes, written to disk before each change is
//! made, and each restore when it is done, so that `drainwatch cleanup` can undo what a run
//! killed with SIGKILL left behind. The types and the fold over them live here (pure); the
//! file is written by `recorder::journal` and replayed by `cmd::cleanup`.
//!
//! One JSON object a line, `entry`-tagged: `opened` (first), `made` (a change about to be
//! made, numbered by `seq`), `restored` (the change `seq` undone, or found undone), `closed`
//! (nothing is left to restore). Every set is a closed enum.

use serde::{Deserialize, Serialize};

use super::plan::Platform;
use super::plan::attach::WorkloadKind;

/// Which of drainwatch's own processes a spawned child is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProcessRole {
    /// The local probe (`drainwatch probe`).
    Probe,
    /// A client shard (`drainwatch client`).
    Client,
}

impl ProcessRole {
    /// The name used in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Probe => "probe",
            Self::Client => "client",
        }
    }
}

/// The kinds of object a run creates outside its own namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CreatedKind {
    /// A networking.k8s.io Ingress.
    Ingress,
    /// An rbac.authorization.k8s.io RoleBinding.
    RoleBinding,
}

impl CreatedKind {
    /// The name used in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ingress => "ingress",
            Self::RoleBinding => "rolebinding",
        }
    }
}

/// One change a run makes to the world outside its `--out`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "change", deny_unknown_fields)]
pub enum Change {
    /// A namespace created for a trial, marked with the run (deleting it removes everything
    /// the trial applied in it).
    NamespaceCreated {
        /// Its name.
        namespace: String,
    },
    /// The user's workload scaled down from `from` replicas (to `from - 1`).
    ReplicasScaled {
        /// Deployment or StatefulSet.
        kind: WorkloadKind,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Its replicas before.
        from: i32,
    },
    /// A node that was schedulable, cordoned.
    NodeCordoned {
        /// Its name.
        node: String,
    },
    /// A pod annotated with `key=value`; `before` is the value it had (None: absent).
    AnnotationSet {
        /// The pod's namespace.
        namespace: String,
        /// The pod.
        pod: String,
        /// The annotation.
        key: String,
        /// The value set.
        value: String,
        /// The value before.
        before: Option<String>,
    },
    /// An object created in a namespace that is not the run's own (the Ingress and
    /// RoleBinding of `--ingress-managed`, beside the target), marked with the run: deleted by
    /// name while it carries the mark.
    ObjectCreated {
        /// What it is.
        kind: CreatedKind,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// A child process of the orchestrator.
    ProcessSpawned {
        /// Which.
        role: ProcessRole,
        /// Its pid.
        pid: i32,
        /// Its start time (`/proc/PID/stat` field 22, clock ticks since boot): a pid reused
        /// by another process has another start time, and is left alone.
        start_ticks: Option<u64>,
        /// The kernel it ran on (a reboot ends every process).
        boot_id: String,
    },
}

impl Change {
    /// What the change is, for messages.
    pub fn describe(&self) -> String {
        match self {
            Self::NamespaceCreated { namespace } => format!("namespace {namespace} created"),
            Self::ReplicasScaled {
                kind,
                namespace,
                name,
                from,
            } => format!(
                "{} {namespace}/{name} scaled from {from} replicas",
                kind.as_str()
            ),
            Self::NodeCordoned { node } => format!("node {node} cordoned"),
            Self::AnnotationSet {
                namespace,
                pod,
                key,
                value,
                ..
            } => format!("pod {namespace}/{pod} annotated {key}={value}"),
            Self::ObjectCreated {
                kind,
                namespace,
                name,
            } => format!("{} {namespace}/{name} created", kind.as_str()),
            Self::ProcessSpawned { role, pid, .. } => {
                format!("{} process pid {pid} spawned", role.as_str())
            }
        }
    }
}

/// Who closed a journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Closer {
    /// The run itself, every change restored.
    Run,
    /// `drainwatch cleanup`, every change restored.
    Cleanup,
}

/// The run a journal belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Opened {
    /// The run id (`drainwatch.dev/run` on what it creates).
    pub run: String,
    /// Where it ran.
    pub platform: Platform,
    /// The orchestrator's pid, and its start time: while that process lives, the run is in
    /// progress and cleanup leaves its journal alone.
    pub pid: i32,
    /// The orchestrator's start time (clock ticks since boot).
    pub start_ticks: Option<u64>,
    /// The orchestrator's kernel.
    pub boot_id: String,
    /// `--out`, for messages.
    pub out: String,
    /// Wall time, RFC 3339.
    pub wall: String,
}

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "entry", deny_unknown_fields)]
pub enum Entry {
    /// The first line.
    Opened(Opened),
    /// A change about to be made.
    Made {
        /// Its number in the journal.
        seq: u32,
        /// The trial making it.
        trial: String,
        /// Wall time, RFC 3339.
        wall: String,
        /// The change.
        change: Change,
    },
    /// Change `seq` restored (or found restored); `how` says which.
    Restored {
        /// The change.
        seq: u32,
        /// Wall time, RFC 3339.
        wall: String,
        /// What was done.
        how: String,
    },
    /// Nothing is left to restore.
    Closed {
        /// Wall time, RFC 3339.
        wall: String,
        /// Who closed it.
        by: Closer,
    },
}

/// The run of a journal (its `opened` line).
pub fn opened(entries: &[Entry]) -> Option<&Opened> {
    entries.iter().find_map(|e| match e {
        Entry::Opened(o) => Some(o),
        _ => None,
    })
}

/// Who closed the journal, if it is closed.
pub fn closed(entries: &[Entry]) -> Option<Closer> {
    entries.iter().rev().find_map(|e| match e {
        Entry::Closed { by, .. } => Some(*by),
        _ => None,
    })
}

/// The changes made and not restored, newest first (the order to undo them in).
pub fn pending(entries: &[Entry]) -> Vec<(u32, &Change)> {
    let restored: Vec<u32> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Restored { seq, .. } => Some(*seq),
            _ => None,
        })
        .collect();
    let mut out: Vec<(u32, &Change)> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Made { seq, change, .. } if !restored.contains(seq) => Some((*seq, change)),
            _ => None,
        })
        .collect();
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn made(seq: u32, change: Change) -> Entry {
        Entry::Made {
            seq,
            trial: "trial-001".into(),
            wall: "w".into(),
            change,
        }
    }

    #[test]
    fn pending_is_made_minus_restored_newest_first() {
        let ns = Change::NamespaceCreated {
            namespace: "n".into(),
        };
        let node = Change::NodeCordoned { node: "k".into() };
        let probe = Change::ProcessSpawned {
            role: ProcessRole::Probe,
            pid: 7,
            start_ticks: Some(9),
            boot_id: "b".into(),
        };
        let mut j = vec![
            made(1, ns.clone()),
            made(2, node.clone()),
            made(3, probe.clone()),
            Entry::Restored {
                seq: 2,
                wall: "w".into(),
                how: "uncordoned".into(),
            },
        ];
        assert_eq!(pending(&j), vec![(3, &probe), (1, &ns)]);
        assert_eq!(closed(&j), None);
        j.push(Entry::Closed {
            wall: "w".into(),
            by: Closer::Cleanup,
        });
        assert_eq!(closed(&j), Some(Closer::Cleanup));
    }

    #[test]
    fn lines_round_trip_and_unknown_changes_are_refused() {
        let e = made(
            4,
            Change::ReplicasScaled {
                kind: WorkloadKind::Deployment,
                namespace: "a".into(),
                name: "web".into(),
                from: 3,
            },
        );
        let s = serde_json::to_string(&e).unwrap();
        assert!(s.contains(r#""entry":"made""#) && s.contains(r#""change":"replicas-scaled""#));
        assert_eq!(serde_json::from_str::<Entry>(&s).unwrap(), e);
        let bad = s.replace("replicas-scaled", "replicas-doubled");
        assert!(serde_json::from_str::<Entry>(&bad).is_err());
    }

    #[test]
    fn an_object_beside_the_target_is_journalled_by_kind_namespace_and_name() {
        let c = Change::ObjectCreated {
            kind: CreatedKind::RoleBinding,
            namespace: "shop".into(),
            name: "drainwatch-ingress-t1".into(),
        };
        let s = serde_json::to_string(&made(5, c.clone())).unwrap();
        assert!(
            s.contains(r#""change":"object-created","kind":"role-binding","namespace":"shop""#),
            "{s}"
        );
        assert_eq!(
            serde_json::from_str::<Entry>(&s).unwrap(),
            made(5, c.clone())
        );
        assert_eq!(
            c.describe(),
            "rolebinding shop/drainwatch-ingress-t1 created"
        );
    }
}
