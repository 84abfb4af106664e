//! Which kustomization set a tag that a warning names in an overlay's output.
//! A drift found in `kubectl kustomize`'s output points at a line of that
//! output; the tag came from an `images:` entry's `newTag` (or `digest`) in the
//! overlay or one of the kustomizations it builds on — the line the user edits.
//! The outermost entry for the image wins, as in kustomize.
//!
//! And which file an object of that output came from (#46 item 7): a warning at
//! `kustomize DIR:154278:20 (ConfigMap/inferenceservice-config)` names a line of
//! no file; `; from config/configmap/inferenceservice.yaml` names the one the
//! user edits, and lets `accept: at:` name that file or its directory.

use std::path::{Path, PathBuf};

use berth_core::place::{How, Via};
use berth_core::render::Findings;
use berth_core::{Manifest, ManifestSource, Place, Project};
use berth_ref::Reference;

/// Adds to each drift in an overlay's output the `images:` entry that set its tag.
pub fn attribute(project: &Project, manifests: &[Manifest], findings: &mut Findings) {
    for manifest in manifests {
        let ManifestSource::Kustomize(dir) = &manifest.source else {
            continue;
        };
        let dir = project.dir.join(dir);
        let output = crate::inputs::kustomize_output(&dir);
        let ours = |at: &Place| at.is_in(&output);
        if !findings.drifted.iter().any(|d| ours(&d.at))
            && !findings.strays.iter().any(|s| ours(&s.at))
        {
            continue; // nothing to attribute: the walk (which parses every resource) is skipped
        }
        let mut walk = Walk::default();
        walk.collect(&dir, &project.dir);
        for at in (findings.drifted.iter_mut().map(|d| &mut d.at))
            .chain(findings.strays.iter_mut().map(|s| &mut s.at))
            .filter(|at| ours(at))
        {
            if let Some(file) = at.object.as_deref().and_then(|o| walk.source_of(o)) {
                let from = Via {
                    how: How::From,
                    file: file.to_string(),
                    spot: None,
                    detail: None,
                };
                at.via.push(from);
            }
        }
        for drift in findings.drifted.iter_mut().filter(|d| ours(&d.at)) {
            let Ok(found) = Reference::parse(&drift.found) else {
                continue;
            };
            if let Some(entry) = walk.setting(&found) {
                drift.at.via.push(Via {
                    how: How::SetBy,
                    file: entry.file.clone(),
                    spot: Some(entry.pos.into()),
                    detail: entry.new_tag.as_ref().map(|tag| format!("newTag: {tag}")),
                });
            }
        }
    }
}

/// One `images:` entry of a kustomization.
pub struct Entry {
    /// The kustomization file, relative to the project.
    pub file: String,
    /// Where its `newTag:` is written (else the entry).
    pub pos: berth_yaml::Pos,
    /// `name:`.
    pub name: String,
    /// `newName:`.
    pub new_name: Option<String>,
    /// `newTag:`.
    pub new_tag: Option<String>,
}

impl Entry {
    /// Whether it edits images of repository `last` (its last path component), as
    /// kustomize matches `name:` and as the drift attribution does.
    pub fn names(&self, last: &str) -> bool {
        [Some(&self.name), self.new_name.as_ref()]
            .into_iter()
            .flatten()
            .any(|n| {
                n.rsplit('/')
                    .next()
                    .is_some_and(|l| l.split([':', '@']).next() == Some(last))
            })
    }
}

/// Every `images:` entry of the kustomizations the project renders: each
/// `kustomize:` source of `manifests:` and of every profile, and those they
/// build on, each file once.
pub fn entries(project: &Project) -> Vec<Entry> {
    let mut walk = Walk::default();
    let sources =
        (project.manifests.iter()).chain(project.profiles.iter().flat_map(|p| p.manifests.iter()));
    for manifest in sources {
        if let ManifestSource::Kustomize(dir) = &manifest.source {
            walk.collect(&project.dir.join(dir), &project.dir);
        }
    }
    walk.entries
}

