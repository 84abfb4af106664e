//! The local side: which files a rule sends, and where each lands in the container.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::SyncError;
use crate::ignore::Ignore;

/// One `paths:` entry, resolved against the project directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// The local `from`, absolute.
    pub local: PathBuf,
    /// `from` relative to the project directory, `/`-separated, no trailing `/`
    /// (what ignore and trigger patterns are matched against).
    pub rel: String,
    /// Where `local` lands in the container.
    pub to: String,
    /// Whether `local` is a directory (its contents mirror into `to`).
    pub is_dir: bool,
}

/// What a path is, as far as the container needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File {
        /// Its size in bytes.
        size: u64,
        /// Whether the owner may execute it (tar carries the full mode).
        mode: u32,
        /// Modification time in nanoseconds, to notice edits without hashing.
        mtime_ns: i128,
    },
    /// A directory (sent so empty ones exist too).
    Dir {
        /// Its permission bits.
        mode: u32,
    },
    /// A symbolic link, sent as a link, never followed.
    Symlink(String),
}

impl Kind {
    /// Whether two kinds are the same sort of thing (a change needs no delete first).
    pub fn same_sort(&self, other: &Kind) -> bool {
        matches!(
            (self, other),
            (Kind::File { .. }, Kind::File { .. })
                | (Kind::Dir { .. }, Kind::Dir { .. })
                | (Kind::Symlink(_), Kind::Symlink(_))
        )
    }
}

/// A local path a rule sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// What it is.
    pub kind: Kind,
    /// Where it is locally.
    pub local: PathBuf,
    /// Its path relative to the project directory (for triggers).
    pub rel: String,
}

/// A rule's files, keyed by container path (sorted, so parents precede children).
pub type Tree = BTreeMap<String, Entry>;

impl Mapping {
    /// Resolves a `paths:` entry. `from` is relative to `project_dir`.
    pub fn new(
        project_dir: &Path,
        from: &str,
        to: &str,
        into_dir: bool,
    ) -> Result<Mapping, SyncError> {
        let local = project_dir.join(from);
        let meta = std::fs::metadata(&local).map_err(SyncError::io(&local))?;
        if !meta.is_dir() && !meta.is_file() {
            // A FIFO blocks the reader, a device never ends: neither is sent.
            return Err(SyncError::Io {
                path: local,
                source: std::io::Error::other(
                    "`from:` is not a regular file or a directory (a FIFO, a socket or a device); sync files or directories",
                ),
            });
        }
        let rel = from
            .trim_start_matches("./")
            .trim_end_matches('/')
            .to_string();
        let rel = if rel == "." { String::new() } else { rel };
        let is_dir = meta.is_dir();
        let to = match local.file_name().and_then(|n| n.to_str()) {
            Some(name) if !is_dir && into_dir => format!("{}/{name}", to.trim_end_matches('/')),
            _ => to.to_string(),
        };
        Ok(Mapping {
            local,
            rel,
            to,
            is_dir,
        })
    }

    /// The container path and project-relative path of a local path at or below `local`.
    pub fn place(&self, path: &Path) -> Option<(String, String)> {
        let below = path.strip_prefix(&self.local).ok()?.to_str()?;
        if below.is_empty() {
            return Some((self.to.clone(), self.rel.clone()));
        }
        let join = |base: &str| {
            if base.is_empty() {
                below.to_string()
            } else {
                format!("{base}/{below}")
            }
        };
        Some((
            format!("{}/{below}", self.to.trim_end_matches('/')),
            join(&self.rel),
        ))
    }

    /// The project-relative path of a container path at or below `to`.
    pub fn rel_of(&self, container_path: &str) -> Option<String> {
        let below = container_path.strip_prefix(&self.to)?;
        if below.is_empty() {
            return Some(self.rel.clone());
        }
        let below = below.strip_prefix('/')?;
        Some(if self.rel.is_empty() {
            below.to_string()
        } else {
            format!("{}/{below}", self.rel)
        })
    }

