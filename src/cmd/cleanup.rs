//! `drainwatch cleanup`: undo what killed or cancelled runs left. First the restore journals
//! (`recorder::journal`, in the state dir) of runs whose orchestrator is gone are replayed:
//! their processes ended, their namespaces deleted, replicas, cordons and annotations
//! restored, each step idempotent and marked in the journal, which is closed once nothing is
//! left. Then, on Kubernetes, the objects carrying the run mark are swept: one run's, marked
//! objects older than a bound, or everything drainwatch manages. A `--run` whose journal says
//! it ran locally touches no cluster.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use drainwatch::cli::CleanupArgs;
use drainwatch::evidence::journal::{self as record, Change, Closer, Entry};
use drainwatch::evidence::plan::Platform;
use drainwatch::host::{self, Fate};
use drainwatch::k8s::cleanup::{self, Scope};
use drainwatch::k8s::{chain, client};
use drainwatch::recorder::journal;

use super::runtime;

fn scope(args: &CleanupArgs) -> Scope {
    let w = &args.what;
    match (&w.run, w.older_than) {
        (Some(id), _) => Scope::Run(id.clone()),
        (None, Some(d)) => Scope::OlderThan {
            seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            now_unix: host::wall_ns().div_euclid(1_000_000_000),
        },
        // clap requires exactly one of the three.
        (None, None) => Scope::All,
    }
}

/// The cluster, connected at the first change that needs it.
struct Cluster<'a> {
    args: &'a CleanupArgs,
    access: Option<client::ClusterAccess>,
}

impl Cluster<'_> {
    async fn client(&mut self) -> Result<kube::Client> {
        if self.access.is_none() {
            let c = &self.args.cluster;
            self.access =
                Some(client::connect(c.kubeconfig.as_deref(), c.context.as_deref()).await?);
        }
        match &self.access {
            Some(a) => Ok(a.client.clone()),
            None => bail!("no cluster access"),
        }
    }
}

/// What replaying the journals found.
#[derive(Default)]
struct Replayed {
    /// Changes that could not be undone (the journal keeps them).
    failed: usize,
    /// `--run`'s journal says the run was local: no cluster to sweep.
    local_run: bool,
}

pub fn cmd_cleanup(args: CleanupArgs) -> Result<u8> {
    let scope = scope(&args);
    let rt = runtime()?;
    rt.block_on(async {
        let mut cluster = Cluster {
            args: &args,
            access: None,
        };
        let state = journal::state_dir();
        let replayed = replay_all(&state, &scope, &mut cluster).await?;
        if !replayed.local_run {
            sweep(&scope, &mut cluster, &args).await?;
        }
        if replayed.failed > 0 {
            bail!(
                "{} journalled changes could not be undone (named above); their journals are kept: run drainwatch cleanup again once the cause is fixed",
                replayed.failed
            );
        }
        Ok(0)
    })
}

/// The label sweep on the cluster.
async fn sweep(scope: &Scope, cluster: &mut Cluster<'_>, args: &CleanupArgs) -> Result<()> {
    let client = cluster.client().await?;
    let server = cluster
        .access
        .as_ref()
        .map(|a| a.server.clone())
        .unwrap_or_default();
    let limit = Duration::from_secs(args.cluster.api_timeout.max(1) * 4);
    let removed = tokio::time::timeout(limit, cleanup::cleanup(&client, scope))
        .await
        .with_context(|| format!("no answer from {server} within {}s", limit.as_secs()))??;
    if removed.is_empty() {
        println!("nothing {} on {server}", scope.describe());
    } else {
        println!("removed from {server} ({}):", scope.describe());
        for r in &removed {
            println!("  {r}");
        }
    }
    Ok(())
}

/// The journals in scope: `--run`'s own, or every one in the state dir.
fn journals(state: &Path, scope: &Scope) -> Result<Vec<PathBuf>> {
    Ok(match scope {
        Scope::Run(id) => {
            let p = journal::path_of(state, id);
            if p.exists() { vec![p] } else { vec![] }
        }
        _ => journal::list(state)?,
    })
}

async fn replay_all(state: &Path, scope: &Scope, cluster: &mut Cluster<'_>) -> Result<Replayed> {
    let mut out = Replayed::default();
    let paths = journals(state, scope)?;
    if paths.is_empty() {
        println!(
            "no restore journal to replay in {}",
            state.join("journal").display()
        );
    }
    let boot = host::boot_id().unwrap_or_default();
    for path in paths {
        let entries = journal::read(&path)?;
        let Some(opened) = record::opened(&entries).cloned() else {
            println!("journal {}: no opening line; left alone", path.display());
            continue;
        };
        if matches!(scope, Scope::Run(_)) && opened.platform == Platform::Local {
            out.local_run = true;
        }
        if let Some(by) = record::closed(&entries) {
            let by = match by {
                Closer::Run => "the run",
                Closer::Cleanup => "an earlier cleanup",
            };
            println!(
                "journal {}: restored already (closed by {by})",
                path.display()
            );
            continue;
        }
        if opened.boot_id == boot && host::live(opened.pid, opened.start_ticks) {
            println!(
                "journal {}: run {} is in progress (pid {}); left alone",
                path.display(),
                opened.run,
                opened.pid
            );
            continue;
        }
        println!(
            "journal {} (run {}, {}):",
            path.display(),
            opened.run,
            opened.platform.as_str()
        );
        let mut failed = 0;
        for (seq, change) in record::pending(&entries) {
            match undo(change, &opened.run, &boot, cluster).await {
                Ok(how) => {
                    journal::append(
                        &path,
                        &Entry::Restored {
                            seq,
                            wall: journal::wall(),
                            how: how.clone(),
                        },
                    )?;
                    println!("  restored: {}: {how}", change.describe());
                }
                Err(e) => {
                    failed += 1;
                    println!("  NOT restored: {}: {e:#}", change.describe());
                }
            }
        }
        if failed == 0 {
            journal::append(
                &path,
                &Entry::Closed {
                    wall: journal::wall(),
                    by: Closer::Cleanup,
                },
            )?;
            println!("  every change restored; journal marked closed");
        }
        out.failed += failed;
    }
    Ok(out)
}

/// Undoes one change; returns what was done.
async fn undo(change: &Change, run: &str, boot: &str, cluster: &mut Cluster<'_>) -> Result<String> {
    let Change::ProcessSpawned {
        role,
        pid,
        start_ticks,
        boot_id,
    } = change
    else {
        let client = cluster.client().await?;
        return cleanup::undo_change(&client, run, change)
            .await
            .map_err(|e| anyhow::anyhow!(chain(&e)));
    };
    let what = format!("{} pid {pid}", role.as_str());
    if boot_id != boot {
        return Ok(format!("{what} ran before the machine rebooted: gone"));
    }
    let (pid, ticks) = (*pid, *start_ticks);
    let fate = tokio::task::spawn_blocking(move || {
        host::kill_if_same(pid, ticks, Duration::from_secs(10))
    })
    .await
    .context("the kill task failed")?;
    match fate {
        Fate::Gone => Ok(format!("{what} had exited already")),
        Fate::Killed => Ok(format!("{what} killed (SIGKILL) and gone")),
        Fate::NotOurs => Ok(format!(
            "pid {pid} is another process now (or its start time was not recorded): left alone"
        )),
        Fate::Survived => bail!("{what} still runs 10s after SIGKILL"),
    }
}
