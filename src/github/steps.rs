//! The composite action's `steps` context (`${{ toJSON(steps) }}`, passed as DRAINWATCH_STEPS):
//! which step failed when no verdict was reached, by id in the order the steps ran, and what
//! a reader should look at for it.

use std::fmt;

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};

/// A step's `outcome` (before `continue-on-error`), as GitHub documents it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Ran and succeeded.
    Success,
    /// Ran and failed.
    Failure,
    /// Cancelled.
    Cancelled,
    /// Its `if:` was false.
    Skipped,
}

/// One step of the context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Its `id`.
    pub id: String,
    /// Its outcome; `None` while it has none (the step running now).
    pub outcome: Option<Outcome>,
}

#[derive(Deserialize)]
struct Raw {
    #[serde(default)]
    outcome: Option<Outcome>,
}

/// The steps in document order: a map visitor, because `serde_json`'s map may sort its keys
/// and the order is what names the *first* failure.
struct InOrder(Vec<Step>);

impl<'de> Deserialize<'de> for InOrder {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = InOrder;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "the steps context: an object of step id to {outcome, conclusion, outputs}",
                )
            }
            fn visit_unit<E>(self) -> Result<InOrder, E> {
                Ok(InOrder(Vec::new()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<InOrder, A::Error> {
                let mut steps = Vec::new();
                while let Some((id, raw)) = m.next_entry::<String, Raw>()? {
                    steps.push(Step {
                        id,
                        outcome: raw.outcome,
                    });
                }
                Ok(InOrder(steps))
            }
        }
        d.deserialize_any(V)
    }
}

/// DRAINWATCH_STEPS is not the steps context.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("DRAINWATCH_STEPS is not the steps context ({0}): pass ${{{{ toJSON(steps) }}}}")]
pub struct StepsError(String);

/// Parses `toJSON(steps)`; empty is no steps.
pub fn parse(json: &str) -> Result<Vec<Step>, StepsError> {
    if json.trim().is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str::<InOrder>(json)
        .map(|s| s.0)
        .map_err(|e| StepsError(e.to_string()))
}

/// The step to blame: the first that failed, else the first cancelled.
pub fn first_failed(steps: &[Step]) -> Option<&Step> {
    let with = |o| steps.iter().find(|s| s.outcome == Some(o));
    with(Outcome::Failure).or_else(|| with(Outcome::Cancelled))
}

/// The id of the action's step that runs `drainwatch run`, blamed when no step failed but no
/// verdict was reached (the run step records the exit code rather than failing).
pub const RUN_STEP: &str = "run";

/// A step of the action as a reader sees it: its name and what to look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    /// The step's id.
    pub id: String,
    /// Its human name (the id for steps this table does not know).
    pub name: String,
    /// What to look at.
    pub hint: String,
}

/// Names and hints for the action's steps that can stop a run before its verdict. Kept small:
/// an id not listed is shown as itself.
const KNOWN: &[(&str, &str, &str)] = &[
    (
        "cluster",
        "Find the cluster",
        "the `cluster` and `kubeconfig` inputs: with `existing`, a kubeconfig path on the runner or the file's content (on a fork pull request a secret is empty), else $KUBECONFIG or ~/.kube/config",
    ),
    (
        "kind",
        "Create a kind cluster",
        "the kind step's log: Docker on the runner, the node image, the pod subnet",
    ),
    (
        "binary",
        "Get the drainwatch binary",
        "the `binary`, `binary-source` and `release-url` inputs: whether the runner can download this release's binary and its .sha256 (or, with `image`, pull the image)",
    ),
    (
        "key",
        "Name this use of the action",
        "the matrix passed as DRAINWATCH_MATRIX (`toJSON(matrix)`) and the `key` input",
    ),
    (
        "baseline",
        "Fetch the baseline",
        "the step's log: a baseline it cannot find is only a warning, so it fails only when it cannot write its outputs",
    ),
    (
        RUN_STEP,
        "Run the policy",
        "the step's log: the preflight check or error it names, the policy, and the cluster it reached",
    ),
];

/// The reader's view of step `id`.
pub fn describe(id: &str) -> Described {
    let (name, hint) = KNOWN
        .iter()
        .find(|(k, _, _)| *k == id)
        .map_or((id, "that step's log"), |(_, n, h)| (*n, *h));
    Described {
        id: id.to_string(),
        name: name.to_string(),
        hint: hint.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ids that can stop the action before its verdict, in the order action.yml runs
    /// them: each is a step of action.yml, and every one has a name and a hint here.
    #[test]
    fn every_hint_names_a_step_of_the_action_in_its_order() {
        let action = include_str!("../../action.yml");
        let ids: Vec<&str> = action
            .lines()
            .filter_map(|l| l.trim().strip_prefix("- id: "))
            .collect();
        assert!(ids.len() >= KNOWN.len(), "{ids:?}");
        let known: Vec<&str> = KNOWN.iter().map(|(id, _, _)| *id).collect();
        let in_action: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|id| known.contains(id))
            .collect();
        assert_eq!(in_action, known, "action.yml's steps {ids:?}");
        for id in ["cluster", "kind", "binary", "key", "baseline", "run"] {
            assert_ne!(describe(id).hint, "that step's log", "{id}");
        }
    }

    #[test]
    fn the_first_failure_in_run_order_is_named() {
        // zeta before alpha: document order, not sorted order.
        let json = r#"{"zeta":{"outputs":{},"outcome":"success","conclusion":"success"},
            "cluster":{"outputs":{},"outcome":"failure","conclusion":"failure"},
            "alpha":{"outputs":{},"outcome":"failure","conclusion":"success"},
            "run":{"outputs":{},"outcome":"skipped","conclusion":"skipped"}}"#;
        let steps = parse(json).unwrap();
        assert_eq!(steps.len(), 4);
        assert_eq!(steps[0].id, "zeta");
        assert_eq!(first_failed(&steps).map(|s| s.id.as_str()), Some("cluster"));
        assert_eq!(steps[3].outcome, Some(Outcome::Skipped));
    }

    #[test]
    fn cancelled_is_blamed_only_without_a_failure() {
        let steps = parse(r#"{"a":{"outcome":"cancelled"},"b":{"outcome":"success"}}"#).unwrap();
        assert_eq!(first_failed(&steps).map(|s| s.id.as_str()), Some("a"));
        assert_eq!(
            first_failed(&parse(r#"{"a":{"outcome":"success"}}"#).unwrap()),
            None
        );
    }

    #[test]
    fn empty_and_null_are_no_steps_and_garbage_is_named() {
        assert_eq!(parse(""), Ok(vec![]));
        assert_eq!(parse("null"), Ok(vec![]));
        assert_eq!(parse("{}"), Ok(vec![]));
        assert!(parse("[1]").is_err());
        assert!(parse(r#"{"a":{"outcome":"exploded"}}"#).is_err());
    }

    #[test]
    fn known_steps_have_names_and_others_show_their_id() {
        assert_eq!(describe("run").name, "Run the policy");
        let d = describe("my-step");
        assert_eq!(
            (d.name.as_str(), d.hint.as_str()),
            ("my-step", "that step's log")
        );
    }
}
