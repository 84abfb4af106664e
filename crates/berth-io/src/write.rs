//! The one way berth writes a file: `berth init`'s berth.yaml, `berth pin`'s
//! berth.lock, `berth render --out`'s objects.
//!
//! Modelled on kustomize's load restrictor and `tempfile::NamedTempFile::persist`:
//! - the target's directory, symlinks resolved, must be inside `root` (the
//!   project), so a planted link never carries a write elsewhere;
//! - a target that is itself a symlink is followed only when it resolves inside
//!   `root`, and refused otherwise (a dangling one included);
//! - the bytes go to a new temporary file beside the target, opened with
//!   `O_CREAT|O_EXCL|O_NOFOLLOW` (a planted file or link of that name is never
//!   opened: another name is tried), flushed to disk, then renamed over the
//!   target — or, with [`Mode::CreateNew`], linked to it, which fails when the
//!   target exists — so a reader sees the old file or the whole new one, never half.
//!
//! What remains: a directory swapped for a link between the check and the open
//! (a local attacker racing berth) is not prevented; `openat` per component
//! would be, and is more than a CLI run by the project's owner needs.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Whether an existing target is replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Replace the target atomically (berth.lock, rendered objects).
    Replace,
    /// Fail when the target exists (berth init never replaces berth.yaml).
    CreateNew,
}

