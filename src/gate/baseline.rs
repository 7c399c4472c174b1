//! The baseline run a policy's baseline thresholds are judged against: a run directory given
//! as `--baseline DIR` or `DRAINWATCH_BASELINE_DIR` (the GitHub Action sets the latter to the
//! base branch's downloaded run), read with [`super::runs::load_run`].
//!
//! Empty means "no baseline" (an Action input left blank, no base run found): the baseline
//! thresholds then find none and `on-missing-baseline` decides. A directory that is given but
//! holds no readable run is bad input (exit 2), named before anything runs: a typo must not read
//! as "no baseline yet".

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::evidence::report::Report;
use crate::evidence::verdict::Baseline;

use super::runs::{RunsError, load_run};

/// The environment variable that names the baseline directory.
pub const BASELINE_ENV: &str = "DRAINWATCH_BASELINE_DIR";

/// A baseline directory that cannot serve as one (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// Unreadable, or no run drainwatch wrote.
    #[error("the baseline {dir} (--baseline or {BASELINE_ENV}) is not a readable drainwatch run")]
    Unreadable {
        /// The directory as given.
        dir: PathBuf,
        /// Why.
        #[source]
        source: RunsError,
    },
    /// A run whose arms left no readable trial report.
    #[error(
        "the baseline {0} (--baseline or {BASELINE_ENV}) holds no readable trial report in any arm"
    )]
    NoReports(PathBuf),
}

/// The baseline run, read.
#[derive(Debug, Clone)]
pub struct LoadedBaseline {
    /// The directory as given, recorded in verdict.json.
    pub dir: String,
    /// Its arms' readable trial reports.
    pub arms: BTreeMap<String, Vec<Report>>,
}

impl LoadedBaseline {
    /// The view the verdict reads.
    pub fn view(&self) -> Baseline<'_> {
        Baseline {
            dir: &self.dir,
            arms: &self.arms,
        }
    }
}

/// Reads the baseline named by `given` (the flag or the environment variable); `None` or an
/// empty value is no baseline.
pub fn load(given: Option<&str>) -> Result<Option<LoadedBaseline>, BaselineError> {
    let Some(dir) = given.filter(|d| !d.trim().is_empty()) else {
        return Ok(None);
    };
    let arms = load_run(Path::new(dir)).map_err(|source| BaselineError::Unreadable {
        dir: PathBuf::from(dir),
        source,
    })?;
    if arms.values().all(Vec::is_empty) {
        return Err(BaselineError::NoReports(PathBuf::from(dir)));
    }
    Ok(Some(LoadedBaseline {
        dir: dir.to_string(),
        arms,
    }))
}
