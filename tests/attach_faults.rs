//! The orchestrator killed with SIGKILL in the middle of an attach trial that changed the
//! user's workload (a scale-down, a node drain): nothing in the process can undo it, so
//! `drainwatch cleanup --run ID` replays the run's restore journal: the replicas come back, the
//! node is uncordoned, the deletion-cost annotation goes, the client pod's namespace is deleted,
//! and the journal closes.
//!
//! In `make e2e-attach` (not `e2e-k8s`): they need the example services and the attach client
//! image, which `make example-images` builds after the e2e-k8s phase of the cluster run.
//! `#[ignore]`d; without `DRAINWATCH_E2E_KUBECONFIG`, or against a broken cluster, they fail.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;
#[allow(dead_code, unused_imports)] // shared with attach_e2e, which uses all of it
#[path = "attach_e2e/support.rs"]
mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{Reaper, spawn_cmd_until_trigger, temp_dir, wait};
use drainwatch::evidence::journal::{self as record, Change, Closer};
use drainwatch::recorder::journal;
use support::*;

/// Polls `ok` (a cluster query: at most every 500 ms) until it holds; `limit` is a hang guard.
#[track_caller]
fn until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    wait::until_every(what, limit, Duration::from_millis(500), || {
        ok().then_some(())
    });
}

/// Runs `trigger` on the good example, kills the run with SIGKILL once `changed` holds on the
/// cluster and its journal holds `journalled`, then runs `drainwatch cleanup --run`; returns
/// what cleanup printed.
fn kill_then_cleanup(
    kc: &Path,
    name: &str,
    n: u8,
    trigger: &str,
    journalled: fn(&Change) -> bool,
    changed: &dyn Fn() -> bool,
) -> String {
    let (out, state) = (temp_dir(name), temp_dir(&format!("{name}-state")));
    let run = format!("20261202-0710{n:02}-{:08x}", std::process::id());
    let mut cmd = Command::new(common::bin());
    cmd.args(dw_args(
        kc,
        &out,
        GOOD,
        &[
            "--trigger",
            trigger,
            "--run-id",
            &run,
            "--observe-timeout",
            "120",
        ],
    ))
    .env("DRAINWATCH_STATE_DIR", &state);
    let (child, _triggered, log) = spawn_cmd_until_trigger(cmd);
    let mut child = Reaper(child);
    let jpath = journal::path_of(&state, &run);
    let pending = || {
        journal::read(&jpath)
            .map(|e| {
                record::pending(&e)
                    .into_iter()
                    .map(|(_, c)| c.clone())
                    .collect()
            })
            .unwrap_or_else(|_| Vec::new())
    };
    until(
        &format!("{trigger}: the change journalled and made"),
        Duration::from_secs(240),
        || {
            assert!(
                child.0.try_wait().unwrap().is_none(),
                "the run ended before its change:\n{}",
                log.lock().unwrap()
            );
            pending().iter().any(&journalled) && changed()
        },
    );
    child.0.kill().unwrap(); // SIGKILL
    child.0.wait().unwrap();
    eprintln!("--- {name}: killed; its stderr\n{}", log.lock().unwrap());
    let ns: Vec<String> = pending()
        .iter()
        .filter_map(|c| match c {
            Change::NamespaceCreated { namespace } => Some(namespace.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ns.len(), 1, "the client pod's namespace is journalled");
    assert!(changed(), "the killed run left its change behind");

    let o = common::cleanup_run(kc, &run, &state);
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    eprintln!(
        "--- cleanup\n{said}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{said}");
    let entries = journal::read(&jpath).unwrap();
    assert!(record::pending(&entries).is_empty(), "{entries:?}");
    assert_eq!(record::closed(&entries), Some(Closer::Cleanup));
    until(
        &format!("namespace {} deleted", ns[0]),
        Duration::from_secs(240),
        || {
            !kubectl(kc, &["get", "ns", &ns[0], "-o", "name"])
                .status
                .success()
        },
    );
    said
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn sigkill_after_a_scale_down_then_cleanup_scales_back_and_removes_the_annotation() {
    let (kc, _lock) = cluster();
    example(&kc, GOOD);
    let before = workload_state(&kc, GOOD);
    assert!(
        before.0 == "2" && before.1.is_empty(),
        "the example runs 2 replicas, none annotated: {before:?}"
    );
    let replicas = || workload_state(&kc, GOOD).0;
    let said = kill_then_cleanup(
        &kc,
        "attach-sigkill-scale",
        1,
        "scale",
        |c| matches!(c, Change::ReplicasScaled { from: 2, .. }),
        &|| replicas() == "1",
    );
    assert!(
        said.contains(
            "restored: deployment drainwatch-examples/good-shutdown scaled from 2 replicas"
        ),
        "{said}"
    );
    assert!(
        said.contains("controller.kubernetes.io/pod-deletion-cost"),
        "{said}"
    );
    assert!(said.contains("every change restored"), "{said}");
    example(&kc, GOOD);
    assert_eq!(workload_state(&kc, GOOD), before, "left as found");
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-attach"]
fn sigkill_mid_drain_then_cleanup_uncordons_the_node() {
    let (kc, _lock) = cluster();
    example(&kc, GOOD);
    let before = workload_state(&kc, GOOD);
    assert!(
        !before.2.contains("=true"),
        "no node cordoned before: {before:?}"
    );
    let cordoned = || workload_state(&kc, GOOD).2.contains("=true");
    let said = kill_then_cleanup(
        &kc,
        "attach-sigkill-drain",
        2,
        "drain-node",
        |c| matches!(c, Change::NodeCordoned { .. }),
        &cordoned,
    );
    assert!(said.contains("cordoned"), "{said}");
    assert!(said.contains("every change restored"), "{said}");
    assert!(!cordoned(), "every node schedulable again");
    // The drain moved the example's pods; spread them again for the tests after this one.
    kubectl_ok(&kc, &["-n", NS, "rollout", "restart", GOOD]);
    example(&kc, GOOD);
    assert_eq!(workload_state(&kc, GOOD), before, "left as found");
}
