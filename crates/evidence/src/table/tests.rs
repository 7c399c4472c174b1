//! The text table shows what the trial measured: a probe trial in the Go tool's layout with
//! FINDINGS after it, an attach trial with ATTACH and FINDINGS first and none of the probe's
//! sections.

use super::render;
use crate::report::{Report, TrialKind};
use crate::test_fixtures;

fn attach_report() -> Report {
    serde_json::from_str(include_str!(
        "../../../../tests/fixtures/attach/report.json"
    ))
    .unwrap_or_else(|e| panic!("attach fixture: {e}"))
}

/// Where each of `headings` starts a line in `text`, in order; panics on a missing one.
fn positions(text: &str, headings: &[&str]) -> Vec<usize> {
    headings
        .iter()
        .map(|h| {
            text.find(&format!("\n{h}"))
                .unwrap_or_else(|| panic!("no {h} in\n{text}"))
        })
        .collect()
}

#[test]
fn an_attach_trial_shows_attach_and_findings_first_and_nothing_of_the_probe() {
    let r = attach_report();
    assert_eq!(r.trial.kind(), TrialKind::Attach);
    let text = render(&r);
    let at = positions(
        &text,
        &[
            "ATTACH (",
            "FINDINGS",
            "CONFIG",
            "TIMELINE",
            "ENVIRONMENT",
            "CLOCKS",
        ],
    );
    assert_eq!(at.len(), 6);
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}\n{text}");
    for probe_only in [
        "\nSUMMARY",
        "\nFLOWS",
        "DRAIN_MAX_SECONDS",
        "drain behavior",
        "probe clock",
        "READ_TIMEOUT",
        "sigterm -> last flow terminal",
    ] {
        assert!(!text.contains(probe_only), "{probe_only} in\n{text}");
    }
    assert!(text.contains("client clock"), "{text}");
}

#[test]
fn a_probe_trial_keeps_the_go_layout_with_findings_after_it() {
    for name in ["drain", "exit-now", "ignore"] {
        let r = test_fixtures::report(name);
        assert_eq!(r.trial.kind(), TrialKind::Probe);
        let text = render(&r);
        let at = positions(
            &text,
            &[
                "ENVIRONMENT",
                "CONFIG",
                "TIMELINE",
                "FLOWS",
                "SUMMARY",
                "CLOCKS",
                "FINDINGS",
            ],
        );
        assert_eq!(at.len(), 7);
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{name}: {at:?}");
        assert!(text.contains("DRAIN_MAX_SECONDS"), "{name}");
        assert!(text.contains("probe clock"), "{name}");
        assert!(!text.contains("ATTACH"), "{name}");
    }
}
