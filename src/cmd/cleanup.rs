//! `drainwatch cleanup`: remove what a killed or cancelled run left on the cluster.

use anyhow::{Context, Result};

use drainwatch::cli::ClusterArgs;
use drainwatch::k8s::{cleanup, client};

use super::runtime;

pub fn cmd_cleanup(args: ClusterArgs) -> Result<u8> {
    let rt = runtime()?;
    rt.block_on(async {
        let access = client::connect(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
        let limit = std::time::Duration::from_secs(args.api_timeout.max(1) * 4);
        let removed = tokio::time::timeout(limit, cleanup::cleanup(&access.client))
            .await
            .with_context(|| {
                format!(
                    "no answer from {} within {}s",
                    access.server,
                    limit.as_secs()
                )
            })??;
        if removed.is_empty() {
            println!(
                "nothing labelled app.kubernetes.io/managed-by=drainwatch on {}",
                access.server
            );
        } else {
            println!("removed from {}:", access.server);
            for r in &removed {
                println!("  {r}");
            }
        }
        Ok(0)
    })
}
