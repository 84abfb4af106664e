//! Which kustomization set a tag that a warning names in an overlay's output.
//! A drift found in `kubectl kustomize`'s output points at a line of that
//! output; the tag came from an `images:` entry's `newTag` (or `digest`) in the
//! overlay or one of the kustomizations it builds on — the line the user edits.
//! The outermost entry for the image wins, as in kustomize.

use std::path::{Path, PathBuf};

use berth_core::render::Findings;
use berth_core::{Manifest, ManifestSource, Project};
use berth_ref::Reference;
use berth_yaml::{Limits, Node};

/// Adds to each drift in an overlay's output the `images:` entry that set its tag.
pub fn attribute(project: &Project, manifests: &[Manifest], findings: &mut Findings) {
    for manifest in manifests {
        let ManifestSource::Kustomize(dir) = &manifest.source else {
            continue;
        };
        let dir = project.dir.join(dir);
        let prefix = format!("{}:", crate::inputs::kustomize_name(&dir));
        let mut entries = Vec::new();
        collect(&dir, &project.dir, &mut entries, &mut Vec::new());
        for drift in &mut findings.drifted {
            if !drift.at.starts_with(&prefix) {
                continue;
            }
            let Ok(found) = Reference::parse(&drift.found) else {
                continue;
            };
            let tag = found.tag().map(|t| t.to_string());
            let last = found.repository().last_component().to_string();
            let origin = entries.iter().find(|e| {
                let names = [Some(&e.name), e.new_name.as_ref()];
                let named = names.into_iter().flatten().any(|n| {
                    n.rsplit('/')
                        .next()
                        .is_some_and(|l| l.split([':', '@']).next() == Some(&last))
                });
                named && e.new_tag.is_some() && e.new_tag == tag
            });
            if let Some(entry) = origin {
                let place = format!(
                    "{}:{} `newTag: {}`",
                    entry.file,
                    entry.pos,
                    entry.new_tag.as_deref().unwrap_or_default()
                );
                drift.at = match drift.at.strip_suffix(')') {
                    Some(head) => format!("{head}; set by {place})"),
                    None => format!("{} (set by {place})", drift.at),
                };
            }
        }
    }
}

/// One `images:` entry of a kustomization.
struct Entry {
    /// The kustomization file, relative to the project.
    file: String,
    pos: berth_yaml::Pos,
    name: String,
    new_name: Option<String>,
    new_tag: Option<String>,
}

/// The `images:` entries of the kustomization in `dir`, then of those it builds
/// on (its local `resources:`, `bases:`, `components:`), outermost first.
fn collect(dir: &Path, root: &Path, out: &mut Vec<Entry>, seen: &mut Vec<PathBuf>) {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    if seen.len() > 64 || seen.contains(&dir) {
        return;
    }
    seen.push(dir.clone());
    let Some((file, text)) = ["kustomization.yaml", "kustomization.yml", "Kustomization"]
        .iter()
        .find_map(|name| {
            let path = dir.join(name);
            let bytes = crate::fs_source::read_bounded(&path).ok()?;
            Some((path, String::from_utf8(bytes).ok()?))
        })
    else {
        return;
    };
    let Some(doc) = berth_yaml::load_all(&text, Limits::default())
        .ok()
        .and_then(|docs| docs.into_iter().next())
    else {
        return;
    };
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let shown = file
        .strip_prefix(&root)
        .unwrap_or(&file)
        .display()
        .to_string();
    for item in doc.get("images").and_then(Node::as_seq).unwrap_or_default() {
        let text = |key: &str| item.get(key).and_then(Node::as_str).map(str::to_string);
        let Some(name) = text("name") else { continue };
        let pos = item.get("newTag").map_or(item.pos, |n| n.pos);
        out.push(Entry {
            file: shown.clone(),
            pos,
            name,
            new_name: text("newName"),
            new_tag: text("newTag"),
        });
    }
    for key in ["resources", "bases", "components"] {
        for item in doc.get(key).and_then(Node::as_seq).unwrap_or_default() {
            let Some(entry) = item.as_str() else { continue };
            let path = dir.join(entry);
            if !entry.contains("://") && path.is_dir() {
                collect(&path, &root, out, seen);
            }
        }
    }
}
