//! Properties of the verdict over generated outcomes and thresholds.

use proptest::prelude::*;

use super::tests::{evidence, fixture};
use super::*;
use crate::classify::Outcome;
use crate::flow::Proto;
use crate::policy::Policy;

fn outcome() -> impl Strategy<Value = Outcome> {
    prop::sample::select(Outcome::ALL.to_vec())
}

/// A real report whose flows are replaced by generated ones.
fn report(outcomes: &[(bool, Outcome)]) -> Report {
    let mut r = fixture("drain");
    let template = r.trial.flows[0].clone();
    r.trial.flows = outcomes
        .iter()
        .enumerate()
        .map(|(i, (tcp, o))| {
            let mut f = template.clone();
            f.proto = if *tcp { Proto::Tcp } else { Proto::Udp };
            f.id = format!("{}-{:04}", f.proto.as_str(), i + 1);
            f.outcome = *o;
            f.rehomed = None;
            f
        })
        .collect();
    r
}

fn trial() -> impl Strategy<Value = Vec<(bool, Outcome)>> {
    prop::collection::vec((any::<bool>(), outcome()), 0..12)
}

fn threshold() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["", "tcp ", "udp "]),
        prop::sample::select(vec![
            "drained-clean-close",
            "severed",
            "read-timeout",
            "survived-observation-window",
            "not-measured",
        ]),
        prop::sample::select(vec![">=", "<="]),
        prop_oneof![
            (1u32..12).prop_map(|n| n.to_string()),
            (1u32..1000).prop_map(|t| format!("{}.{}%", t / 10, t % 10)),
        ],
    )
        .prop_map(|(s, m, op, a)| format!("{s}{m} {op} {a}"))
}

fn one_arm(t: &str) -> Policy {
    Policy::parse(&format!(
        "version = 1\n[[arm]]\nname = \"a\"\nthresholds = [{t:?}]"
    ))
    .unwrap()
}

proptest! {
    #[test]
    fn an_arm_passes_exactly_when_every_trial_held(
        trials in prop::collection::vec(trial(), 1..4),
        t in threshold(),
    ) {
        let p = one_arm(&t);
        let ev: Vec<_> = trials.iter().enumerate()
            .map(|(i, o)| evidence(&format!("trial-{:03}", i + 1), Some(report(o))))
            .collect();
        let v = evaluate(&p, "p", |_| &ev);
        let checks = &v.arms[0].thresholds[0].checks;
        prop_assert_eq!(checks.len(), ev.len());
        let all_held = checks.iter().all(|c| c.state == CheckState::Held);
        prop_assert_eq!(v.verdict == Decision::Pass, all_held);
        // Every failure is listed, with its trial.
        prop_assert_eq!(v.missed().len(), checks.iter().filter(|c| c.state != CheckState::Held).count());
        for c in checks {
            prop_assert!(c.message.starts_with(&c.trial_id));
            // A held check always has the number that decided it.
            if c.state == CheckState::Held {
                prop_assert!(c.value.is_some() && c.of.is_some());
            }
        }
    }

    #[test]
    fn adding_a_trial_never_turns_fail_into_pass(
        trials in prop::collection::vec(trial(), 1..4),
        extra in trial(),
        t in threshold(),
    ) {
        let p = one_arm(&t);
        let mut ev: Vec<_> = trials.iter().enumerate()
            .map(|(i, o)| evidence(&format!("trial-{:03}", i + 1), Some(report(o))))
            .collect();
        let before = evaluate(&p, "p", |_| &ev).verdict;
        ev.push(evidence("trial-999", Some(report(&extra))));
        let after = evaluate(&p, "p", |_| &ev).verdict;
        prop_assert!(!(before == Decision::Fail && after == Decision::Pass));
    }

    #[test]
    fn a_trial_without_evidence_fails_every_threshold(
        trials in prop::collection::vec(trial(), 0..3),
        t in threshold(),
    ) {
        let p = one_arm(&t);
        let mut ev: Vec<_> = trials.iter().enumerate()
            .map(|(i, o)| evidence(&format!("trial-{:03}", i + 1), Some(report(o))))
            .collect();
        ev.push(evidence("trial-100", None));
        let v = evaluate(&p, "p", |_| &ev);
        prop_assert_eq!(v.verdict, Decision::Fail);
        let last = v.arms[0].thresholds[0].checks.last().unwrap();
        prop_assert_eq!(last.state, CheckState::NotMeasured);
    }

    #[test]
    fn all_drained_is_exactly_100_percent_drained(o in trial()) {
        let p = one_arm("drained-clean-close >= 100%");
        let ev = [evidence("trial-001", Some(report(&o)))];
        let v = evaluate(&p, "p", |_| &ev);
        let all = !o.is_empty() && o.iter().all(|(_, x)| *x == Outcome::DrainedCleanClose);
        prop_assert_eq!(v.verdict == Decision::Pass, all);
    }
}
