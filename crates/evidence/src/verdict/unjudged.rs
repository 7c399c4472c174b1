//! A run that saw failures and gates nothing says so: which failures, and the `--threshold`
//! flags that would have failed it. Decided by judging a fixed list of candidate thresholds
//! against the run's trials with the verdict's own checks, so a suggested flag is one that
//! really misses on this evidence (never one that is merely not measured here).
//!
//! Pure: trials in, lines out; `drainwatch run` prints them after the tables when neither
//! `--threshold` nor `--policy` was given.

use super::{CheckState, TrialEvidence, evaluate};
use crate::policy::threshold::{self, Threshold};
use crate::policy::{Arm, ArmSettings, OnMissingBaseline, Policy};
use crate::report::TrialStatus;

/// The thresholds a run without any is checked against, in the order suggested: the probe's
/// flow outcomes, then the attach client's requests, dials, held connections and protocols.
/// `no-new-connection-refused` is left out: `no-new-connection-failed` misses whenever it does.
const CANDIDATES: [&str; 10] = [
    "severed <= 0",
    "read-timeout <= 0",
    "no-request-failed",
    "no-new-connection-failed",
    "p100 severed-connections <= 0",
    "no-ws-abnormal-close",
    "no-stream-reset",
    "goaway-before-close",
    "no-watch-cut",
    "no-ingress-hidden-retry",
];

/// What a run without thresholds saw fail, or could not measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unjudged {
    /// `trial: why` of every trial whose trigger terminated nothing (`not-terminated`): its
    /// numbers say nothing about shutdown, and a threshold would not hold on them.
    pub not_terminated: Vec<String>,
    /// `trial: measured` of every candidate check that missed, in candidate then trial order.
    pub failures: Vec<String>,
    /// The thresholds that missed, each one a `--threshold` that would have failed the run.
    pub thresholds: Vec<Threshold>,
}

/// The candidates as thresholds; each is a sentence the parser accepts (unit-tested).
fn candidates() -> Vec<Threshold> {
    CANDIDATES
        .iter()
        .filter_map(|s| threshold::parse(s).ok())
        .collect()
}

/// What failed in `trials` that a threshold would have caught; `None` when nothing did.
pub fn unjudged(trials: &[TrialEvidence]) -> Option<Unjudged> {
    let policy = Policy {
        description: None,
        arms: vec![Arm {
            name: "run".into(),
            description: None,
            settings: ArmSettings::default(),
            thresholds: candidates(),
            on_missing_baseline: None,
        }],
        on_missing_baseline: OnMissingBaseline::default(),
    };
    let v = evaluate(&policy, "", |_| trials);
    let mut out = Unjudged {
        not_terminated: not_terminated(trials),
        failures: Vec::new(),
        thresholds: Vec::new(),
    };
    let judged = v
        .arms
        .first()
        .map(|a| a.thresholds.as_slice())
        .unwrap_or_default();
    for (t, tv) in policy.arms[0].thresholds.iter().zip(judged) {
        if !tv.verdict.fails() {
            continue;
        }
        let missed: Vec<String> = tv
            .checks
            .iter()
            .filter(|c| c.state == CheckState::Missed)
            .filter_map(|c| c.measured.as_ref().map(|m| format!("{}: {m}", c.trial_id)))
            .collect();
        // Not measured in every trial is no failure seen, and no flag to suggest.
        if missed.is_empty() {
            continue;
        }
        out.failures.extend(missed);
        out.thresholds.push(t.clone());
    }
    (!out.thresholds.is_empty() || !out.not_terminated.is_empty()).then_some(out)
}

/// `trial: why` of each trial the trigger terminated nothing in.
fn not_terminated(trials: &[TrialEvidence]) -> Vec<String> {
    trials
        .iter()
        .filter_map(|t| {
            let r = t.report.as_ref()?;
            (r.trial.status == TrialStatus::NotTerminated).then(|| {
                format!(
                    "{}: {}",
                    t.id,
                    r.trial
                        .status_detail
                        .as_deref()
                        .unwrap_or("nothing was terminated")
                )
            })
        })
        .collect()
}

/// A threshold as a shell word for `--threshold`: ASCII operators, quoted when it has spaces.
pub fn flag(t: &Threshold) -> String {
    let s = t.to_string().replace('≤', "<=").replace('≥', ">=");
    if s.contains(' ') {
        format!("--threshold '{s}'")
    } else {
        format!("--threshold {s}")
    }
}

