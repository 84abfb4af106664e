//! The file system as the core's `FileSource`, and the one bounded way berth
//! reads a file: regular files only (a FIFO would block, `/dev/zero` never ends),
//! at most [`MAX_FILE`] bytes, checked as the bytes arrive; and, by default, only
//! under the project's directory, as kustomize's load restrictor does.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use berth_core::configs::FileSource;

/// Largest file berth reads, so a wrong path (a disk image, a log) fails clearly
/// instead of exhausting memory.
pub const MAX_FILE: u64 = berth_io::limits::FILE;

/// Which files the project may name (`--load-restrictor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LoadRestrictor {
    /// Only files under the directory of berth.yaml (symlinks resolved first).
    #[value(alias = "LoadRestrictionsRootOnly")]
    Root,
    /// Any file the user can read.
    #[value(alias = "LoadRestrictionsNone")]
    None,
}

/// Set once by `main` from the flag; the file readers below consult it.
static RESTRICTOR: OnceLock<LoadRestrictor> = OnceLock::new();

/// Records `--load-restrictor` for this process.
pub fn set_restrictor(restrictor: LoadRestrictor) {
    let _ = RESTRICTOR.set(restrictor);
}

/// Refuses `path` when it resolves outside `root` and the restrictor is `root`.
pub fn contained(root: &Path, path: &Path) -> std::io::Result<()> {
    if RESTRICTOR.get().copied().unwrap_or(LoadRestrictor::Root) == LoadRestrictor::None {
        return Ok(());
    }
    let root = root.canonicalize()?;
    let real = path.canonicalize()?;
    if real.starts_with(&root) {
        return Ok(());
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        format!(
            "it is outside the project directory `{}`{}; berth reads only files under the directory of berth.yaml (as kustomize does): move the file in, or pass `--load-restrictor none`",
            root.display(),
            if real == path { String::new() } else { format!(" (it resolves to `{}`)", real.display()) }
        ),
    ))
}

/// The user's cache directory: `$XDG_CACHE_HOME`, else `~/.cache`; `None`
/// when neither is set.
pub fn user_cache() -> Option<PathBuf> {
    berth_io::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| berth_io::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
}

/// The bytes of the regular file `path`, at most [`MAX_FILE`] of them
/// (berth-io's one bounded reader).
pub fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    berth_io::read_file(path, false)
}

/// As [`read_bounded`], and a pipe too (`berth render <(helm template …)`): for
/// paths given on the command line, never for what berth.yaml names.
pub fn read_given(path: &Path) -> std::io::Result<Vec<u8>> {
    berth_io::read_file(path, true)
}

/// Reads files and lists directories on the local file system, under `root`
/// unless `--load-restrictor none`.
pub struct Fs<'a> {
    /// The project's directory.
    pub root: &'a Path,
}

impl FileSource for Fs<'_> {
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        contained(self.root, path)?;
        read_bounded(path)
    }

    fn list_dir(&self, path: &Path) -> std::io::Result<Option<Vec<PathBuf>>> {
        contained(self.root, path)?;
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
