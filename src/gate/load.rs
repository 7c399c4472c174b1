//! Reading a policy run's directory back: `DIR/<arm>/summary.json` names each trial's report.
//! A missing or unreadable report becomes a trial without evidence (it fails every
//! threshold), never an error, so a half-finished run is still judged; only a directory that
//! cannot be read at all is an error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::evidence::policy::Policy;
use crate::evidence::report::{Report, RunSummary};
use crate::evidence::verdict::TrialEvidence;

/// Why a run directory cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The directory itself is missing or unreadable.
    #[error("failed to read the run directory {path}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

fn read_report(path: &Path) -> Option<Report> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// The trials of one arm directory, in trial order.
pub fn arm_trials(run_dir: &Path, arm: &str) -> Vec<TrialEvidence> {
    dir_trials(&run_dir.join(arm), &format!("{arm}/"))
}

/// The trials of a run directory without arms (`drainwatch run` without `--policy`: its
/// report.json, or its trial-NNN/ directories), in trial order; report paths relative to it.
pub fn run_trials(out: &Path) -> Vec<TrialEvidence> {
    dir_trials(out, "")
}

/// The trials in `dir`; `prefix` is `dir` relative to the run directory the report paths are
/// relative to (with its `/`, or empty).
fn dir_trials(dir: &Path, prefix: &str) -> Vec<TrialEvidence> {
    let summary: Option<RunSummary> = std::fs::read_to_string(dir.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    if let Some(s) = summary {
        return s
            .trials
            .iter()
            .map(|t| TrialEvidence {
                id: t.trial_id.clone(),
                report_path: format!("{prefix}{}", t.report_path),
                report: read_report(&dir.join(&t.report_path)),
            })
            .collect();
    }
    // No summary (the run stopped early, or ran one trial): take whatever reports exist.
    if dir.join("report.json").is_file() {
        let report = read_report(&dir.join("report.json"));
        let id = report
            .as_ref()
            .map_or_else(|| "trial-001".to_string(), |r| r.trial.id.clone());
        return vec![TrialEvidence {
            id,
            report_path: format!("{prefix}report.json"),
            report,
        }];
    }
    let mut ids: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.starts_with("trial-"))
        .collect();
    ids.sort();
    ids.into_iter()
        .map(|id| TrialEvidence {
            report_path: format!("{prefix}{id}/report.json"),
            report: read_report(&dir.join(&id).join("report.json")),
            id,
        })
        .collect()
}

/// Every arm's trials under `run_dir`, keyed by arm name.
pub fn run_evidence(
    run_dir: &Path,
    policy: &Policy,
) -> Result<BTreeMap<String, Vec<TrialEvidence>>, LoadError> {
    std::fs::read_dir(run_dir).map_err(|source| LoadError::Dir {
        path: run_dir.to_path_buf(),
        source,
    })?;
    Ok(policy
        .arms
        .iter()
        .map(|a| (a.name.clone(), arm_trials(run_dir, &a.name)))
        .collect())
}

/// The trials a verdict judged, read back from `run_dir` (for rendering a summary or comment
/// later, without the policy).
pub fn verdict_evidence(
    run_dir: &Path,
    v: &crate::evidence::verdict::Verdict,
) -> BTreeMap<String, Vec<TrialEvidence>> {
    v.arms
        .iter()
        .map(|a| {
            let trials = a
                .trials
                .iter()
                .map(|t| TrialEvidence {
                    id: t.id.clone(),
                    report_path: t.report.clone().unwrap_or_default(),
                    report: t
                        .report
                        .as_deref()
                        .and_then(|p| read_report(&run_dir.join(p))),
                })
                .collect();
            (a.name.clone(), trials)
        })
        .collect()
}
