//! Findings on the committed real runs under `results/`: each recorded trial yields the
//! findings an expert would state, computed from the committed `report.json` as it stands
//! (the committed reports predate schema 3.1 and hold no findings or termination settings, so
//! they are the input unchanged; tests/replay_results.rs checks the stored findings of replays).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

use std::path::PathBuf;

use drainwatch::evidence::findings::{Finding, FindingId, Severity, Unit, findings};
use drainwatch::evidence::report::Report;

fn results() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results")
}

/// The committed report in `rel` (relative to results/).
fn report(rel: &str) -> Report {
    let p = results().join(rel).join("report.json");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn ids(f: &[Finding]) -> Vec<FindingId> {
    f.iter().map(|f| f.id).collect()
}

/// The reports of `trial-001..=trial-NNN` under `dir`.
fn trials(dir: &str, n: u32) -> Vec<(String, Report)> {
    (1..=n)
        .map(|i| {
            let rel = format!("{dir}/trial-{i:03}");
            let r = report(&rel);
            (rel, r)
        })
        .collect()
}

/// Every good-shutdown attach run: one nothing-wrong finding each.
const GOOD_ATTACH: [&str; 7] = [
    "2026-11-30-attach/good-drain-node/out",
    "2026-11-30-attach/good-rollout-restart/out",
    "2026-12-01-attach-statefulset/e2e/attach-rbac",
    "2026-12-01-attach-statefulset/e2e/attach-sts-delete",
    "2026-12-01-attach-statefulset/e2e/attach-sts-evict",
    "2026-12-01-attach-statefulset/e2e/attach-sts-rollout-restart",
    "2026-12-01-attach-statefulset/e2e/attach-sts-scale",
];

#[test]
fn bad_shutdown_attach_trials_yield_endpoint_lag_with_a_prestop_number() {
    let mut all = trials("2026-12-01-compare-cluster/bad", 5);
    let rel = "2026-11-30-attach/bad-rollout-policy/out/bad-rollout";
    all.push((rel.to_string(), report(rel)));
    assert_eq!(all.len(), 6);
    for (rel, r) in &all {
        let f = findings(r);
        let first = f.first().unwrap_or_else(|| panic!("{rel}: no finding"));
        assert_eq!(
            (first.id, first.severity),
            (FindingId::EndpointLag, Severity::Failure),
            "{rel}"
        );
        assert!(!ids(&f).contains(&FindingId::NothingWrong), "{rel}");
        let d = first
            .recommendation
            .as_ref()
            .and_then(|r| r.derived.as_ref())
            .unwrap_or_else(|| panic!("{rel}: no derived preStop value"));
        // The recorded lags (deletion request to last failure) are 2.26–2.96 s: rounded up to
        // 3 s, plus the 1 s margin.
        assert_eq!((d.value, d.unit), (4, Unit::Seconds), "{rel}");
        assert!(d.rule.contains("plus a 1 s margin"), "{rel}: {}", d.rule);
    }
    // trial-002 also recorded a request cut by a reset on a held keep-alive connection.
    let f = findings(&all[1].1);
    assert_eq!(
        ids(&f),
        vec![FindingId::EndpointLag, FindingId::KeepaliveClosedInFlight]
    );
}

#[test]
fn good_shutdown_attach_trials_yield_nothing_wrong() {
    let mut all = trials("2026-12-01-compare-cluster/good-a", 5);
    all.extend(trials("2026-12-01-compare-cluster/good-b", 5));
    all.extend(GOOD_ATTACH.iter().map(|rel| (rel.to_string(), report(rel))));
    assert_eq!(all.len(), 17);
    for (rel, r) in &all {
        let f = findings(r);
        assert_eq!(ids(&f), vec![FindingId::NothingWrong], "{rel}");
        assert!(
            f[0].title.starts_with("Nothing failed: "),
            "{rel}: {}",
            f[0].title
        );
    }
}

#[test]
fn an_interrupted_attach_trial_claims_nothing() {
    let r = report("2026-11-30-attach/ctrl-c-scale/out");
    assert!(findings(&r).is_empty());
}

#[test]
fn probe_exit_now_yields_rst_instead_of_close() {
    // exit-now with exit_now_force_rst records its TCP flows severed by RST, not EOF.
    let mut all = trials("2026-12-01-compare-cluster/probe-exit-now", 5);
    all.extend(trials("2026-11-30-local-cluster-v0.2.0/exit-now", 5));
    assert_eq!(all.len(), 10);
    for (rel, r) in &all {
        let f = findings(r);
        assert_eq!(ids(&f), vec![FindingId::RstInsteadOfClose], "{rel}");
        let n = r.trial.summary.tcp.total;
        assert!(
            f[0].title.starts_with(&format!(
                "{n} of {n} established TCP connections were reset"
            )),
            "{rel}: {}",
            f[0].title
        );
    }
}

#[test]
fn probe_drain_yields_only_udp_rehomed() {
    // The TCP flows drained cleanly; the UDP flows moved to the new pod while the old one still
    // served, which is kube-proxy's UDP handling rather than a shutdown bug: a warning only.
    let mut all = trials("2026-12-01-compare-cluster/probe-drain", 5);
    all.extend(trials("2026-11-30-local-cluster-v0.2.0/drain", 5));
    assert_eq!(all.len(), 10);
    for (rel, r) in &all {
        let f = findings(r);
        assert_eq!(ids(&f), vec![FindingId::UdpRehomed], "{rel}");
        assert_eq!(f[0].severity, Severity::Warning, "{rel}");
        let d = f[0]
            .recommendation
            .as_ref()
            .and_then(|r| r.derived.as_ref())
            .expect("a gap");
        assert_eq!(d.unit, Unit::Milliseconds, "{rel}");
    }
}

#[test]
fn probe_ignore_yields_sigkill_at_grace() {
    let all = trials("2026-11-30-local-cluster-v0.2.0/ignore", 5);
    assert_eq!(all.len(), 5);
    for (rel, r) in &all {
        let f = findings(r);
        assert_eq!(ids(&f), vec![FindingId::SigkillAtGrace], "{rel}");
        assert!(
            f[0].why
                .contains("grace period is 30 s and the configured drain window 25 s"),
            "{rel}: {}",
            f[0].why
        );
        // The measured window (SIGTERM to exit) is cited beside the grace period.
        let measured = r
            .trial
            .summary
            .trigger_to_container_terminated_ms
            .zip(r.trial.summary.trigger_to_sigterm_ms)
            .map(|(e, s)| e - s)
            .unwrap();
        assert!(measured >= 30_000, "{rel}: {measured}");
        assert!(
            f[0].why.contains(&format!(
                "the measured drain window, SIGTERM to exit, was {}.{:02} s;",
                measured / 1000,
                (measured % 1000) / 10
            )),
            "{rel}: {}",
            f[0].why
        );
    }
}

#[test]
fn findings_of_a_committed_report_are_stable() {
    let r = report("2026-12-01-compare-cluster/bad/trial-002");
    let once = serde_json::to_string(&findings(&r)).unwrap();
    let again = serde_json::to_string(&findings(&r.clone())).unwrap();
    assert_eq!(once, again);
    let parsed: Vec<Finding> = serde_json::from_str(&once).unwrap();
    assert_eq!(parsed, findings(&r));
}

#[test]
fn a_real_attach_run_records_the_settings_and_the_prestop_cites_them() {
    // bad-shutdown rolled on the local cluster by this build (schema 3.1): no preStop, a 30 s
    // grace period, maxUnavailable 25% of 2 replicas (0) with maxSurge 1, a PDB minAvailable 1.
    let r = report("2026-12-01-findings/attach-bad-rollout/out");
    let s = r.trial.termination_settings.as_ref().expect("recorded");
    assert_eq!(s.workload, "deployment/bad-shutdown");
    assert_eq!(s.termination_grace_period_seconds, Some(30));
    assert_eq!(s.prestop_seconds(), Some(0));
    let ro = s.rollout.as_ref().expect("rollout");
    assert_eq!(
        (ro.max_surge_pods, ro.max_unavailable_pods),
        (Some(1), Some(0))
    );
    let pdbs = s.pdbs.as_ref().expect("PDBs listed");
    assert_eq!(pdbs.len(), 1);
    assert_eq!(pdbs[0].disruptions_allowed, Some(1));
    // maxUnavailable 0 kept a ready endpoint throughout: measured, and empty.
    let a = r.trial.attach.as_ref().expect("attach");
    assert_eq!(a.no_ready_endpoint_windows.as_deref(), Some(&[][..]));

    let f = findings(&r);
    assert_eq!(ids(&f), vec![FindingId::EndpointLag]);
    assert_eq!(
        r.findings.as_ref(),
        Some(&f),
        "stored findings are the computed ones"
    );
    let rec = f[0].recommendation.as_ref().expect("a recommendation");
    assert!(rec.text.contains("(recorded: 30 s)"), "{}", rec.text);
    // The cluster recorded v1.34.4, which has the Sleep action: the hook needs no shell.
    assert!(
        rec.text.contains("`lifecycle.preStop.sleep.seconds: 2`")
            && rec.text.contains("Kubernetes v1.34.4 accepts")
            && !rec.text.contains("exec.command"),
        "{}",
        rec.text
    );
    // bad-shutdown exits at once: every connection it ended without a break was a bare FIN.
    let c = &a.connections;
    assert_eq!(
        (
            c.graceful_close,
            c.closed_announced,
            c.closed_unannounced_fin
        ),
        (5, Some(0), Some(5))
    );
    let d = rec.derived.as_ref().expect("a number");
    // The longest deletion → endpoint removal / last failure span was 709 ms: 1 s + 1 s.
    assert_eq!((d.value, d.unit), (2, Unit::Seconds));
    assert!(d.rule.contains("709 ms"), "{}", d.rule);
    assert!(
        d.rule
            .contains("the recorded preStop (none) delays SIGTERM 0 s, 2 s short"),
        "{}",
        d.rule
    );
    assert!(
        f[0].why.contains("the recorded preStop hook: none"),
        "{}",
        f[0].why
    );
}

#[test]
fn a_real_probe_eviction_blocked_by_the_pdb_it_deployed() {
    // A probe trial with --pdb (maxUnavailable 0 over one replica) and --trigger evict: the
    // Eviction API refused; the settings are what drainwatch deployed.
    let r = report("2026-12-01-findings/probe-evict-pdb/out");
    assert_eq!(
        r.trial.status,
        drainwatch::evidence::report::TrialStatus::BlockedByPdb
    );
    let s = r.trial.termination_settings.as_ref().expect("recorded");
    assert_eq!(
        s.source,
        drainwatch::evidence::settings::SettingsSource::Plan
    );
    assert_eq!(s.termination_grace_period_seconds, Some(10));
    let pdbs = s.pdbs.as_ref().expect("the deployed PDB");
    assert_eq!(pdbs.len(), 1);
    assert_eq!(
        pdbs[0].disruptions_allowed, None,
        "a rendered PDB has no status: null"
    );
    let f = findings(&r);
    assert_eq!(ids(&f), vec![FindingId::PdbBlockedEviction]);
    assert_eq!(f[0].severity, Severity::Warning);
    let d = f[0]
        .recommendation
        .as_ref()
        .and_then(|r| r.derived.as_ref())
        .expect("a number");
    // maxUnavailable 0 of 1 replica demands 1 healthy: 2 replicas let one go.
    assert_eq!((d.value, d.unit), (2, Unit::Pods));
    assert!(
        f[0].why
            .contains("drainwatch-probe (maxUnavailable 0, its status not read)"),
        "{}",
        f[0].why
    );
}

/// The report `drainwatch report` assembles now from the committed events in `rel`.
fn replayed(rel: &str) -> Report {
    let p = results().join(rel).join("events.jsonl");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let lines: Vec<drainwatch::evidence::event::EventLine> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect();
    drainwatch::evidence::assemble::build_report(&lines).unwrap()
}

#[test]
fn a_503_traefik_gave_itself_is_not_blamed_on_the_terminating_pod_that_still_served() {
    // One replica deleted through Traefik: the pod, in its preStop sleep, served every direct
    // dial (kube-proxy fell back to it), while Traefik, every server fenced, answered 503 itself.
    let r = replayed("2026-12-06-ingress-no-fallback/single-delete");
    let a = r.trial.attach.as_ref().unwrap();
    let own: Vec<_> = a
        .failures
        .iter()
        .filter(|f| {
            f.ingress == Some(drainwatch::evidence::ingress::IngressOutcome::NoAvailableServer)
        })
        .collect();
    assert_eq!(own.len(), 89);
    for f in &own {
        assert_eq!(
            (f.pod.as_deref(), f.upstream.as_deref()),
            (None, None),
            "{f:?}"
        );
    }
    let direct = a.direct_dials.as_ref().unwrap();
    assert_eq!((direct.total, direct.failed), (249, 0));
    let f = findings(&r);
    assert_eq!(
        ids(&f),
        vec![FindingId::IngressNoAvailableServer],
        "the pod's shutdown failed nothing: {f:#?}"
    );
}