impl Unjudged {
    /// The block printed on stderr after the tables.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.not_terminated.is_empty() {
            out.push("NOT TERMINATED: the trigger terminated nothing, so no shutdown was measured; any --threshold would fail (not measured):".to_string());
            out.extend(self.not_terminated.iter().map(|f| format!("  {f}")));
        }
        if self.thresholds.is_empty() {
            return out;
        }
        out.push(
            "NOT JUDGED: this run saw failures, but no --threshold (or --policy) gates them, so it exits 0:".to_string(),
        );
        out.extend(self.failures.iter().map(|f| format!("  {f}")));
        out.push("to fail the run on them (exit 1), run it again with:".into());
        let flags: Vec<String> = self.thresholds.iter().map(flag).collect();
        out.push(format!("  {}", flags.join(" ")));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attach::{AttachProtocol, attach_section};
    use crate::event::{EventLine, EventName, Source};
    use crate::report::Report;
    use crate::test_fixtures::report as fixture;

    fn line(event: EventName, at_ms: i64, flow: &str, result: &str) -> EventLine {
        let mut l = EventLine::new(Source::Client, event, at_ms * 1_000_000).flow(flow);
        l.result = Some(result.into());
        l
    }

    fn attach(protocol: AttachProtocol, lines: &[EventLine]) -> Report {
        let mut r = fixture("drain");
        r.trial.flows.clear();
        let cfg = crate::attach::tests::config(protocol, 20);
        r.trial.attach = Some(attach_section(
            lines,
            &crate::shard::Losses::unsharded(lines),
            &cfg,
            0,
        ));
        r
    }

    fn trial(id: &str, r: Report) -> TrialEvidence {
        TrialEvidence {
            id: id.into(),
            report_path: format!("{id}/report.json"),
            report: Some(r),
        }
    }

    #[test]
    fn every_candidate_parses() {
        assert_eq!(candidates().len(), CANDIDATES.len());
    }

    #[test]
    fn failed_requests_and_dials_suggest_the_flags_that_miss_on_them() {
        let r = attach(
            AttachProtocol::Http,
            &[
                line(EventName::AttachRequest, 1, "http-0001", "ok"),
                line(EventName::AttachRequest, 2, "http-0001", "refused"),
                line(EventName::AttachDial, 3, "dial-000001", "served"),
                line(EventName::AttachDial, 4, "dial-000002", "timeout"),
            ],
        );
        let u = unjudged(&[trial("trial-001", r)]).unwrap();
        let names: Vec<String> = u.thresholds.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["no-request-failed", "no-new-connection-failed"]);
        assert_eq!(
            u.failures,
            [
                "trial-001: 1 of 2 requests failed (refused 1)",
                "trial-001: 1 of 2 new connections failed (timeout 1)",
            ]
        );
        let lines = u.lines();
        assert_eq!(lines.len(), 5, "{lines:?}");
        assert!(lines[0].contains("exits 0"), "{lines:?}");
        assert_eq!(
            lines[4],
            "  --threshold no-request-failed --threshold no-new-connection-failed"
        );
    }

    #[test]
    fn a_clean_run_and_unmeasured_candidates_suggest_nothing() {
        let good = attach(
            AttachProtocol::Http,
            &[
                line(EventName::AttachRequest, 1, "http-0001", "ok"),
                line(EventName::AttachDial, 2, "dial-000001", "served"),
            ],
        );
        assert_eq!(unjudged(&[trial("trial-001", good)]), None);
        // No report at all is not a failure seen: nothing to suggest from.
        let none = TrialEvidence {
            id: "trial-001".into(),
            report_path: "report.json".into(),
            report: None,
        };
        assert_eq!(unjudged(&[none]), None);
        assert_eq!(unjudged(&[]), None);
    }

    #[test]
    fn severed_probe_flows_suggest_a_quoted_count_threshold() {
        let r = fixture("exit-now");
        let severed = r
            .trial
            .flows
            .iter()
            .filter(|f| f.outcome == crate::classify::Outcome::Severed)
            .count();
        assert!(severed > 0, "the fixture severs flows");
        let u = unjudged(&[trial("trial-001", r)]).unwrap();
        assert_eq!(u.thresholds[0].to_string(), "severed ≤ 0");
        assert_eq!(flag(&u.thresholds[0]), "--threshold 'severed <= 0'");
        assert!(
            u.failures[0].starts_with(&format!("trial-001: {severed} of ")),
            "{:?}",
            u.failures
        );
    }

    #[test]
    fn a_trial_that_terminated_nothing_is_said_even_with_nothing_failed() {
        let mut r = attach(
            AttachProtocol::Http,
            &[line(EventName::AttachRequest, 1, "http-0001", "ok")],
        );
        assert_eq!(unjudged(&[trial("trial-001", r.clone())]), None);
        r.trial.status = TrialStatus::NotTerminated;
        r.trial.status_detail = Some("the drain-node trigger terminated no pod".into());
        let u = unjudged(&[trial("trial-001", r)]).unwrap();
        assert_eq!(
            u.not_terminated,
            ["trial-001: the drain-node trigger terminated no pod"]
        );
        assert!(u.thresholds.is_empty());
        let lines = u.lines();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("NOT TERMINATED"), "{lines:?}");
    }

    #[test]
    fn a_failure_in_one_trial_of_several_is_named_with_its_trial() {
        let good = attach(
            AttachProtocol::Tcp,
            &[line(EventName::AttachDial, 1, "dial-000001", "served")],
        );
        let bad = attach(
            AttachProtocol::Tcp,
            &[line(EventName::AttachDial, 1, "dial-000001", "refused")],
        );
        let u = unjudged(&[trial("trial-001", good), trial("trial-002", bad)]).unwrap();
        assert_eq!(
            u.failures,
            ["trial-002: 1 of 1 new connections failed (refused 1)"]
        );
    }
}
