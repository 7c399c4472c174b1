//! Cluster access resolved as kubectl resolves it: `--kubeconfig`, else `KUBECONFIG`, else
//! `~/.kube/config`, else the in-cluster service account; `--context` picks a context.

use std::path::{Path, PathBuf};

use kube::config::{Config, KubeConfigOptions, Kubeconfig};

use super::K8sError;

/// A client and where it points.
#[derive(Clone)]
pub struct ClusterAccess {
    /// The client.
    pub client: kube::Client,
    /// The API server URL.
    pub server: String,
    /// The kubeconfig file used (the first of KUBECONFIG's list), if any.
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context used (`--context`, else the current one); `None` in-cluster.
    pub context: Option<String>,
}

fn kubeconfig_err(
    name: impl Into<String>,
) -> impl FnOnce(kube::config::KubeconfigError) -> K8sError {
    let source_name = name.into();
    move |source| K8sError::Kubeconfig {
        source_name,
        source,
    }
}

fn default_path() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| Path::new(&h).join(".kube").join("config"))
}

/// The context a kubeconfig resolves to, as kube picks it: the one asked for, else the
/// current one.
fn context_of(kc: &Kubeconfig, options: &KubeConfigOptions) -> Option<String> {
    options
        .context
        .clone()
        .or_else(|| kc.current_context.clone())
}

/// Resolves the configuration and builds a client (no request is made yet).
pub async fn connect(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<ClusterAccess, K8sError> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    let env_first = std::env::var_os("KUBECONFIG")
        .and_then(|v| std::env::split_paths(&v).find(|p| !p.as_os_str().is_empty()));
    let (config, path, context) = if let Some(p) = kubeconfig {
        let kc = Kubeconfig::read_from(p).map_err(kubeconfig_err(p.display().to_string()))?;
        let ctx = context_of(&kc, &options);
        let c = Config::from_custom_kubeconfig(kc, &options)
            .await
            .map_err(kubeconfig_err(p.display().to_string()))?;
        (c, Some(p.to_path_buf()), ctx)
    } else if let Some(kc) = Kubeconfig::from_env().map_err(kubeconfig_err("$KUBECONFIG"))? {
        let ctx = context_of(&kc, &options);
        let c = Config::from_custom_kubeconfig(kc, &options)
            .await
            .map_err(kubeconfig_err("$KUBECONFIG"))?;
        (c, env_first, ctx)
    } else if let Some(p) = default_path().filter(|p| p.exists()) {
        let kc = Kubeconfig::read_from(&p).map_err(kubeconfig_err(p.display().to_string()))?;
        let ctx = context_of(&kc, &options);
        let c = Config::from_custom_kubeconfig(kc, &options)
            .await
            .map_err(kubeconfig_err(p.display().to_string()))?;
        (c, Some(p), ctx)
    } else if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
        (
            Config::incluster().map_err(K8sError::InCluster)?,
            None,
            None,
        )
    } else {
        return Err(K8sError::NoConfig);
    };
    // One attempt per request: the Eviction API's 429 is an answer (blocked by a budget), not a
    // transient failure to retry, and watches have their own backoff.
    let mut config = config;
    config.default_retry = false;
    let server = config.cluster_url.to_string();
    let client = kube::Client::try_from(config).map_err(K8sError::Client)?;
    Ok(ClusterAccess {
        client,
        server: server.trim_end_matches('/').to_string(),
        kubeconfig: path,
        context,
    })
}
