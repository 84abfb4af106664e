//! Generated inputs: the kustomization files and manifests a kustomization
//! reaches that `.gitignore` hides from the walk (an operator's
//! `make manifests manager-kustomization` writes `config/manager/kustomization.yaml`
//! and `config/crd/bases/`, and ignores them). kustomize reads them, so once
//! they are on disk init reads them too: without them, the image their
//! `images:` entry sets is never found.

use std::collections::BTreeSet;
use std::path::Path;

use berth_init::{normalize, Facts};

use super::{kustomization, read_text};

/// At most this many ignored files are read: generated inputs, not a tree.
const MAX_READ: usize = 512;

/// Reads into `facts` the files kustomizations reach that the walk did not
/// list (`walked`: every path it did), transitively; only files inside `root`.
pub(super) fn read_reached(
    root: &Path,
    walked: &BTreeSet<String>,
    facts: &mut Facts,
    skipped: &mut Vec<String>,
) {
    let mut queue: Vec<String> = (facts.kustomizations.iter())
        .flat_map(|k| entries(&k.dir, &k.resources))
        .collect();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut read = 0;
    while let Some(entry) = queue.pop() {
        // Canonicalized before it is normalized: `config/../../x` is outside.
        if crate::fs_source::contained(root, &root.join(&entry)).is_err() {
            continue;
        }
        let relative = normalize(&entry);
        if read >= MAX_READ || !seen.insert(relative.clone()) || walked.contains(&relative) {
            continue;
        }
        let path = root.join(&relative);
        if path.is_dir() {
            let Some(file) = (berth_core::kustomization::FILE_NAMES.iter())
                .map(|name| format!("{relative}/{name}"))
                .find(|file| root.join(file).is_file() && !walked.contains(file))
            else {
                continue;
            };
            read += 1;
            let Some(text) = read_text(&root.join(&file), &file, skipped) else {
                continue;
            };
            let found = kustomization(relative.clone(), &text);
            queue.extend(entries(&relative, &found.resources));
            facts.kustomizations.push(found);
        } else if path.is_file() && (relative.ends_with(".yaml") || relative.ends_with(".yml")) {
            read += 1;
            let Some(text) = read_text(&path, &relative, skipped) else {
                continue;
            };
            if text.contains("apiVersion:") && text.contains("kind:") {
                facts.manifests.push((relative, text));
            }
        }
    }
}

/// A kustomization's local `resources:` entries as paths from the root, not
/// yet normalized (so that one climbing out of it is refused when read; remote
/// bases left out).
fn entries(dir: &str, resources: &[String]) -> Vec<String> {
    (resources.iter())
        .filter(|r| !r.contains("://") && !r.starts_with("github.com/"))
        .map(|r| format!("{dir}/{r}"))
        .collect()
}
