//! Files that a reader sees whole or not at all: written under a temporary name, synced,
//! renamed over the old one, and the folder synced so that the rename outlives a power cut.

use std::fs::File;
use std::path::{Path, PathBuf};

/// A file operation that failed, with the file.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct IoError {
    /// The file or folder.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

impl IoError {
    /// How a failed operation on `path` is reported.
    pub fn at(path: &Path) -> impl FnOnce(std::io::Error) -> IoError + '_ {
        move |source| IoError { path: path.to_path_buf(), source }
    }
}

/// The temporary name `path` is written under: its whole name and `.tmp`, so that two files
/// that differ only in their extension (a checkpoint's `.json` and `.safetensors`) never share one.
fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Writes `bytes` to `path` atomically (see [`write_atomic_with`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), IoError> {
    write_atomic_with(path, |tmp| std::fs::write(tmp, bytes).map_err(IoError::at(tmp)))
}

/// Has `write` write the file at the temporary path it is given (for writers that want a
/// path, such as libtorch's, SQLite or Arrow's), then syncs it, renames it to `path` and syncs
/// the folder; returns what `write` returned. If `write` fails, its partial file is removed.
pub fn write_atomic_with<T, E: From<IoError>>(path: &Path, write: impl FnOnce(&Path) -> Result<T, E>) -> Result<T, E> {
    let tmp = temp_path(path);
    let written = match write(&tmp) {
        Ok(written) => written,
        Err(e) => {
            // Best effort: the error that matters is the write's.
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    File::open(&tmp).and_then(|f| f.sync_all()).map_err(IoError::at(&tmp))?;
    std::fs::rename(&tmp, path).map_err(IoError::at(path))?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    File::open(dir).and_then(|d| d.sync_all()).map_err(IoError::at(dir))?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_atomic_write_replaces_the_file_and_leaves_no_temporary_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        write_atomic(&path, b"old").unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["a.json"]);
        assert_eq!(temp_path(&path), dir.path().join("a.json.tmp"));
    }

    #[test]
    fn a_failed_write_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        write_atomic(&path, b"old").unwrap();
        let failed: Result<(), IoError> = write_atomic_with(&path, |tmp| {
            std::fs::write(tmp, b"par").map_err(IoError::at(tmp))?;
            Err(IoError { path: tmp.to_path_buf(), source: std::io::Error::other("disk full") })
        });
        assert!(failed.unwrap_err().to_string().contains("a.json.tmp: disk full"));
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert!(!temp_path(&path).exists(), "the partial file is removed");
        let error = write_atomic(&dir.path().join("absent/a.json"), b"x").unwrap_err();
        assert!(error.path.ends_with("absent/a.json.tmp"), "{error}");
    }
}
