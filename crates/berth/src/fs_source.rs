//! The file system as the core's `FileSource`.

use std::path::{Path, PathBuf};

use berth_core::configs::FileSource;

/// Reads files and lists directories on the local file system.
pub struct Fs;

/// Largest file a config or CA bundle may read, so a wrong path (a disk
/// image, a log) fails clearly instead of exhausting memory.
const MAX_FILE: u64 = 64 << 20;

impl FileSource for Fs {
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let metadata = std::fs::metadata(path)?;
        if metadata.is_dir() {
            return Err(std::io::Error::other("is a directory"));
        }
        if metadata.len() > MAX_FILE {
            return Err(std::io::Error::other(format!(
                "larger than {} MiB",
                MAX_FILE >> 20
            )));
        }
        std::fs::read(path)
    }

    fn list_dir(&self, path: &Path) -> std::io::Result<Option<Vec<PathBuf>>> {
        if !std::fs::metadata(path)?.is_dir() {
            return Ok(None);
        }
        let mut files = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            // Regular files only (following links to files), as kubectl's --from-file=DIR.
            if std::fs::metadata(entry.path()).is_ok_and(|m| m.is_file()) {
                files.push(entry.path());
            }
        }
        files.sort();
        Ok(Some(files))
    }
}
