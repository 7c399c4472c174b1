use std::collections::BTreeMap;

use super::*;
use crate::evidence::verdict::fixtures::{flaky_trials, flaky_verdict};

fn xml(v: &Verdict, trials: Vec<TrialEvidence>) -> String {
    let ev = BTreeMap::from([("a".to_string(), trials)]);
    String::from_utf8(render(v, &ev).unwrap()).unwrap()
}

/// The testcase elements of `doc` named `name`, in document order.
fn cases<'a>(doc: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("<testcase name=\"{name}\"");
    let mut out = Vec::new();
    let mut rest = doc;
    while let Some(i) = rest.find(&open) {
        let tail = &rest[i..];
        let end = tail.find("</testcase>").map_or_else(
            || tail.find("/>").map_or(tail.len(), |e| e + 2),
            |e| e + "</testcase>".len(),
        );
        // A self-closing case ends before any later `</testcase>`.
        let end = match tail.find("/>") {
            Some(sc) if sc < tail.find('>').unwrap_or(usize::MAX) + 1 => sc + 2,
            _ => end,
        };
        out.push(&tail[..end]);
        rest = &tail[end..];
    }
    out
}

#[test]
fn a_flaky_pass_is_the_retried_attempts_failure_then_the_passing_case() {
    let trials = flaky_trials();
    let v = flaky_verdict(&trials);
    let doc = xml(&v, trials);
    let drained = cases(&doc, "tcp drained-clean-close ≥ 100%");
    assert_eq!(drained.len(), 2, "{doc}");
    assert!(
        drained[0].contains(&format!("type=\"{RETRIED_ATTEMPT}\"")),
        "{}",
        drained[0]
    );
    assert!(
        drained[0].contains("a: trial-001: 0 of 3 tcp flows drained-clean-close (0%); the threshold is ≥ 100% (attempt retried)"),
        "{}",
        drained[0]
    );
    assert!(
        !drained[1].contains("<failure"),
        "the final case passes: {}",
        drained[1]
    );
    assert!(
        drained[1].contains("flaky: a: held only after a retry"),
        "{}",
        drained[1]
    );
    // Held in every attempt: one passing case, no flaky note.
    let last = cases(&doc, "sigterm-to-last-flow-end ≤ 3s");
    assert_eq!(last.len(), 1, "{doc}");
    assert!(
        !last[0].contains("flaky") && !last[0].contains("<failure"),
        "{}",
        last[0]
    );
    assert!(
        doc.contains("failures=\"1\""),
        "the retried attempt is counted as a failure: {doc}"
    );
}

#[test]
fn a_retry_that_missed_again_is_two_failures() {
    let trials = vec![
        crate::evidence::verdict::fixtures::evidence(
            "trial-001",
            Some(crate::evidence::test_fixtures::report("exit-now")),
        ),
        crate::evidence::verdict::fixtures::evidence(
            "trial-001-retry-1",
            Some(crate::evidence::test_fixtures::report("exit-now")),
        ),
    ];
    let p = crate::evidence::policy::Policy::parse(
        "version = 1\n[[arm]]\nname = \"a\"\nretries = 1\nthresholds = [\"tcp drained-clean-close >= 100%\"]",
    )
    .unwrap();
    let v = crate::evidence::verdict::evaluate(&p, "p.toml", |_| &trials);
    let doc = xml(&v, trials);
    let c = cases(&doc, "tcp drained-clean-close ≥ 100%");
    assert_eq!(c.len(), 2, "{doc}");
    assert!(
        c[0].contains(RETRIED_ATTEMPT) && c[0].contains("a: trial-001: "),
        "{}",
        c[0]
    );
    assert!(c[1].contains("type=\"threshold-missed\""), "{}", c[1]);
    assert!(c[1].contains("a: trial-001-retry-1: 0 of 3"), "{}", c[1]);
}

/// The local-fail policy over the drain and exit-now fixtures: exit-now misses its threshold.
fn local_fail() -> (Verdict, BTreeMap<String, Vec<TrialEvidence>>) {
    let p = crate::evidence::policy::Policy::parse(include_str!(
        "../../../tests/fixtures/ci/policies/local-fail.toml"
    ))
    .unwrap();
    let mut ev = BTreeMap::new();
    for name in ["drain", "exit-now"] {
        ev.insert(
            name.to_string(),
            vec![TrialEvidence {
                id: "trial-001".into(),
                report_path: format!("{name}/report.json"),
                report: Some(crate::evidence::test_fixtures::report(name)),
            }],
        );
    }
    let v = crate::evidence::verdict::evaluate(&p, "local-fail.toml", |n| ev[n].as_slice());
    (v, ev)
}

#[test]
fn each_suite_carries_its_findings_and_a_failure_text_names_them() {
    let (v, ev) = local_fail();
    let doc = String::from_utf8(render(&v, &ev).unwrap()).unwrap();
    let suites: Vec<&str> = doc.split("<testsuite ").skip(1).collect();
    assert_eq!(suites.len(), 2, "{doc}");
    let exit_now = suites
        .iter()
        .find(|s| s.starts_with("id=\"1\"") || s.contains("name=\"exit-now\""))
        .expect("the exit-now suite");
    assert!(
        exit_now.contains(
            "<properties><property name=\"drainwatch.finding.rst-instead-of-close.severity\" value=\"failure\"/><property name=\"drainwatch.finding.rst-instead-of-close.trials\" value=\"trial-001\"/>"
        ),
        "{exit_now}"
    );
    let failed: Vec<&str> = cases(&doc, "tcp drained-clean-close ≥ 100%")
        .into_iter()
        .filter(|c| c.contains("<failure"))
        .collect();
    assert_eq!(failed.len(), 1, "{doc}");
    assert!(
        failed[0].contains("Findings:\n[failure] rst-instead-of-close (trial-001): 3 of 3 established TCP connections were reset"),
        "{}",
        failed[0]
    );
    // The local drain trial's UDP flows end with the process and no finding explains that, so
    // its suite has no properties element; exit-now's has one.
    assert_eq!(doc.matches("<properties>").count(), 1, "{doc}");
    assert_eq!(doc.matches("</properties>").count(), 1, "{doc}");
}
