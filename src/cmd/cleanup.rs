//! `drainwatch cleanup`: remove what killed or cancelled runs left on the cluster: one run's
//! objects, marked objects older than a bound, or everything drainwatch manages.

use anyhow::{Context, Result};

use drainwatch::cli::CleanupArgs;
use drainwatch::host;
use drainwatch::k8s::cleanup::{self, Scope};
use drainwatch::k8s::client;

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

pub fn cmd_cleanup(args: CleanupArgs) -> Result<u8> {
    let scope = scope(&args);
    let cluster = args.cluster;
    let rt = runtime()?;
    rt.block_on(async {
        let access =
            client::connect(cluster.kubeconfig.as_deref(), cluster.context.as_deref()).await?;
        let limit = std::time::Duration::from_secs(cluster.api_timeout.max(1) * 4);
        let removed = tokio::time::timeout(limit, cleanup::cleanup(&access.client, &scope))
            .await
            .with_context(|| {
                format!(
                    "no answer from {} within {}s",
                    access.server,
                    limit.as_secs()
                )
            })??;
        if removed.is_empty() {
            println!("nothing {} on {}", scope.describe(), access.server);
        } else {
            println!("removed from {} ({}):", access.server, scope.describe());
            for r in &removed {
                println!("  {r}");
            }
        }
        Ok(0)
    })
}
