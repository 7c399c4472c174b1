use super::*;
use crate::policy::Policy;
use crate::test_fixtures::report;
use crate::verdict::evaluate;

fn run() -> (Verdict, BTreeMap<String, Vec<TrialEvidence>>) {
    let p = Policy::parse(include_str!(
        "../../../../tests/fixtures/ci/policies/local-fail.toml"
    ))
    .unwrap();
    let mut ev = BTreeMap::new();
    for name in ["drain", "exit-now"] {
        ev.insert(
            name.to_string(),
            vec![TrialEvidence {
                id: "trial-001".into(),
                report_path: format!("{name}/report.json"),
                report: Some(report(name)),
            }],
        );
    }
    let v = evaluate(&p, "tests/fixtures/ci/policies/local-fail.toml", |n| {
        ev[n].as_slice()
    });
    (v, ev)
}

#[test]
fn a_failing_run_names_the_arm_threshold_and_numbers() {
    let (v, ev) = run();
    let md = render(&v, &ev, &Links::default(), STEP_SUMMARY_MAX_CHARS);
    assert!(
        md.starts_with("## ❌ drainwatch: fail — 2 of 4 thresholds missed in 1 of 2 arms\n"),
        "{md}"
    );
    assert!(
        md.contains(
            "| `drain` | ✅ pass | 1 | 3 / 0 / 0 / 0 / 0 | 0 / 2 / 0 / 0 / 0 | 0 | 1493 ms |"
        ),
        "{md}"
    );
    assert!(
        md.contains("| `exit-now` | ❌ fail | 1 | 0 / 3 / 0 / 0 / 0 |"),
        "{md}"
    );
    assert!(md.contains(
        "- **exit-now** · `tcp drained-clean-close ≥ 100%` — trial-001: 0 of 3 tcp flows drained-clean-close (0%); the threshold is ≥ 100%\n"
    ), "{md}");
    // One timeline per arm; the failing arm's is open.
    assert_eq!(md.matches("```mermaid\ngantt\n").count(), 2);
    assert!(md.contains("<details open><summary>Timeline: <code>exit-now</code>"));
    assert!(md.contains("platform local"));
    assert!(md.contains("`exit-now/report.json`"));
}

#[test]
fn a_passing_run_says_so() {
    let (mut v, ev) = run();
    v.arms.retain(|a| a.name == "drain");
    v.verdict = Decision::Pass;
    let md = render(
        &v,
        &ev,
        &Links {
            relative_files: true,
            ..Links::default()
        },
        COMMENT_MAX_CHARS,
    );
    assert!(
        md.starts_with("## ✅ drainwatch: pass — 1 threshold held in 1 arm\n"),
        "{md}"
    );
    assert!(md.contains("Every threshold held in every trial."));
    assert!(md.contains("[`drain/report.json`](drain/report.json)"));
    assert!(md.contains("- [`report.html`](report.html) · [`verdict.json`](verdict.json)"));
}

#[test]
fn artifact_links_are_rendered_when_known() {
    let (v, ev) = run();
    let links = Links {
        artifact_url: Some("https://github.com/o/r/actions/runs/1/artifacts/2".into()),
        artifact_name: Some("drainwatch".into()),
        run_url: Some("https://github.com/o/r/actions/runs/1".into()),
        relative_files: false,
        key: Some("e2e-ipvs-0123abcd".into()),
        hide_server: false,
        baseline_run: None,
    };
    let md = render(&v, &ev, &links, COMMENT_MAX_CHARS);
    assert!(
        md.contains("\n- key `e2e-ipvs-0123abcd`: this job and matrix leg"),
        "{md}"
    );
    // The comment and the job summary say the HTML report is inside the artifact.
    assert!(md.contains(
        "- [drainwatch](https://github.com/o/r/actions/runs/1/artifacts/2): `report.html` (findings and a timeline per trial; opens offline in a browser)"
    ));
    assert!(md.contains("- [workflow run](https://github.com/o/r/actions/runs/1)"));
}

#[test]
fn detail_is_dropped_to_fit_the_limit() {
    let (v, ev) = run();
    let full = render(&v, &ev, &Links::default(), usize::MAX);
    let smaller = render(&v, &ev, &Links::default(), full.chars().count() - 1);
    assert!(!smaller.contains("```mermaid"));
    assert!(smaller.contains("<summary>All thresholds</summary>"));
    let tiny = render(&v, &ev, &Links::default(), 300);
    assert!(tiny.chars().count() <= 300);
    assert!(tiny.ends_with("(truncated to fit; the full summary is summary.md in the artifact)\n"));
}

#[test]
fn text_from_reports_cannot_break_the_markdown() {
    assert_eq!(
        esc("a|b <script> `x` [l](u)"),
        "a\\|b \\<script\\> \\`x\\` \\[l\\](u)"
    );
}