/// Why a write did not happen. The target is unchanged in every case.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The target, its directory or a link on the way leaves the project.
    #[error("cannot write `{target}`: {why} outside the project directory `{root}`; berth writes only inside it")]
    Outside {
        /// The file asked for.
        target: PathBuf,
        /// The project directory.
        root: PathBuf,
        /// What leaves it (`it resolves to /etc/passwd,`).
        why: String,
    },
    /// [`Mode::CreateNew`] and the target is there.
    #[error("`{0}` already exists")]
    Exists(PathBuf),
    /// The file system refused (permissions, a full disk, a missing directory).
    #[error("cannot write `{path}`: {source}")]
    Io {
        /// The path the failing call was made on.
        path: PathBuf,
        /// The system's answer.
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `bytes` to `target`, which must be inside `root` (see the module's doc).
pub fn write_atomic(
    root: &Path,
    target: &Path,
    bytes: &[u8],
    mode: Mode,
) -> Result<(), WriteError> {
    let final_path = checked_target(root, target, mode)?;
    let dir = final_path.parent().unwrap_or(Path::new("/"));
    let (temporary, mut file) = create_temporary(dir, &final_path)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(io(&temporary));
    drop(file);
    let placed = written.and_then(|()| match mode {
        Mode::Replace => std::fs::rename(&temporary, &final_path).map_err(io(&final_path)),
        Mode::CreateNew => match std::fs::hard_link(&temporary, &final_path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                Err(WriteError::Exists(target.to_path_buf()))
            }
            Err(e) => Err(io(&final_path)(e)),
        },
    });
    if placed.is_err() || mode == Mode::CreateNew {
        // Losing this error is right: the temporary is ours and either the
        // write already failed (that error is returned) or the link holds the data.
        let _ = std::fs::remove_file(&temporary);
    }
    placed
}

/// The path to write: the target's directory resolved and checked against
/// `root`; a symlink target resolved and checked too.
fn checked_target(root: &Path, target: &Path, mode: Mode) -> Result<PathBuf, WriteError> {
    let root_real = root.canonicalize().map_err(io(root))?;
    let outside = |why: String| WriteError::Outside {
        target: target.to_path_buf(),
        root: root_real.clone(),
        why,
    };
    let name = target
        .file_name()
        .ok_or_else(|| io(target)(std::io::Error::other("it names no file")))?;
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let parent_real = parent.canonicalize().map_err(io(parent))?;
    if !parent_real.starts_with(&root_real) {
        return Err(outside(format!(
            "its directory resolves to `{}`,",
            parent_real.display()
        )));
    }
    let candidate = parent_real.join(name);
    match std::fs::symlink_metadata(&candidate) {
        Ok(m) if m.file_type().is_symlink() => {
            if mode == Mode::CreateNew {
                return Err(WriteError::Exists(target.to_path_buf()));
            }
            match candidate.canonicalize() {
                Ok(real) if real.starts_with(&root_real) && !real.is_dir() => Ok(real),
                Ok(real) => Err(outside(format!(
                    "it is a symbolic link to `{}`,",
                    real.display()
                ))),
                Err(_) => Err(outside(
                    "it is a symbolic link that resolves to nothing, possibly".into(),
                )),
            }
        }
        Ok(m) if m.is_dir() => Err(io(target)(std::io::Error::other("it is a directory"))),
        Ok(_) if mode == Mode::CreateNew => Err(WriteError::Exists(target.to_path_buf())),
        _ => Ok(candidate),
    }
}

/// A new file beside `final_path`, never an existing one or a link.
fn create_temporary(dir: &Path, final_path: &Path) -> Result<(PathBuf, std::fs::File), WriteError> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let base = final_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut last = None;
    for _ in 0..16 {
        let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = dir.join(format!(
            ".{base}.{}-{unique}-{nanos:x}.berth-tmp",
            std::process::id()
        ));
        let mut options = std::fs::OpenOptions::new();
        options
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
        // Keep the mode of the file being replaced (a berth.lock made group-writable).
        if let Ok(m) = std::fs::metadata(final_path) {
            use std::os::unix::fs::PermissionsExt as _;
            options.mode(m.permissions().mode() & 0o7777);
        }
        match options.open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(io(&path)(e)),
        }
    }
    Err(io(dir)(last.unwrap_or_else(|| {
        std::io::Error::other("no free temporary name")
    })))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("project");
        let outside = top.path().join("outside");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(&outside).unwrap();
        (top, root, outside)
    }

    #[test]
    fn writes_replace_atomically_and_create_new_never_replaces() {
        let (_top, root, _) = setup();
        let target = root.join("berth.lock");
        write_atomic(&root, &target, b"one", Mode::Replace).unwrap();
        write_atomic(&root, &target, b"two", Mode::Replace).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"two");
        let err = write_atomic(&root, &target, b"three", Mode::CreateNew).unwrap_err();
        assert!(matches!(err, WriteError::Exists(_)), "{err}");
        assert_eq!(std::fs::read(&target).unwrap(), b"two");
        // No temporary is left behind.
        let names: Vec<_> = std::fs::read_dir(&root).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    /// A file outside the project that holds `safe` and must keep holding it.
    fn victim(outside: &Path, name: &str) -> PathBuf {
        let victim = outside.join(name);
        std::fs::write(&victim, "safe").unwrap();
        victim
    }

    #[test]
    fn links_out_of_the_project_are_refused_and_nothing_is_written_there() {
        let (_top, root, outside) = setup();
        let victim = victim(&outside, "bashrc");
        // The target is a link out.
        symlink(&victim, root.join("berth.lock")).unwrap();
        let err = write_atomic(&root, &root.join("berth.lock"), b"evil", Mode::Replace)
            .unwrap_err()
            .to_string();
        assert!(err.contains("symbolic link to"), "{err}");
        // A directory on the way is a link out.
        symlink(&outside, root.join("out")).unwrap();
        let err = write_atomic(&root, &root.join("out/x.yaml"), b"evil", Mode::Replace)
            .unwrap_err()
            .to_string();
        assert!(err.contains("its directory resolves to"), "{err}");
        // A dangling link, and CreateNew on any link.
        symlink(outside.join("new"), root.join("dangling")).unwrap();
        assert!(write_atomic(&root, &root.join("dangling"), b"x", Mode::Replace).is_err());
        assert!(matches!(
            write_atomic(&root, &root.join("berth.lock"), b"x", Mode::CreateNew),
            Err(WriteError::Exists(_))
        ));
        assert!(!outside.join("new").exists());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "safe");
    }

    #[test]
    fn a_link_inside_the_project_is_followed() {
        let (_top, root, _) = setup();
        std::fs::write(root.join("real.lock"), "old").unwrap();
        symlink("real.lock", root.join("berth.lock")).unwrap();
        write_atomic(&root, &root.join("berth.lock"), b"new", Mode::Replace).unwrap();
        assert_eq!(std::fs::read(root.join("real.lock")).unwrap(), b"new");
        assert!(std::fs::symlink_metadata(root.join("berth.lock"))
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_planted_temporary_name_is_never_opened() {
        let (_top, root, outside) = setup();
        let victim = victim(&outside, "rc");
        // Every name of the old fixed form, and a link where a temporary might go.
        symlink(&victim, root.join(".berth.yaml.init-tmp")).unwrap();
        write_atomic(
            &root,
            &root.join("berth.yaml"),
            b"name: x\n",
            Mode::CreateNew,
        )
        .unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "safe");
        assert_eq!(
            std::fs::read(root.join("berth.yaml")).unwrap(),
            b"name: x\n"
        );
    }

    #[test]
    fn permissions_of_a_replaced_file_are_kept() {
        use std::os::unix::fs::PermissionsExt as _;
        let (_top, root, _) = setup();
        let target = root.join("berth.lock");
        std::fs::write(&target, "a").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&root, &target, b"b", Mode::Replace).unwrap();
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
    }
}
