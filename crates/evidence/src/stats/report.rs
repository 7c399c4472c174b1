//! `compare.json`: what `drainwatch compare` (and the Action's comparison step) compared, how,
//! and what each arm and metric came to. One type for the writer and every reader (the Markdown
//! renderer, tests), described by `schema/compare.schema.json`.

use serde::{Deserialize, Serialize};

use super::runs::{ArmComparison, Thresholds, compared, regressed};

/// The version of the compare.json format, `MAJOR.MINOR` as for report.json (schema/README.md).
pub const COMPARE_SCHEMA_VERSION: &str = "1.0";

/// Where the baseline came from, when it was fetched from a CI run (the link in the summary).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseRun {
    /// The workflow run's id.
    pub id: u64,
    /// The workflow run's page.
    pub url: String,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareReport {
    /// [`COMPARE_SCHEMA_VERSION`].
    pub schema_version: String,
    /// The baseline run directory, as given.
    pub base: String,
    /// The new run directory, as given.
    pub new: String,
    /// The CI run the baseline was downloaded from; null when it is a directory given as is.
    pub base_run: Option<BaseRun>,
    /// The rule's parameters.
    pub thresholds: Thresholds,
    /// Whether any metric of any compared arm regressed.
    pub regressed: bool,
    /// How many arms were compared (the others are on one side only or not comparable).
    pub compared: usize,
    /// Every arm name of either run, in name order.
    pub arms: Vec<ArmComparison>,
}

impl CompareReport {
    /// The report of `arms`, compared under `thresholds`.
    pub fn new(
        base: String,
        new: String,
        base_run: Option<BaseRun>,
        thresholds: Thresholds,
        arms: Vec<ArmComparison>,
    ) -> Self {
        CompareReport {
            schema_version: COMPARE_SCHEMA_VERSION.to_string(),
            base,
            new,
            base_run,
            thresholds,
            regressed: regressed(&arms),
            compared: compared(&arms),
            arms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::runs::compare_runs;
    use crate::test_fixtures::report;
    use std::collections::BTreeMap;

    #[test]
    fn the_report_reads_back_as_it_was_written() {
        let base = BTreeMap::from([("a".to_string(), vec![report("drain")])]);
        let new = BTreeMap::from([
            ("a".to_string(), vec![report("exit-now")]),
            ("b".to_string(), vec![report("drain")]),
        ]);
        let t = Thresholds::default();
        let r = CompareReport::new(
            "base".into(),
            "new".into(),
            Some(BaseRun {
                id: 7,
                url: "https://github.com/o/r/actions/runs/7".into(),
            }),
            t,
            compare_runs(&base, &new, &t),
        );
        assert_eq!((r.arms.len(), r.compared), (2, 1));
        let text = serde_json::to_string(&r).expect("serializes");
        let back: CompareReport = serde_json::from_str(&text).expect("reads back");
        assert_eq!(back, r);
    }
}
