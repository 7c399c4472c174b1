//! The restore journal on disk: one file per run, `<state dir>/journal/<run-id>.jsonl`, where
//! the state dir is `$DRAINWATCH_STATE_DIR`, else `$XDG_STATE_HOME/drainwatch`, else
//! `~/.local/state/drainwatch`. It lives outside `--out` on purpose: `drainwatch cleanup`
//! finds it by run id alone, and a full `--out` cannot cost the record of what to restore.
//!
//! Each change is appended and synced before it is made ([`Journal::made`]); a change that
//! cannot be journalled is not made. Restores are appended when done. The file is created at
//! the first change, and removed when a trial ends with nothing left to restore: what stays
//! in the state dir is only what a killed (or failed) run left, for `cleanup` to replay.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::console;
use crate::evidence::journal::{Change, Closer, Entry, Opened};
use crate::evidence::plan::Platform;
use crate::evidence::timeline::format_wall_ns;
use crate::host;

/// The journal could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Writing failed; the change it was to record was not made.
    #[error("failed to write the restore journal {path}")]
    Write {
        /// The journal.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Reading failed.
    #[error("failed to read the restore journal {path}")]
    Read {
        /// The journal.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line is not a journal entry.
    #[error("{path}:{line} is not a restore journal entry")]
    Parse {
        /// The journal.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

/// A change's number in its journal.
pub type Seq = u32;

/// Where journals are kept (see the module doc).
pub fn state_dir() -> PathBuf {
    let var = |k| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("DRAINWATCH_STATE_DIR")
        .or_else(|| var("XDG_STATE_HOME").map(|d| d.join("drainwatch")))
        .or_else(|| var("HOME").map(|d| d.join(".local/state/drainwatch")))
        .unwrap_or_else(|| std::env::temp_dir().join("drainwatch-state"))
}

/// The journal of run `run` under `state`.
pub fn path_of(state: &Path, run: &str) -> PathBuf {
    state.join("journal").join(format!("{run}.jsonl"))
}

/// Every journal under `state`, sorted.
pub fn list(state: &Path) -> Result<Vec<PathBuf>, JournalError> {
    let dir = state.join("journal");
    let rd = match fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(source) => return Err(JournalError::Read { path: dir, source }),
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    v.sort();
    Ok(v)
}

/// The entries of a journal.
pub fn read(path: &Path) -> Result<Vec<Entry>, JournalError> {
    let text = fs::read_to_string(path).map_err(|source| JournalError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| {
            serde_json::from_str(l).map_err(|source| JournalError::Parse {
                path: path.to_path_buf(),
                line: n + 1,
                source,
            })
        })
        .collect()
}

/// Appends `entry` to the journal at `path` and syncs it.
pub fn append(path: &Path, entry: &Entry) -> Result<(), JournalError> {
    let err = |source| JournalError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut f = open(path).map_err(err)?;
    write_entry(&mut f, entry).map_err(err)
}

fn open(path: &Path) -> std::io::Result<File> {
    if let Some(d) = path.parent() {
        fs::create_dir_all(d)?;
    }
    OpenOptions::new().create(true).append(true).open(path)
}

fn write_entry(f: &mut File, entry: &Entry) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
    line.push(b'\n');
    f.write_all(&line)?;
    f.sync_data()
}

/// Now, RFC 3339.
pub fn wall() -> String {
    format_wall_ns(host::wall_ns())
}

/// The run's opening record: this process, now.
pub fn opened(run: &str, platform: Platform, out: &Path) -> Opened {
    let pid = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
    Opened {
        run: run.to_string(),
        platform,
        pid,
        start_ticks: host::start_ticks(pid),
        boot_id: host::boot_id().unwrap_or_default(),
        out: out.display().to_string(),
        wall: wall(),
    }
}

struct State {
    path: PathBuf,
    opened: Opened,
    /// Open once the first change was recorded.
    file: Option<File>,
    next: Seq,
    pending: Vec<(Seq, Change)>,
}

impl State {
    fn write(&mut self, entry: &Entry) -> Result<(), JournalError> {
        let r = match self.file.as_mut() {
            Some(f) => write_entry(f, entry),
            None => Ok(()),
        };
        r.map_err(|source| JournalError::Write {
            path: self.path.clone(),
            source,
        })
    }
}

/// A run's journal, shared by everything that changes the world in its trials.
#[derive(Clone)]
pub struct Journal {
    inner: Arc<Mutex<State>>,
}

impl Journal {
    /// The journal of the run `opened` under `state`; nothing is written until a change.
    pub fn new(state: &Path, opened: Opened) -> Self {
        Self {
            inner: Arc::new(Mutex::new(State {
                path: path_of(state, &opened.run),
                opened,
                file: None,
                next: 1,
                pending: Vec::new(),
            })),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        // Each write is one append, so a panic elsewhere while the lock was held cannot leave
        // the state half-changed: a poisoned lock is used as it is.
        let mut g = match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        f(&mut g)
    }

    /// Records `change`, about to be made by `trial`, durably; the change must not be made
    /// when this fails.
    pub fn made(&self, trial: &str, change: Change) -> Result<Seq, JournalError> {
        self.with(|s| {
            if s.file.is_none() {
                let err = |source| JournalError::Write {
                    path: s.path.clone(),
                    source,
                };
                let mut f = open(&s.path).map_err(err)?;
                write_entry(&mut f, &Entry::Opened(s.opened.clone())).map_err(err)?;
                console::progress!("drainwatch: restore journal {}", s.path.display());
                s.file = Some(f);
            }
            let seq = s.next;
            s.write(&Entry::Made {
                seq,
                trial: trial.to_string(),
                wall: wall(),
                change: change.clone(),
            })?;
            s.next += 1;
            s.pending.push((seq, change));
            Ok(seq)
        })
    }

    /// Records that change `seq` was restored (`how`).
    pub fn restored(&self, seq: Seq, how: &str) -> Result<(), JournalError> {
        self.with(|s| {
            s.write(&Entry::Restored {
                seq,
                wall: wall(),
                how: how.to_string(),
            })?;
            s.pending.retain(|(q, _)| *q != seq);
            Ok(())
        })
    }

    /// Records that the newest pending change equal to `change` was restored.
    pub fn restored_change(&self, change: &Change, how: &str) -> Result<(), JournalError> {
        let seq = self.with(|s| {
            s.pending
                .iter()
                .rev()
                .find(|(_, c)| c == change)
                .map(|(q, _)| *q)
        });
        match seq {
            Some(q) => self.restored(q, how),
            None => Ok(()),
        }
    }

    /// At the end of a trial: with nothing left to restore, the journal is closed and
    /// removed (there is nothing for cleanup to replay), and None returned; otherwise it
    /// stays, and its path is returned.
    pub fn finish(&self) -> Result<Option<PathBuf>, JournalError> {
        self.with(|s| {
            if s.file.is_none() {
                return Ok(None);
            }
            if !s.pending.is_empty() {
                return Ok(Some(s.path.clone()));
            }
            s.write(&Entry::Closed {
                wall: wall(),
                by: Closer::Run,
            })?;
            s.file = None;
            fs::remove_file(&s.path).map_err(|source| JournalError::Write {
                path: s.path.clone(),
                source,
            })?;
            Ok(None)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::journal::{ProcessRole, closed, pending};

    #[test]
    fn a_change_is_on_disk_before_it_is_made_and_a_clean_end_removes_the_file() {
        let dir = std::env::temp_dir().join(format!("dw-journal-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let j = Journal::new(
            &dir,
            opened("20261201-000000-00000000", Platform::Local, &dir),
        );
        assert_eq!(j.finish().unwrap(), None, "nothing changed: no file");
        let p = Change::ProcessSpawned {
            role: ProcessRole::Probe,
            pid: 1,
            start_ticks: None,
            boot_id: "b".into(),
        };
        let seq = j.made("trial-001", p.clone()).unwrap();
        let path = path_of(&dir, "20261201-000000-00000000");
        let on_disk = read(&path).unwrap();
        assert_eq!(pending(&on_disk), vec![(seq, &p)]);
        assert_eq!(j.finish().unwrap(), Some(path.clone()), "pending: kept");
        j.restored_change(&p, "exited").unwrap();
        assert!(pending(&read(&path).unwrap()).is_empty());
        assert_eq!(closed(&read(&path).unwrap()), None);
        assert_eq!(j.finish().unwrap(), None);
        assert!(!path.exists());
        let _ = fs::remove_dir_all(&dir);
    }
}
