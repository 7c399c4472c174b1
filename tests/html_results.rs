//! report.html on the committed real runs under `results/`, and written by `drainwatch report`
//! and the policy gate (`drainwatch ci evaluate`, the same `gate::judge` that `run --policy`
//! ends with).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use std::path::{Path, PathBuf};

use drainwatch::evidence::html::{HTML_FILE, trial_page};
use drainwatch::evidence::report::Report;

fn results() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results")
}

fn reports_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            reports_under(&p, out);
        } else if p.file_name().is_some_and(|n| n == "report.json") {
            out.push(p);
        }
    }
}

fn read(p: &Path) -> Report {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The text of the lane of `pod`, up to the next lane.
fn lane<'a>(html: &'a str, pod: &str) -> &'a str {
    let start = format!("class=\"lane\" data-kind=\"pod\" data-pod=\"{pod}\"");
    let (_, rest) = html
        .split_once(&start)
        .unwrap_or_else(|| panic!("no lane for {pod}"));
    rest.split("class=\"lane\"").next().unwrap_or("")
}

#[test]
fn every_committed_report_renders_a_self_contained_page_with_its_timeline() {
    let mut all = Vec::new();
    reports_under(&results(), &mut all);
    assert!(all.len() >= 59, "{} reports under results/", all.len());
    for p in &all {
        let r = read(p);
        let html = trial_page(&r);
        let at = p.display();
        assert!(html.ends_with("</html>\n"), "{at}");
        assert!(!html.contains("<script"), "{at}");
        assert_eq!(html.matches("<svg class=\"timeline\"").count(), 1, "{at}");
        // A manual `drainwatch client` run has no trigger of its own (whoever runs it sends the
        // signal), so its page has no trigger marker; every trial has exactly one.
        let triggers = usize::from(r.trial.id != "client-manual");
        assert_eq!(
            html.matches("class=\"marker\" data-event=\"trigger\"")
                .count(),
            triggers,
            "{at}: trigger markers"
        );
        let lanes = html.matches("<g class=\"lane\"").count();
        assert!(lanes >= 1, "{at}: no lane");
        match &r.trial.attach {
            Some(a) => {
                // The trial's own terminated pods and those already terminating before the
                // trigger (context lanes, drawn but never judged).
                assert_eq!(
                    html.matches("class=\"lane\" data-kind=\"pod\"").count(),
                    a.pods.len() + a.context_pods.len(),
                    "{at}"
                );
                assert_eq!(
                    html.matches("class=\"lane\" data-kind=\"node\"").count(),
                    a.data_plane.as_ref().map_or(0, Vec::len),
                    "{at}: a lane per client node"
                );
                assert_eq!(
                    html.matches("class=\"fail kind-").count(),
                    a.failures.len(),
                    "{at}"
                );
            }
            None => assert!(
                html.matches("class=\"lane\" data-kind=\"flow\"").count()
                    + html.matches("class=\"lane\" data-kind=\"group\"").count()
                    >= 1
                    || r.trial.flows.is_empty(),
                "{at}: no flow lane"
            ),
        }
    }
}

#[test]
fn the_bad_shutdown_attach_runs_show_each_failure_on_the_old_pods_lane() {
    let mut dirs: Vec<String> = (1..=5)
        .map(|i| format!("2026-12-01-compare-cluster/bad/trial-{i:03}"))
        .collect();
    dirs.push("2026-11-30-attach/bad-rollout-policy/out/bad-rollout".into());
    // The run whose report.html the README shows (written by `drainwatch run` itself).
    dirs.push("2026-12-01-html-report/run".into());
    assert_eq!(dirs.len(), 7);
    for d in &dirs {
        let r = read(&results().join(d).join("report.json"));
        let a = r.trial.attach.as_ref().expect("attach");
        let html = trial_page(&r);
        assert!(html.contains("data-finding=\"endpoint-lag\""), "{d}");
        let with_failures: Vec<_> = a.pods.iter().filter(|p| p.failures > 0).collect();
        assert!(!with_failures.is_empty(), "{d}");
        for p in &a.pods {
            // The pods are old replicas (the bad-shutdown Deployment's previous ReplicaSet),
            // each drawn with its deletion and exit, and every failure attributed to it.
            assert!(p.pod.starts_with("bad-shutdown-"), "{d}");
            let l = lane(&html, &p.pod);
            assert!(l.contains("data-event=\"deletion\""), "{d} {}", p.pod);
            assert!(l.contains("data-event=\"container-exit\""), "{d} {}", p.pod);
            assert_eq!(
                l.matches("class=\"fail kind-").count(),
                p.failures as usize,
                "{d} {}",
                p.pod
            );
        }
    }
}

#[test]
fn the_readme_run_wrote_a_page_with_every_failure_on_its_pods_lane() {
    // The page `drainwatch run` wrote (not re-rendered: what the screenshot shows).
    let dir = results().join("2026-12-01-html-report/run");
    let html = std::fs::read_to_string(dir.join(HTML_FILE)).unwrap();
    let r = read(&dir.join("report.json"));
    let a = r.trial.attach.as_ref().expect("attach");
    assert_eq!((a.pods.len(), a.failures.len()), (2, 27));
    assert!(html.contains("data-finding=\"endpoint-lag\""));
    for p in &a.pods {
        let l = lane(&html, &p.pod);
        let on_lane = a
            .failures
            .iter()
            .filter(|f| f.pod.as_deref() == Some(&p.pod));
        assert_eq!(
            l.matches("class=\"fail kind-").count(),
            on_lane.count(),
            "{}",
            p.pod
        );
    }
}

#[test]
fn drainwatch_report_writes_report_html_beside_report_json() {
    let events = results().join("2026-12-01-compare-cluster/bad/trial-001/events.jsonl");
    let out = common::temp_dir("html-report");
    let r = common::run(&[
        "report",
        "--events",
        events.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let report = read(&out.join("report.json"));
    let html = std::fs::read_to_string(out.join(HTML_FILE)).unwrap();
    assert_eq!(html, trial_page(&report));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_policy_gate_writes_one_page_with_the_verdict_and_every_trial() {
    let dir = common::temp_dir("html-gate");
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ci/run-local");
    common::copy_dir(&fixture, &dir);
    let policy = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ci/policies/local-fail.toml");
    let r = common::run(&[
        "ci",
        "evaluate",
        "--policy",
        policy.to_str().unwrap(),
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(
        r.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let html = std::fs::read_to_string(dir.join(HTML_FILE)).unwrap();
    let verdict = html
        .find("data-verdict=\"fail\"")
        .expect("verdict on the page");
    let first = html
        .find("<section class=\"trial\"")
        .expect("a trial section");
    assert!(verdict < first);
    // local-fail.toml judges two arms (drain, exit-now), one trial each.
    assert_eq!(html.matches("<section class=\"trial\"").count(), 2);
    assert_eq!(html.matches("<svg class=\"timeline\"").count(), 2);
    assert!(html.contains("id=\"trial-drain-"));
    assert!(html.contains("id=\"trial-exit-now-"));
    let _ = std::fs::remove_dir_all(&dir);
}