#[test]
fn the_cluster_a_kubernetes_run_used_is_named() {
    let (v, mut ev) = run();
    for t in ev.values_mut().flatten() {
        if let Some(r) = t.report.as_mut() {
            r.environment.platform = "kubernetes".into();
            r.environment.cluster = Some(crate::environment::ClusterRef {
                server: "https://10.0.0.1:6443".into(),
                context: Some("kind-drainwatch".into()),
            });
        }
    }
    let md = render(&v, &ev, &Links::default(), COMMENT_MAX_CHARS);
    assert!(
        md.contains(
            "platform kubernetes · cluster https://10.0.0.1:6443 (context kind-drainwatch) ·"
        ),
        "{md}"
    );
    // The PR comment names the context only: the endpoint is not for every reader of the PR.
    let public = Links {
        hide_server: true,
        ..Links::default()
    };
    let md = render(&v, &ev, &public, COMMENT_MAX_CHARS);
    assert!(
        md.contains("platform kubernetes · cluster context kind-drainwatch ·"),
        "{md}"
    );
    assert!(!md.contains("10.0.0.1"), "{md}");
}

#[test]
fn findings_come_before_the_thresholds_with_their_change() {
    let (v, ev) = run();
    let md = render(&v, &ev, &Links::default(), STEP_SUMMARY_MAX_CHARS);
    let section = md.find("\n### Findings\n").expect("a findings section");
    let thresholds = md.find("\n### Thresholds missed\n").expect("thresholds");
    assert!(section < thresholds, "{md}");
    let rst = md
        .find("- ❌ **failure** `rst-instead-of-close` · `exit-now` (1 of 1 trials; trial-001) — 3 of 3 established TCP connections were reset")
        .unwrap_or_else(|| panic!("{md}"));
    assert!(rst > section, "{md}");
    assert!(
        md.contains("  - change: Fix the application's shutdown path"),
        "{md}"
    );
}

#[test]
fn the_minimal_summary_keeps_the_finding_titles_only() {
    let (v, ev) = run();
    let full = render(&v, &ev, &Links::default(), STEP_SUMMARY_MAX_CHARS);
    let minimal = render_at(&v, &ev, &Links::default(), Detail::Minimal);
    assert!(
        minimal.contains("`rst-instead-of-close` · `exit-now`"),
        "{minimal}"
    );
    assert!(!minimal.contains("  - why: "), "{minimal}");
    assert!(full.contains("  - why: "), "{full}");
}

#[test]
fn an_attach_only_run_leaves_the_probe_columns_out() {
    let (v, mut ev) = run();
    let attach: Report = serde_json::from_str(include_str!(
        "../../../../tests/fixtures/attach/report.json"
    ))
    .unwrap();
    let mut replaced = 0;
    for t in ev.values_mut().flatten() {
        t.report = Some(attach.clone());
        replaced += 1;
    }
    assert_eq!(replaced, 2);
    let md = render(&v, &ev, &Links::default(), STEP_SUMMARY_MAX_CHARS);
    assert!(
        md.contains("| arm | verdict | trials |\n|---|---|---:|\n"),
        "{md}"
    );
    assert!(md.contains("| `drain` | ✅ pass | 1 |\n"), "{md}");
    for probe_only in [
        "TCP d / s",
        "UDP re-homed",
        "SIGTERM → last flow end",
        "drained-clean-close / severed",
    ] {
        assert!(!md.contains(probe_only), "{probe_only} in {md}");
    }
    assert!(
        md.contains("| connections closed announced / unannounced FIN / severed |"),
        "{md}"
    );
    // A probe run keeps its columns.
    let (v, ev) = run();
    let md = render(&v, &ev, &Links::default(), STEP_SUMMARY_MAX_CHARS);
    assert!(md.contains("TCP d / s / rt / sw / nm"), "{md}");
}

#[test]
fn not_measured_is_said_apart_from_missed_with_its_reason() {
    let (_, mut ev) = run();
    // exit-now's trial terminated nothing: every threshold of the arm is not measured.
    let t = &mut ev.get_mut("exit-now").unwrap()[0];
    let r = t.report.as_mut().unwrap();
    r.trial.status = crate::report::TrialStatus::NotTerminated;
    r.trial.status_detail = Some("the sigterm trigger terminated no pod of the target".into());
    let p = Policy::parse(include_str!(
        "../../../../tests/fixtures/ci/policies/local-fail.toml"
    ))
    .unwrap();
    let v = evaluate(&p, "p.toml", |n| ev[n].as_slice());
    let md = render(&v, &ev, &Links::default(), STEP_SUMMARY_MAX_CHARS);
    let section = md
        .split("\n### Not measured (each fails its threshold)\n\n")
        .nth(1)
        .expect("a not-measured section");
    let first = section.lines().next().unwrap();
    assert!(
        first.starts_with("- **exit-now** · `")
            && first.ends_with(
                "trial-001: not measured: the sigterm trigger terminated no pod of the target"
            ),
        "{first}"
    );
    assert!(
        !md.contains("\n### Thresholds missed\n"),
        "nothing was missed: {md}"
    );
}
