//! `drainwatch report`'s replay: a report rebuilt from a recorded events.jsonl (or
//! events.jsonl.zst), byte for byte what the trial wrote.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::output;
use crate::evidence::assemble::{AssembleError, build_report};
use crate::evidence::event::EventLine;

/// Rebuilds a report from an events.jsonl file: the replay path of `drainwatch report`.
pub fn replay(events: &Path) -> Result<(crate::evidence::report::Report, Vec<u8>), ReplayError> {
    let text = read(events)?;
    let mut lines = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        match EventLine::parse(raw) {
            Ok(Some(l)) => lines.push(l),
            Ok(None) => {}
            Err(source) => {
                return Err(ReplayError::Parse {
                    path: events.to_path_buf(),
                    line: n + 1,
                    source,
                });
            }
        }
    }
    let report = build_report(&lines).map_err(ReplayError::Assemble)?;
    let bytes = output::report_json(&report);
    Ok((report, bytes))
}

/// The events file's text; `*.zst` (how the repository keeps large recordings) decompressed.
fn read(events: &Path) -> Result<String, ReplayError> {
    let unreadable = |source| ReplayError::Read {
        path: events.to_path_buf(),
        source,
    };
    if events.extension().is_none_or(|e| e != "zst") {
        return std::fs::read_to_string(events).map_err(unreadable);
    }
    let file = std::fs::File::open(events).map_err(unreadable)?;
    let mut decoder =
        ruzstd::decoding::StreamingDecoder::new(file).map_err(|e| ReplayError::Decompress {
            path: events.to_path_buf(),
            detail: e.to_string(),
        })?;
    let mut text = String::new();
    decoder.read_to_string(&mut text).map_err(unreadable)?;
    Ok(text)
}

/// Why an events file cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// Unreadable.
    #[error("failed to read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A `.zst` file that is not zstd.
    #[error("{path} is not a zstd stream: {detail}")]
    Decompress {
        /// The file.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// A line is not an event line.
    #[error("{path}:{line} is not an event line")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The events do not make a report.
    #[error("failed to assemble the report")]
    Assemble(#[source] AssembleError),
}
