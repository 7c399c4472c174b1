//! Reading any run directory drainwatch writes back as arms of trial reports, for `drainwatch
//! compare`: a policy run (`verdict.json`, or arm directories with `summary.json` or
//! `report.json`), a `--repeat` run (`summary.json` and `trial-NNN/`), or a single trial
//! (`report.json`) — the latter two as one arm named [`SINGLE_ARM`]. Downloaded artifacts are
//! such directories.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::evidence::report::{Report, TrialStatus};
use crate::evidence::verdict::{TrialEvidence, quorum};

use super::load::{LoadError, arm_trials, verdict_evidence};
use super::read_verdict;

/// The arm name of a run without a policy.
pub const SINGLE_ARM: &str = "run";

/// Why a run directory cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum RunsError {
    /// The directory cannot be read.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The directory holds no trial report drainwatch wrote.
    #[error(
        "{0} holds no drainwatch run: no verdict.json, summary.json or report.json, and no arm directory with one"
    )]
    NoRun(PathBuf),
}

fn is_run(dir: &Path) -> bool {
    dir.join("summary.json").is_file() || dir.join("report.json").is_file()
}

/// The readable trial reports of one directory `arm` under `dir` (`""`: `dir` itself): the
/// counted attempt of each trial only (a retried attempt is superseded, as in the verdict), so
/// a retry never adds a second sample of one trial.
fn reports(dir: &Path, arm: &str) -> Vec<Report> {
    counted(arm_trials(dir, arm))
}

/// The counted attempts' reports of trials that completed: an aborted, blocked or
/// not-terminated trial's numbers are partial or measure no shutdown, so they are no sample of
/// the run (a baseline of them would pass anything).
fn counted(trials: Vec<TrialEvidence>) -> Vec<Report> {
    let ids: Vec<&str> = trials.iter().map(|t| t.id.as_str()).collect();
    let keep: Vec<bool> = quorum::attempts(&ids).iter().map(|a| a.counted).collect();
    trials
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .filter_map(|(t, _)| t.report)
        .filter(|r| r.trial.status == TrialStatus::Completed)
        .collect()
}

/// Every arm of the run in `dir` with its readable trial reports.
pub fn load_run(dir: &Path) -> Result<BTreeMap<String, Vec<Report>>, RunsError> {
    let entries = std::fs::read_dir(dir).map_err(|source| LoadError::Dir {
        path: dir.to_path_buf(),
        source,
    })?;
    if let Some(v) = read_verdict(dir) {
        return Ok(verdict_evidence(dir, &v)
            .into_iter()
            .map(|(arm, trials)| (arm, counted(trials)))
            .collect());
    }
    if is_run(dir) {
        return Ok(BTreeMap::from([(SINGLE_ARM.to_string(), reports(dir, ""))]));
    }
    let arms: BTreeMap<String, Vec<Report>> = entries
        .filter_map(Result::ok)
        .filter(|e| is_run(&e.path()))
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .map(|arm| {
            let rs = reports(dir, &arm);
            (arm, rs)
        })
        .collect();
    if arms.is_empty() {
        return Err(RunsError::NoRun(dir.to_path_buf()));
    }
    Ok(arms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::test_fixtures::report as fixture;

    fn trial(id: &str, status: TrialStatus) -> TrialEvidence {
        let mut r = fixture("drain");
        r.trial.status = status;
        TrialEvidence {
            id: id.into(),
            report_path: format!("{id}/report.json"),
            report: Some(r),
        }
    }

    #[test]
    fn only_completed_trials_are_samples_of_a_run() {
        let kept = counted(vec![
            trial("trial-001", TrialStatus::Completed),
            trial("trial-002", TrialStatus::Aborted),
            trial("trial-003", TrialStatus::NotTerminated),
            trial("trial-004", TrialStatus::BlockedByPdb),
            trial("trial-005", TrialStatus::Completed),
        ]);
        assert_eq!(kept.len(), 2);
        assert!(
            kept.iter()
                .all(|r| r.trial.status == TrialStatus::Completed)
        );
    }
}
