//! What one update sends: the difference between two local snapshots, or
//! between the local tree and what a container holds.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::SyncError;
use crate::ignore::Ignore;
use crate::tree::{Entry, Kind, Mapping, Tree};

/// Deletes and writes for one update, in the order they are applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Update {
    /// Container paths removed (recursively); no path is below another.
    pub deletes: Vec<String>,
    /// Container paths written, parents before children.
    pub writes: Vec<(String, Entry)>,
    /// Project-relative paths that changed, for `trigger:` globs.
    pub changed: Vec<String>,
}

impl Update {
    /// Nothing to send.
    pub fn is_empty(&self) -> bool {
        self.deletes.is_empty() && self.writes.is_empty()
    }

    /// Bytes of file content the writes carry.
    pub fn bytes(&self) -> u64 {
        self.writes
            .iter()
            .map(|(_, e)| match e.kind {
                Kind::File { size, .. } => size,
                _ => 0,
            })
            .sum()
    }

    fn delete(&mut self, path: &str, rel: Option<&str>) {
        if let Some(last) = self.deletes.last() {
            if path
                .strip_prefix(last.as_str())
                .is_some_and(|r| r.starts_with('/'))
            {
                return; // its directory is already going
            }
        }
        self.deletes.push(path.to_string());
        if let Some(rel) = rel {
            self.changed.push(rel.to_string());
        }
    }

    fn write(&mut self, path: &str, entry: &Entry) {
        self.changed.push(entry.rel.clone());
        self.writes.push((path.to_string(), entry.clone()));
    }
}

fn in_scope(path: &str, scope: &str) -> bool {
    scope.is_empty()
        || path
            .strip_prefix(scope)
            .is_some_and(|r| r.is_empty() || r.starts_with('/'))
}

/// The update that turns a container holding `old` into one holding `new`,
/// looking only at `scope` (a container path and what is below it; `""` = all).
pub fn diff(old: &Tree, new: &Tree, scope: &str) -> Update {
    let mut update = Update::default();
    let range = |t: &'_ Tree| -> Vec<String> {
        t.range(scope.to_string()..)
            .take_while(|(k, _)| scope.is_empty() || k.starts_with(scope))
            .filter(|(k, _)| in_scope(k, scope))
            .map(|(k, _)| k.clone())
            .collect()
    };
    let paths: BTreeSet<String> = range(old).into_iter().chain(range(new)).collect();
    for path in &paths {
        match (old.get(path), new.get(path)) {
            (Some(o), None) => update.delete(path, Some(&o.rel)),
            (None, Some(n)) => update.write(path, n),
            (Some(o), Some(n)) if o.kind != n.kind => {
                if !o.kind.same_sort(&n.kind) {
                    update.delete(path, None);
                }
                update.write(path, n);
            }
            _ => {}
        }
    }
    update
}

/// What a container holds below the rule's `to` paths, as listed by the manifest script.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Remote {
    /// Regular files: lowercase hex SHA-256 (empty when the container cannot hash).
    pub files: BTreeMap<String, String>,
    /// Regular files the owner may execute.
    pub executable: BTreeSet<String>,
    /// Directories.
    pub dirs: BTreeSet<String>,
    /// Symbolic links and their targets.
    pub links: BTreeMap<String, String>,
}

/// The update that makes a container holding `remote` match `local`: only files
/// whose content, exec bit or kind differ are sent; container paths below a
/// directory mapping that are not local (and not ignored) are deleted.
pub fn against_remote(
    local: &Tree,
    remote: &Remote,
    mappings: &[Mapping],
    ignore: &Ignore,
    mut hash: impl FnMut(&Entry) -> Result<String, SyncError>,
) -> Result<Update, SyncError> {
    let mut update = Update::default();
    let remote_kind = |path: &str| -> Option<u8> {
        if remote.files.contains_key(path) {
            Some(b'f')
        } else if remote.dirs.contains(path) {
            Some(b'd')
        } else if remote.links.contains_key(path) {
            Some(b'l')
        } else {
            None
        }
    };
    // Deletes first (sorted, so a directory precedes its contents).
    let all_remote: BTreeSet<&String> = remote
        .files
        .keys()
        .chain(&remote.dirs)
        .chain(remote.links.keys())
        .collect();
    for path in all_remote {
        let Some(mapping) = mappings
            .iter()
            .find(|m| m.is_dir && path.strip_prefix(&m.to).is_some_and(|r| r.starts_with('/')))
        else {
            continue; // a mapping root, or outside every directory mapping
        };
        let Some(rel) = mapping.rel_of(path) else {
            continue;
        };
        let is_dir = remote.dirs.contains(path);
        let kind_differs = match local.get(path).map(|e| &e.kind) {
            None => true,
            Some(Kind::File { .. }) => remote_kind(path) != Some(b'f'),
            Some(Kind::Dir { .. }) => remote_kind(path) != Some(b'd'),
            Some(Kind::Symlink(_)) => remote_kind(path) != Some(b'l'),
        };
        if kind_differs && !ignore.is_ignored(&rel, is_dir) {
            update.delete(path, Some(&rel));
        }
    }
    for (path, entry) in local {
        let same = match &entry.kind {
            Kind::File { mode, .. } => match remote.files.get(path) {
                Some(remote_hash) if !remote_hash.is_empty() => {
                    remote.executable.contains(path) == (mode & 0o100 != 0)
                        && *remote_hash == hash(entry)?
                }
                _ => false,
            },
            Kind::Dir { .. } => remote.dirs.contains(path),
            Kind::Symlink(target) => remote.links.get(path) == Some(target),
        };
        if !same {
            update.write(path, entry);
        }
    }
    Ok(update)
}

