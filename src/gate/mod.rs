//! The gate: turn a policy run's directory into its verdict and the files CI reads
//! (`verdict.json`, `junit.xml`, `summary.md`, `report.html`). The judging is the pure core's
//! ([`crate::evidence::verdict`], [`crate::evidence::markdown`]); this module reads and writes.

pub mod arms;
pub mod baseline;
pub mod junit;
pub mod load;
pub mod runs;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::evidence::html;
use crate::evidence::markdown::{self, Links};
use crate::evidence::policy::{Policy, PolicyError, SMOKE_POLICY, SMOKE_POLICY_NAME};
use crate::evidence::verdict::{self, BaselineInput, TrialEvidence, Verdict};
use crate::trial::output::{OutputError, write_atomic};

/// The file names a policy run writes at the top of its directory.
pub const VERDICT_FILE: &str = "verdict.json";
/// JUnit.
pub const JUNIT_FILE: &str = "junit.xml";
/// Markdown summary.
pub const SUMMARY_FILE: &str = "summary.md";

/// Why the gate could not judge (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// The policy file is unreadable.
    #[error("failed to read the policy {path}")]
    ReadPolicy {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The policy is invalid.
    #[error("invalid policy {path}")]
    Policy {
        /// The file, or `builtin:smoke`.
        path: String,
        /// Why (boxed: the refusals carry several names).
        #[source]
        source: Box<PolicyError>,
    },
    /// The run directory is unreadable.
    #[error(transparent)]
    Load(#[from] load::LoadError),
    /// The baseline directory is given but holds no readable run.
    #[error(transparent)]
    Baseline(#[from] baseline::BaselineError),
    /// JUnit could not be rendered.
    #[error(transparent)]
    Junit(#[from] junit::JunitError),
    /// A file could not be written.
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// Reads the policy named on the command line: a path, or `builtin:smoke`.
pub fn load_policy(spec: &str) -> Result<Policy, GateError> {
    let text = if spec == SMOKE_POLICY_NAME {
        SMOKE_POLICY.to_string()
    } else {
        std::fs::read_to_string(spec).map_err(|source| GateError::ReadPolicy {
            path: PathBuf::from(spec),
            source,
        })?
    };
    Policy::parse(&text).map_err(|source| GateError::Policy {
        path: spec.to_string(),
        source: Box::new(source),
    })
}

/// What the gate decided and wrote.
#[derive(Debug)]
pub struct Judged {
    /// The verdict.
    pub verdict: Verdict,
    /// The trials it judged, per arm.
    pub evidence: BTreeMap<String, Vec<TrialEvidence>>,
}

/// Judges the run in `run_dir` against `policy` and writes verdict.json, junit.xml,
/// summary.md and report.html next to the arm directories.
pub fn judge(policy: &Policy, policy_source: &str, run_dir: &Path) -> Result<Judged, GateError> {
    judge_against(policy, policy_source, run_dir, None, None)
}

/// [`judge`], with the baseline run the policy's baseline thresholds are judged against; without
/// one, `why_none` is why there is none (what the CI step that looked for one found), which each
/// baseline threshold says.
pub fn judge_against(
    policy: &Policy,
    policy_source: &str,
    run_dir: &Path,
    baseline: Option<&baseline::LoadedBaseline>,
    why_none: Option<&str>,
) -> Result<Judged, GateError> {
    let evidence = load::run_evidence(run_dir, policy)?;
    let view = baseline.map(baseline::LoadedBaseline::view);
    let input = match &view {
        Some(b) => BaselineInput::Run(b),
        None => BaselineInput::NotGiven(
            why_none
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .unwrap_or(verdict::baseline::NOT_GIVEN),
        ),
    };
    let v = verdict::evaluate_against(policy, policy_source, input, |arm| {
        evidence.get(arm).map(Vec::as_slice).unwrap_or_default()
    });
    let mut json = serde_json::to_vec_pretty(&v).unwrap_or_default();
    json.push(b'\n');
    write_atomic(&run_dir.join(VERDICT_FILE), &json)?;
    write_atomic(&run_dir.join(JUNIT_FILE), &junit::render(&v, &evidence)?)?;
    let links = Links {
        relative_files: true,
        ..Links::default()
    };
    let md = markdown::render(&v, &evidence, &links, markdown::STEP_SUMMARY_MAX_CHARS);
    write_atomic(&run_dir.join(SUMMARY_FILE), md.as_bytes())?;
    write_atomic(
        &run_dir.join(html::HTML_FILE),
        html_page(&v, &evidence).as_bytes(),
    )?;
    Ok(Judged {
        verdict: v,
        evidence,
    })
}

/// `report.html` of a policy run: the verdict on top, then every trial of every arm.
fn html_page(v: &Verdict, evidence: &BTreeMap<String, Vec<TrialEvidence>>) -> String {
    let trials: Vec<html::PageTrial<'_>> = evidence
        .iter()
        .flat_map(|(arm, ts)| {
            ts.iter().map(move |t| html::PageTrial {
                arm: Some(arm),
                id: &t.id,
                report: t.report.as_ref(),
            })
        })
        .collect();
    html::run_page(Some(v), &trials)
}

/// Reads a verdict.json written by [`judge`].
pub fn read_verdict(run_dir: &Path) -> Option<Verdict> {
    // An empty path would read the working directory's files: there is no run.
    if run_dir.as_os_str().is_empty() {
        return None;
    }
    let text = std::fs::read_to_string(run_dir.join(VERDICT_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}