    /// Scans `start` (this mapping's `local` or a path below it) into `tree`.
    /// Paths that cannot be sent safely are skipped and reported in `skipped`.
    pub fn scan(
        &self,
        start: &Path,
        ignore: &Ignore,
        tree: &mut Tree,
        skipped: &mut Vec<SyncError>,
    ) -> Result<(), SyncError> {
        let meta = match std::fs::symlink_metadata(start) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(SyncError::io(start)(e)),
        };
        let Some((container, rel)) = self.place(start) else {
            return Ok(());
        };
        let is_root = start == self.local;
        if !is_root && ignore.is_ignored(&rel, meta.is_dir()) {
            return Ok(());
        }
        if container.contains('\n') || rel.contains('\n') {
            skipped.push(SyncError::Unsendable {
                local: start.to_path_buf(),
                reason: "its name contains a newline, which the update stream cannot carry",
            });
            return Ok(());
        }
        let kind = if meta.file_type().is_symlink() {
            let target = std::fs::read_link(start).map_err(SyncError::io(start))?;
            let Some(target) = target.to_str().map(str::to_string) else {
                skipped.push(SyncError::Unsendable {
                    local: start.to_path_buf(),
                    reason: "it is a symlink whose target is not UTF-8",
                });
                return Ok(());
            };
            if let Some(reason) = self.link_escapes(&container, &target) {
                skipped.push(SyncError::Escape {
                    local: start.to_path_buf(),
                    to: self.to.clone(),
                    reason,
                });
                return Ok(());
            }
            Kind::Symlink(target)
        } else if meta.is_dir() {
            let mut children: Vec<PathBuf> = std::fs::read_dir(start)
                .map_err(SyncError::io(start))?
                .map(|e| e.map(|e| e.path()))
                .collect::<Result<_, _>>()
                .map_err(SyncError::io(start))?;
            children.sort();
            for child in children {
                if child.to_str().is_none() {
                    skipped.push(SyncError::Unsendable {
                        local: child,
                        reason: "its name is not UTF-8",
                    });
                    continue;
                }
                self.scan(&child, ignore, tree, skipped)?;
            }
            Kind::Dir {
                mode: meta.permissions().mode() & 0o7777,
            }
        } else if meta.is_file() {
            Kind::File {
                size: meta.len(),
                mode: meta.permissions().mode() & 0o7777,
                mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            }
        } else {
            return Ok(()); // sockets, FIFOs, devices: nothing a container can use
        };
        // The mapping root directory itself is not sent: it may belong to another user.
        if !(is_root && self.is_dir) {
            tree.insert(
                container,
                Entry {
                    kind,
                    local: start.to_path_buf(),
                    rel,
                },
            );
        }
        Ok(())
    }

    /// Why a symlink at `container` pointing to `target` would leave `to`, if it would.
    fn link_escapes(&self, container: &str, target: &str) -> Option<String> {
        if target.starts_with('/') {
            return Some(format!("it is a symlink to the absolute path `{target}`"));
        }
        let below = container.strip_prefix(&self.to).unwrap_or_default();
        // Depth of the link's directory below `to`.
        let mut depth = below.matches('/').count().saturating_sub(1) as i64;
        for part in target.split('/') {
            match part {
                "" | "." => {}
                ".." => depth -= 1,
                _ => depth += 1,
            }
            if depth < 0 {
                return Some(format!(
                    "it is a symlink to `{target}`, outside the synced directory"
                ));
            }
        }
        None
    }
}

/// The SHA-256 of a local file, read in blocks (never whole into memory).
pub fn hash_file(path: &Path) -> Result<[u8; 32], SyncError> {
    use sha2::Digest;
    let mut file = std::fs::File::open(path).map_err(SyncError::io(path))?;
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).map_err(SyncError::io(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_files_dirs_links_and_skips_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("empty")).unwrap();
        std::fs::create_dir_all(src.join("sub")).unwrap();
        std::fs::write(src.join("a.txt"), "a").unwrap();
        std::fs::write(src.join("sub/run.sh"), "#!/bin/sh").unwrap();
        std::fs::set_permissions(
            src.join("sub/run.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        std::os::unix::fs::symlink("../a.txt", src.join("sub/link")).unwrap();
        std::os::unix::fs::symlink("../../etc", src.join("out")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", src.join("abs")).unwrap();
        std::fs::write(src.join("x.swp"), "").unwrap();
        std::fs::write(src.join("new\nline"), "").unwrap();
        let m = Mapping::new(dir.path(), "src/", "/app", false).unwrap();
        let mut ignore = Ignore::default();
        ignore.add("t", "**/*.swp").unwrap();
        let (mut tree, mut skipped) = (Tree::new(), Vec::new());
        m.scan(&m.local, &ignore, &mut tree, &mut skipped).unwrap();
        let keys: Vec<&str> = tree.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "/app/a.txt",
                "/app/empty",
                "/app/sub",
                "/app/sub/link",
                "/app/sub/run.sh"
            ]
        );
        assert!(matches!(
            tree["/app/sub/run.sh"].kind,
            Kind::File {
                mode: 0o755,
                size: 9,
                ..
            }
        ));
        assert_eq!(tree["/app/sub/link"].kind, Kind::Symlink("../a.txt".into()));
        assert_eq!(tree["/app/sub/run.sh"].rel, "src/sub/run.sh");
        assert_eq!(skipped.len(), 3, "{skipped:?}");
        assert!(skipped.iter().any(|e| e.to_string().ends_with(
            "not sent: its name contains a newline, which the update stream cannot carry"
        )));
        assert_eq!(m.rel_of("/app/sub/x").as_deref(), Some("src/sub/x"));
        assert_eq!(m.rel_of("/application"), None);
    }

    #[test]
    fn a_file_mapping_goes_into_a_directory_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.py"), "print()").unwrap();
        let m = Mapping::new(dir.path(), "main.py", "/app", true).unwrap();
        assert_eq!(m.to, "/app/main.py");
        let m = Mapping::new(dir.path(), "main.py", "/app/run.py", false).unwrap();
        let (mut tree, mut skipped) = (Tree::new(), Vec::new());
        m.scan(&m.local, &Ignore::default(), &mut tree, &mut skipped)
            .unwrap();
        assert_eq!(tree.keys().collect::<Vec<_>>(), ["/app/run.py"]);
        assert_eq!(tree["/app/run.py"].rel, "main.py");
    }
}