/// What a walk of a kustomization and those it builds on found.
#[derive(Default)]
struct Walk {
    /// `images:` entries, outermost first.
    entries: Vec<Entry>,
    /// `(kind, name, file)` of each object its resources define, and of each
    /// generator (the kustomization file that declares it).
    sources: Vec<(String, String, String)>,
    seen: Vec<PathBuf>,
}

impl Walk {
    /// The `images:` entry that set `found`'s tag: the outermost that names its
    /// repository's last component with that `newTag`.
    fn setting(&self, found: &Reference) -> Option<&Entry> {
        let tag = found.tag().map(|t| t.to_string());
        let last = found.repository().last_component().to_string();
        (self.entries.iter()).find(|e| e.names(&last) && e.new_tag.is_some() && e.new_tag == tag)
    }

    /// The source file of `object` (`Kind/name`): the one of that kind and name, else
    /// the longest name the output's contains (a `namePrefix`, a generator's hash).
    fn source_of(&self, object: &str) -> Option<&str> {
        let (kind, name) = object.split_once('/')?;
        let same_kind = || self.sources.iter().filter(|(k, _, _)| k == kind);
        same_kind()
            .find(|(_, n, _)| n == name)
            .or_else(|| {
                same_kind()
                    .filter(|(_, n, _)| name.contains(n.as_str()))
                    .max_by_key(|(_, n, _)| n.len())
            })
            .map(|(_, _, file)| file.as_str())
    }

    /// Walks the kustomization in `dir`, then those it builds on (its local
    /// `resources:`, `bases:`, `components:`), outermost first.
    fn collect(&mut self, dir: &Path, root: &Path) {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        if self.seen.len() > 64 || self.seen.contains(&dir) {
            return;
        }
        self.seen.push(dir.clone());
        let Some((file, kustomization)) = crate::kustomize::read_kustomization(&dir) else {
            return;
        };
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let shown = |path: &Path| {
            path.strip_prefix(&root)
                .unwrap_or(path)
                .display()
                .to_string()
        };
        for edit in &kustomization.images {
            self.entries.push(Entry {
                file: shown(&file),
                pos: edit.pos,
                name: edit.name.clone(),
                new_name: edit.new_name.clone(),
                new_tag: edit.new_tag.clone(),
            });
        }
        for (kind, name) in &kustomization.generated {
            self.sources
                .push(((*kind).into(), name.clone(), shown(&file)));
        }
        // A file among them is a resource (bases and components are directories).
        for entry in kustomization.local_bases() {
            let path = dir.join(entry);
            if path.is_dir() {
                self.collect(&path, &root);
            } else {
                self.objects(&path, &shown(&path));
            }
        }
    }

    /// The objects a resource file defines, by kind and name. Read line by line,
    /// not parsed: the top-level `kind:` and `metadata`'s `name:` of each document
    /// are all it needs, and a CRD file can be megabytes.
    fn objects(&mut self, path: &Path, shown: &str) {
        let Some(text) = crate::fs_source::read_bounded(path)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
        else {
            return;
        };
        let (mut kind, mut name, mut in_metadata) = (None, None, false);
        let value = |line: &str, key: &str| {
            line.strip_prefix(key)
                .map(|v| v.trim().trim_matches(['"', '\'']).to_string())
                .filter(|v| !v.is_empty())
        };
        for line in text.lines().chain(["---"]) {
            if line.starts_with("---") {
                if let (Some(kind), Some(name)) = (kind.take(), name.take()) {
                    self.sources.push((kind, name, shown.into()));
                }
                in_metadata = false;
                continue;
            }
            if !line.starts_with([' ', '#']) && !line.is_empty() {
                in_metadata = line.starts_with("metadata:");
                kind = kind.or_else(|| value(line, "kind:"));
                // `metadata: {name: x, namespace: y}`.
                let flow = line
                    .strip_prefix("metadata:")
                    .map(str::trim)
                    .and_then(|m| m.strip_prefix('{'));
                if let Some(fields) = flow.filter(|_| name.is_none()) {
                    name = fields
                        .split([',', '}'])
                        .find_map(|f| value(f.trim(), "name:"));
                }
            } else if in_metadata && name.is_none() {
                name = value(line, "  name:").filter(|_| !line.starts_with("   "));
            }
        }
    }
}
