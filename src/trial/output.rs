//! Writing a trial's files: atomically (temp file, then rename), so a reader never sees half a
//! report, and checked before the trial so an unwritable `--out` costs nothing.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::evidence::event::EventLine;
use crate::evidence::report::{Report, RunSummary};

/// A file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// Writing or renaming failed.
    #[error("failed to write {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// events.jsonl could not take more lines (`--out` full or gone): the file was cut back to
    /// its last whole line and the trial ended.
    #[error(
        "failed to write {path} after {written} of {total} event lines; kept: {path} with its first {written} lines, each whole, which replay to an aborted report (drainwatch report --events {path}); lost: the other {lost} lines and this trial's report.json, which was not written",
        lost = total - written
    )]
    EventsCut {
        /// events.jsonl.
        path: PathBuf,
        /// Lines the file holds.
        written: usize,
        /// Lines the trial recorded.
        total: usize,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// report.json could not be written; events.jsonl, streamed during the trial, is whole.
    #[error(
        "failed to write {path}; kept: {events}, whole (closed by its trial_ended line), from which drainwatch report --events rebuilds the report; lost: {path} (no partial file is left)"
    )]
    ReportLost {
        /// report.json.
        path: PathBuf,
        /// The trial's events.jsonl.
        events: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The output directory holds files already, and emptying it was not asked for.
    #[error(
        "--out {path} is not empty ({count} entries: {first}); nothing was changed: pass --clean-out to empty it first, or choose another directory"
    )]
    NotEmpty {
        /// The directory.
        path: PathBuf,
        /// How many entries it holds.
        count: usize,
        /// The first few names.
        first: String,
    },
    /// `--clean-out` on a directory that contains the working directory.
    #[error("--clean-out refuses to empty {path}: it contains the current directory")]
    WontClean {
        /// The directory.
        path: PathBuf,
    },
    /// The output directory is not writable.
    #[error("--out {path} is not a writable directory")]
    NotWritable {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Refuses an `--out` directory that already holds anything (files of an earlier run would
/// sit beside the new report and be read as its own), unless `clean` asks to empty it first.
/// Nothing is removed without `clean`; a directory that contains the working directory is
/// never emptied.
pub fn prepare_out(dir: &Path, clean: bool) -> Result<(), OutputError> {
    let entries: Vec<PathBuf> = match fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(Result::ok).map(|e| e.path()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(OutputError::NotWritable {
                path: dir.to_path_buf(),
                source,
            });
        }
    };
    if entries.is_empty() {
        return Ok(());
    }
    if !clean {
        let mut names: Vec<String> = entries
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        names.sort();
        let shown = names.len().min(5);
        let more = if names.len() > shown { ", …" } else { "" };
        return Err(OutputError::NotEmpty {
            path: dir.to_path_buf(),
            count: names.len(),
            first: format!("{}{more}", names[..shown].join(", ")),
        });
    }
    let here = std::env::current_dir()
        .ok()
        .and_then(|d| d.canonicalize().ok());
    let canonical = dir.canonicalize().ok();
    if let (Some(h), Some(c)) = (&here, &canonical)
        && h.starts_with(c)
    {
        return Err(OutputError::WontClean {
            path: dir.to_path_buf(),
        });
    }
    for p in entries {
        let r = if p.is_dir() && !p.is_symlink() {
            fs::remove_dir_all(&p)
        } else {
            fs::remove_file(&p)
        };
        r.map_err(|source| OutputError::Write { path: p, source })?;
    }
    Ok(())
}

/// Creates `dir` and proves a file can be written there.
pub fn check_writable(dir: &Path) -> Result<(), OutputError> {
    let err = |source| OutputError::NotWritable {
        path: dir.to_path_buf(),
        source,
    };
    fs::create_dir_all(dir).map_err(err)?;
    let probe = dir.join(".drainwatch-write-check");
    fs::write(&probe, b"").map_err(err)?;
    fs::remove_file(&probe).map_err(err)
}

/// Writes `bytes` to `path` through a temporary file in the same directory; on a failure the
/// temporary file is removed, so no partial file is left (a full disk leaves nothing).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let tmp = path.with_extension("tmp");
    let r = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    r.map_err(|source| {
        let _ = fs::remove_file(&tmp);
        OutputError::Write {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// The bytes of report.json: two-space indent and a trailing newline.
pub fn report_json(report: &Report) -> Vec<u8> {
    let mut v = serde_json::to_vec_pretty(report).unwrap_or_default();
    v.push(b'\n');
    v
}

/// Writes report.json and events.jsonl of one trial into `dir`, both at the end (the manual
/// client's recording; the trial loop streams its events.jsonl instead).
pub fn write_trial(dir: &Path, report: &Report, lines: &[EventLine]) -> Result<(), OutputError> {
    let mut events = Vec::with_capacity(lines.len() * 160);
    for l in lines {
        events.extend_from_slice(l.to_json().as_bytes());
        events.push(b'\n');
    }
    write_atomic(&dir.join("events.jsonl"), &events)?;
    write_atomic(&dir.join("report.json"), &report_json(report))
}

/// Writes report.json of one trial into `dir`, beside the events.jsonl streamed during it.
pub fn write_report(dir: &Path, report: &Report) -> Result<(), OutputError> {
    match write_atomic(&dir.join("report.json"), &report_json(report)) {
        Err(OutputError::Write { path, source }) => Err(OutputError::ReportLost {
            path,
            events: dir.join("events.jsonl"),
            source,
        }),
        r => r,
    }
}

/// Writes summary.json of a run.
pub fn write_summary(dir: &Path, summary: &RunSummary) -> Result<(), OutputError> {
    let mut v = serde_json::to_vec_pretty(summary).unwrap_or_default();
    v.push(b'\n');
    write_atomic(&dir.join("summary.json"), &v)
}
