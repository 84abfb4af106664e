//! `berth mirror`: where each project image lives on a mirror registry, and the
//! configuration that tells a cluster's nodes to pull from there — OpenShift's
//! ImageDigestMirrorSet/ImageTagMirrorSet, containerd's `hosts.toml`, and
//! containers-registries.conf for CRI-O and podman — all from one plan, so
//! they cannot disagree.
//!
//! A mirror keeps each repository's path below the prefix
//! (`ghcr.io/llm-d/epp` → `PREFIX/llm-d/epp`), the layout oc-mirror writes and
//! containerd's `override_path` expects: one `hosts.toml` per source registry
//! then serves every repository of it. Each consumer matches sources by the
//! longest prefix, so nested repositories (`quay.io/a/b` and `quay.io/a/b/c`)
//! are separate entries with separate mirrors.

use std::collections::BTreeMap;

use berth_ref::{Reference, RegistryPrefix};

use berth_core::Resolution;

mod configs;
pub use configs::{files, Options, SourcePolicy};

/// One project image on its way to the mirror.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The component.
    pub component: String,
    /// The image as the project resolves it (with its digest when pinned).
    pub source: Reference,
    /// Where the mirror keeps it: same tag and digest, the path kept below the prefix.
    pub mirror: Reference,
    /// Other images of the same repository to copy (a family's members that
    /// differ by a tag suffix): one mirror configuration serves them all.
    pub also: Vec<Reference>,
}

impl Entry {
    /// Every copy this entry makes: `(source, destination)`, the destination by
    /// tag when the source has one (the digest is the same bytes').
    pub fn copies(&self) -> Vec<(Reference, Reference)> {
        std::iter::once(&self.source)
            .chain(&self.also)
            .map(|source| {
                let mirror = source.with_repository(self.mirror.repository());
                let target = match mirror.tag() {
                    Some(_) => mirror.without_digest(),
                    None => mirror,
                };
                (source.clone(), target)
            })
            .collect()
    }
}

impl Entry {
    /// Pulled by digest: served through a digest mirror (IDMS,
    /// `pull-from-mirror = "digest-only"`). Else through a tag mirror.
    pub fn by_digest(&self) -> bool {
        self.source.digest().is_some()
    }
}

/// Why a mirror cannot be planned.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MirrorError {
    /// The prefix with a source's path is no valid repository.
    #[error("component `{component}`: `{prefix}/{path}` is not a valid repository: {reason}")]
    Invalid {
        /// The component.
        component: String,
        /// The mirror prefix.
        prefix: String,
        /// The source repository's path.
        path: String,
        /// Why.
        reason: String,
    },
    /// Two sources would share one mirror repository.
    #[error("components `{first}` (`{first_source}`) and `{second}` (`{second_source}`) would both be mirrored to `{mirror}`: the mirror keeps each repository's path, and theirs are the same on different registries; mirror one of them separately (`--project-only`, or a second `berth mirror` with another prefix)")]
    Collision {
        /// The first component.
        first: String,
        /// Its source repository.
        first_source: String,
        /// The second component.
        second: String,
        /// Its source repository.
        second_source: String,
        /// The shared mirror repository.
        mirror: String,
    },
}

/// The images to mirror, sorted by component: every resolved image (a
/// component sharing another's image once), or only the project's own
/// (`registry: false` components left out) when `project_only`.
pub fn plan(
    resolution: &Resolution<'_>,
    to: &RegistryPrefix,
    project_only: bool,
) -> Result<Vec<Entry>, MirrorError> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut by_mirror: BTreeMap<String, usize> = BTreeMap::new();
    for (image, source) in resolution.every_image() {
        let component = image.component;
        if project_only && !component.follows_registry {
            continue;
        }
        let source = source.clone();
        let path = source.path().to_string();
        let name = format!("{}/{path}", to.as_str());
        let moved = Reference::parse(&name).map_err(|e| MirrorError::Invalid {
            component: component.name.clone(),
            prefix: to.as_str().to_string(),
            path: path.clone(),
            reason: e.to_string(),
        })?;
        // The source's tag and digest on the mirror's repository.
        let mirror = source.with_repository(moved.repository());
        let key = mirror.repository().to_string();
        if let Some(&first) = by_mirror.get(&key) {
            let other: &Entry = &entries[first];
            if other.source.repository() == source.repository() {
                // One image, two components (`sameAs`): mirrored once; another tag
                // of the same repository (a family member): copied beside it.
                let known = other.source == source || other.also.contains(&source);
                if !known {
                    entries[first].also.push(source);
                }
                continue;
            }
            return Err(MirrorError::Collision {
                first: other.component.clone(),
                first_source: other.source.repository().to_string(),
                second: component.name.clone(),
                second_source: source.repository().to_string(),
                mirror: key,
            });
        }
        by_mirror.insert(key, entries.len());
        entries.push(Entry {
            component: component.name.clone(),
            source,
            mirror,
            also: Vec::new(),
        });
    }
    entries.sort_by(|a, b| a.component.cmp(&b.component));
    Ok(entries)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
