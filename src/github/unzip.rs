//! Unzipping a downloaded artifact safely: every entry is checked before anything is written, and
//! one that would land outside the directory (absolute, `..`) or is a symbolic link refuses the
//! whole archive, so a crafted artifact can never write beside the baseline.

use std::io::{Cursor, Read};
use std::path::{Component, Path, PathBuf};

/// Why an archive was not unzipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnzipError {
    /// An entry would land outside the directory, or is a symbolic link: nothing is written.
    #[error(
        "the archive holds an entry that escapes the directory ({0}): refused, nothing unzipped"
    )]
    Unsafe(String),
    /// Not a zip, or the disk refused.
    #[error("{0}")]
    Failed(String),
}

/// The most a baseline artifact may unpack to (a run's reports are a few MB): a larger or
/// lying archive is refused by name rather than filling the runner's disk or memory.
pub const MAX_UNZIPPED_BYTES: u64 = 256 << 20;

fn too_large() -> UnzipError {
    failed(format!(
        "the archive unpacks to more than {MAX_UNZIPPED_BYTES} bytes (MAX_UNZIPPED_BYTES): refused"
    ))
}

fn failed(e: impl ToString) -> UnzipError {
    UnzipError::Failed(e.to_string())
}

/// The path of an archive entry inside the directory, or `None` when it would leave it
/// (absolute, `..`, a drive prefix). `pub` as the fuzz entry (fuzz/fuzz_targets/unzip_path.rs).
pub fn inside(name: &str) -> Option<PathBuf> {
    let p = Path::new(name);
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// Unzips `bytes` into `dir` (created). Every entry is checked before anything is written: one
/// that escapes `dir`, or a symbolic link, refuses the whole archive.
pub fn unzip(bytes: &[u8], dir: &Path) -> Result<usize, UnzipError> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(failed)?;
    let mut plan = Vec::with_capacity(zip.len());
    let mut declared: u64 = 0;
    for i in 0..zip.len() {
        let f = zip.by_index_raw(i).map_err(failed)?;
        declared = declared.saturating_add(f.size());
        if declared > MAX_UNZIPPED_BYTES {
            return Err(too_large());
        }
        let name = f.name().to_string();
        let Some(rel) = inside(&name).filter(|_| !f.is_symlink()) else {
            return Err(UnzipError::Unsafe(name));
        };
        plan.push((i, rel, f.is_dir()));
    }
    if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(failed(format!("{} is not empty", dir.display())));
    }
    std::fs::create_dir_all(dir).map_err(failed)?;
    let mut files = 0;
    // The sizes in the headers are the archive's claim; the bytes read are held to the cap too.
    let mut left = MAX_UNZIPPED_BYTES;
    for (i, rel, is_dir) in plan {
        let path = dir.join(&rel);
        if is_dir {
            std::fs::create_dir_all(&path).map_err(failed)?;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(failed)?;
        }
        let f = zip.by_index(i).map_err(failed)?;
        let mut data = Vec::new();
        f.take(left + 1).read_to_end(&mut data).map_err(failed)?;
        left = left.checked_sub(data.len() as u64).ok_or_else(too_large)?;
        std::fs::write(&path, data).map_err(failed)?;
        files += 1;
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_entries_inside_the_directory_are_accepted() {
        assert_eq!(
            inside("rollout/report.json"),
            Some("rollout/report.json".into())
        );
        assert_eq!(inside("./a"), Some("a".into()));
        assert_eq!(inside("../evil"), None);
        assert_eq!(inside("a/../../evil"), None);
        assert_eq!(inside("/etc/passwd"), None);
        assert_eq!(inside(""), None);
    }

    #[test]
    fn a_zip_that_is_not_one_is_named() {
        let dir = std::env::temp_dir().join(format!("dw-unzip-{}", std::process::id()));
        let e = unzip(b"not a zip", &dir).unwrap_err();
        assert!(
            matches!(&e, UnzipError::Failed(why) if why.contains("invalid Zip archive")),
            "{e}"
        );
        assert!(!dir.exists());
    }

    fn archive(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (name, body) in entries {
            w.start_file(*name, opts).unwrap();
            std::io::Write::write_all(&mut w, body.as_bytes()).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn an_escaping_entry_refuses_the_whole_archive_and_a_clean_one_is_written() {
        let root = std::env::temp_dir().join(format!("dw-unzip-safe-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dir = root.join("baseline");
        let evil = archive(&[("rollout/report.json", "{}"), ("../escaped", "x")]);
        assert_eq!(
            unzip(&evil, &dir),
            Err(UnzipError::Unsafe("../escaped".into()))
        );
        assert!(!dir.exists() && !root.join("escaped").exists());
        let good = archive(&[("rollout/report.json", "{}"), ("verdict.json", "[]")]);
        assert_eq!(unzip(&good, &dir), Ok(2));
        assert_eq!(
            std::fs::read_to_string(dir.join("rollout/report.json")).unwrap(),
            "{}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