/// Several partial updates combined: deletes before writes, later writes win.
#[derive(Default)]
pub struct Merged {
    deletes: BTreeSet<String>,
    writes: BTreeMap<String, Entry>,
    changed: Vec<String>,
}

impl Merged {
    /// Adds one partial update.
    pub fn add(&mut self, part: Update) {
        for d in part.deletes {
            let below = format!("{d}/");
            let dropped: Vec<String> = self
                .writes
                .range(d.clone()..)
                .take_while(|(p, _)| p.starts_with(&d))
                .filter(|(p, _)| **p == d || p.starts_with(&below))
                .map(|(p, _)| p.clone())
                .collect();
            for p in dropped {
                self.writes.remove(&p);
            }
            self.deletes.insert(d);
        }
        self.writes.extend(part.writes);
        self.changed.extend(part.changed);
    }

    /// The combined update: deletes collapsed, writes sorted.
    pub fn into_update(self) -> Update {
        let mut deletes: Vec<String> = Vec::new();
        for d in self.deletes {
            let covered = deletes.last().is_some_and(|l| {
                d.strip_prefix(l.as_str())
                    .is_some_and(|r| r.starts_with('/'))
            });
            if !covered {
                deletes.push(d);
            }
        }
        Update {
            deletes,
            writes: self.writes.into_iter().collect(),
            changed: self.changed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn file(rel: &str, size: u64) -> Entry {
        Entry {
            kind: Kind::File {
                size,
                mode: 0o644,
                mtime_ns: 1,
            },
            local: PathBuf::from(rel),
            rel: rel.into(),
        }
    }
    fn dir(rel: &str) -> Entry {
        Entry {
            kind: Kind::Dir { mode: 0o755 },
            local: PathBuf::from(rel),
            rel: rel.into(),
        }
    }

    #[test]
    fn diff_collapses_directory_deletes_and_handles_kind_changes() {
        let old: Tree = [
            ("/app/a".into(), file("a", 1)),
            ("/app/d".into(), dir("d")),
            ("/app/d/x".into(), file("d/x", 1)),
            ("/app/k".into(), dir("k")),
        ]
        .into();
        let new: Tree = [
            ("/app/a".into(), file("a", 2)),
            ("/app/k".into(), file("k", 3)),
            ("/app/n".into(), file("n", 4)),
        ]
        .into();
        let u = diff(&old, &new, "");
        assert_eq!(u.deletes, ["/app/d", "/app/k"]);
        let writes: Vec<&str> = u.writes.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(writes, ["/app/a", "/app/k", "/app/n"]);
        assert_eq!(u.bytes(), 9);
        assert!(diff(&old, &new, "/app/d").writes.is_empty());
        assert_eq!(diff(&old, &new, "/app/d").deletes, ["/app/d"]);
        assert!(diff(&old, &old, "").is_empty());
    }

    #[test]
    fn against_remote_sends_only_differences() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("src")).unwrap();
        let m = Mapping::new(tmp.path(), "src", "/app", false).unwrap();
        let local: Tree = [
            ("/app/same".into(), file("src/same", 1)),
            ("/app/changed".into(), file("src/changed", 1)),
            ("/app/new".into(), file("src/new", 1)),
            ("/app/d".into(), dir("src/d")),
        ]
        .into();
        let remote = Remote {
            files: [
                ("/app/same".into(), "h-same".into()),
                ("/app/changed".into(), "old".into()),
                ("/app/gone".into(), "x".into()),
                ("/app/cache/x".into(), "x".into()),
            ]
            .into(),
            dirs: ["/app".into(), "/app/d".into(), "/app/cache".into()].into(),
            ..Remote::default()
        };
        let mut ignore = Ignore::default();
        ignore.add("t", "src/cache").unwrap();
        let u = against_remote(&local, &remote, &[m], &ignore, |e| {
            Ok(format!("h-{}", e.rel.trim_start_matches("src/")))
        })
        .unwrap();
        assert_eq!(u.deletes, ["/app/gone"]);
        let writes: Vec<&str> = u.writes.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(writes, ["/app/changed", "/app/new"]);
    }

    #[test]
    fn merged_updates_keep_deletes_first_and_drop_writes_under_later_deletes() {
        let mut merged = Merged::default();
        merged.add(Update {
            deletes: vec!["/app/old".into()],
            writes: vec![
                ("/app/d/x".into(), file("d/x", 1)),
                ("/app/new".into(), file("new", 1)),
            ],
            changed: vec!["d/x".into()],
        });
        merged.add(Update {
            deletes: vec!["/app/d".into(), "/app/old/inner".into()],
            writes: vec![("/app/new".into(), file("new", 2))],
            changed: vec!["d".into()],
        });
        let u = merged.into_update();
        assert_eq!(
            u.deletes,
            ["/app/d", "/app/old"],
            "sorted, and /app/old/inner is covered"
        );
        assert_eq!(u.writes.len(), 1, "the write under /app/d is gone");
        assert_eq!(u.writes[0].0, "/app/new");
        assert!(
            matches!(u.writes[0].1.kind, Kind::File { size: 2, .. }),
            "the later write wins"
        );
        assert_eq!(u.changed, ["d/x", "d"]);
    }
}
