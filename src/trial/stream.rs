//! events.jsonl, streamed: every line the recorder receives is appended and handed to the
//! kernel as it arrives, so a run killed with SIGKILL leaves on disk every event recorded
//! until then (the page cache survives the process). The lines are also kept in memory, for
//! the report the trial builds at its end.
//!
//! A write that fails (`--out` full, gone, read-only) is not ignored: the file is cut back to
//! its last whole line (so it still replays), nothing more is written, and `stop` is cancelled
//! so that the trial ends at once; the trial then fails with [`OutputError::EventsCut`],
//! which names what was kept and what was lost.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::output::OutputError;
use crate::evidence::event::EventLine;

/// What the collector saw: every line, and how many of them reached the file.
pub struct Collected {
    /// Every line received, in order.
    pub lines: Vec<EventLine>,
    /// The first write failure, with how many lines the file holds whole.
    pub cut: Option<OutputError>,
}

/// Opens `dir/events.jsonl` (truncating it) and starts the collector over `rx`; the task
/// ends when every sender is gone, or at `finish`, after what was sent before it.
pub fn start(
    dir: &Path,
    mut rx: UnboundedReceiver<EventLine>,
    stop: CancellationToken,
    finish: CancellationToken,
) -> Result<JoinHandle<Collected>, OutputError> {
    let path = dir.join("events.jsonl");
    let file = File::create(&path).map_err(|source| OutputError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(tokio::spawn(async move {
        let mut w = Writer {
            path,
            file: Some(file),
            whole: 0,
            written: 0,
            cut: None,
        };
        let mut lines = Vec::new();
        let mut batch = Vec::new();
        loop {
            let n = tokio::select! {
                n = rx.recv_many(&mut batch, 256) => n,
                // A task that still holds a sender (a watch being torn down) must not keep
                // the trial open: no new lines, the queued ones still count.
                () = finish.cancelled() => {
                    rx.close();
                    rx.recv_many(&mut batch, usize::MAX).await
                }
            };
            if n == 0 {
                break;
            }
            w.append(&batch, &stop);
            lines.append(&mut batch);
        }
        let total = lines.len();
        Collected {
            lines,
            cut: w.cut.map(|(written, source)| OutputError::EventsCut {
                path: w.path,
                written,
                total,
                source,
            }),
        }
    }))
}

struct Writer {
    path: PathBuf,
    /// None once a write failed.
    file: Option<File>,
    /// Bytes of whole lines in the file.
    whole: u64,
    /// Lines in the file.
    written: usize,
    cut: Option<(usize, std::io::Error)>,
}

impl Writer {
    /// Appends `batch` (what arrived together) in one write; the lines are in the kernel's
    /// hands when it returns.
    fn append(&mut self, batch: &[EventLine], stop: &CancellationToken) {
        let Some(f) = self.file.as_mut() else {
            return;
        };
        let mut bytes = Vec::with_capacity(batch.len() * 160);
        for l in batch {
            bytes.extend_from_slice(l.to_json().as_bytes());
            bytes.push(b'\n');
        }
        match f.write_all(&bytes).and_then(|()| f.flush()) {
            Ok(()) => {
                self.whole += bytes.len() as u64;
                self.written += batch.len();
            }
            Err(e) => {
                // Back to the last whole line: a half line would make the file unreadable.
                // Shrinking frees space, so it works on a full disk too.
                let _ = f.set_len(self.whole);
                self.file = None;
                self.cut = Some((self.written, e));
                stop.cancel();
            }
        }
    }
}
