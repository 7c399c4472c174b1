//! A trial's names (its instance label, its namespace, the run's mark) and the namespace it
//! creates for itself.

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::PostParams;

use super::{KubernetesPlatform, deploy_err};
use crate::console;
use crate::evidence::journal::Change;
use crate::evidence::plan::TrialConfig;
use crate::evidence::request_id::{PrefixError, RequestIdPrefix};
use crate::k8s::{K8sError, manifests};
use crate::platform::PlatformError;
use crate::recorder::Recorder;

/// A trial's names: its instance label, its namespace, whether it creates that namespace, and
/// the run's mark on everything it creates.
pub(super) struct TrialNames {
    pub instance: String,
    pub ns: String,
    pub created_ns: bool,
    pub run: String,
}

/// Creates the trial's namespace, marked with the run, when the trial is to create one
/// (`create`), and says which namespace the trial runs in either way. Returns whether this
/// run created it: only then may teardown delete it. A namespace of that name that already
/// exists is another run's (or anyone's): the run fails by name and leaves it alone.
pub(super) async fn open_namespace(
    client: &kube::Client,
    ns: &str,
    run: &str,
    create: bool,
    rec: &Recorder,
) -> Result<bool, PlatformError> {
    if create {
        rec.made(Change::NamespaceCreated {
            namespace: ns.to_string(),
        })
        .map_err(|e| deploy_err(e.into()))?;
        let nss = Api::<Namespace>::all(client.clone());
        match nss
            .create(&PostParams::default(), &manifests::namespace(ns, run))
            .await
        {
            Ok(_) => {}
            Err(e) if crate::k8s::status_code(&e) == Some(409) => {
                rec.restored_change(
                    &Change::NamespaceCreated {
                        namespace: ns.to_string(),
                    },
                    "not created: it existed already, and is not this run's",
                );
                let owner = nss
                    .get_opt(ns)
                    .await
                    .ok()
                    .flatten()
                    .and_then(|n| n.metadata.labels)
                    .and_then(|l| l.get(crate::k8s::labels::RUN).cloned());
                return Err(PlatformError::Exists {
                    what: format!("namespace {ns}"),
                    owner,
                });
            }
            Err(e) => {
                return Err(deploy_err(K8sError::api(format!("create namespace {ns}"))(
                    e,
                )));
            }
        }
    }
    let how = if create {
        " (created for this trial)"
    } else {
        ""
    };
    console::progress!("drainwatch: namespace {ns}{how}");
    Ok(create)
}

impl KubernetesPlatform {
    pub(super) fn instance(&self, trial_id: &str) -> String {
        format!(
            "drainwatch-{}-{}",
            self.run_id,
            trial_id.trim_start_matches("trial-")
        )
    }

    /// The prefix of the trial's request ids: its instance name without `drainwatch-` (the run
    /// id and the trial number), so that the requests of two runs through one ingress, or of
    /// one run's trials, are never taken for each other's. A run id (generated, or checked by
    /// `--run-id`) is always a valid prefix; one that is not is said, not replaced.
    pub(super) fn request_id_prefix(
        &self,
        trial_id: &str,
    ) -> Result<RequestIdPrefix, PlatformError> {
        let instance = self.instance(trial_id);
        let prefix = instance.trim_start_matches("drainwatch-");
        prefix
            .parse()
            .map_err(|e: PrefixError| PlatformError::Deploy(e.to_string()))
    }

    /// The trial's instance name, its namespace, whether the trial creates that namespace
    /// (it does unless `--namespace` named one), and the run's mark.
    pub(super) fn trial_namespace(&self, cfg: &TrialConfig, trial_id: &str) -> TrialNames {
        let instance = self.instance(trial_id);
        let created_ns = self.opts.namespace.is_none();
        let ns = cfg.namespace.clone().unwrap_or_else(|| instance.clone());
        TrialNames {
            instance,
            ns,
            created_ns,
            run: self.run_id.clone(),
        }
    }
}
