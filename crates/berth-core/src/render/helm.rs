//! The values layer berth gives a Helm chart last: each component's resolved
//! image at the values paths its `helmValues:` names, so the chart's own
//! copies of the image (a sidecar's args, an env value, a ConfigMap) follow
//! berth's answer, not only the `image:` fields berth rewrites afterwards.

use berth_yaml::{Node, Pos};

use crate::project::HelmPart;
use crate::resolve::{Resolution, ResolvedImage};

/// Why the image values cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HelmValuesError {
    /// Two components (or two parts) give one values path different values.
    #[error("`helmValues` of components `{first}` and `{second}` both set `{path}` (to `{first_value}` and `{second_value}`); give each component its own values paths")]
    Clash {
        /// The values path.
        path: String,
        /// The component that set it first.
        first: String,
        /// Its value.
        first_value: String,
        /// The other component.
        second: String,
        /// Its value.
        second_value: String,
    },
    /// A path runs through a value another path set.
    #[error("`helmValues` of component `{component}`: `{path}` runs through `{through}`, which another path sets to a value; use paths that do not nest")]
    Nested {
        /// The component.
        component: String,
        /// Its path.
        path: String,
        /// The prefix that holds a value.
        through: String,
    },
    /// The reference has a digest and no tag, and the chart takes only a tag.
    #[error("component `{component}` resolves to `{reference}`, a digest without a tag, and its `helmValues` has `tag:` but no `digest:`; add `digest:` (the values path the chart reads a digest from), or give the component a tag")]
    DigestOnly {
        /// The component.
        component: String,
        /// Its resolved reference.
        reference: String,
    },
}

/// The values layer for `resolution`, as a YAML mapping; `None` when no
/// component has `helmValues:`.
pub fn image_values(resolution: &Resolution<'_>) -> Result<Option<Node>, HelmValuesError> {
    let all: Vec<&ResolvedImage<'_>> = resolution.images.iter().collect();
    image_values_of(&all)
}

/// [`image_values`] of some of the resolution's images.
pub(super) fn image_values_of(
    images: &[&ResolvedImage<'_>],
) -> Result<Option<Node>, HelmValuesError> {
    let mut set: Vec<(String, String, String)> = Vec::new(); // (path, value, component)
    for image in images {
        let component = image.component;
        let parts = &component.helm_values;
        if parts.is_empty() {
            continue;
        }
        let has = |p: HelmPart| parts.iter().any(|(q, _)| *q == p);
        let reference = &image.reference;
        for (part, path) in parts {
            let value = match part {
                HelmPart::Image => reference.to_string(),
                HelmPart::Registry if has(HelmPart::Name) => {
                    // Everything before the last component: the domain, then
                    // the path's leading components (none for `ghcr.io/web`).
                    let repository = reference.repository();
                    match repository.path().rsplit_once('/') {
                        Some((owner, _)) => format!("{}/{owner}", repository.domain()),
                        None => repository.domain().to_string(),
                    }
                }
                HelmPart::Registry => reference.domain().to_string(),
                HelmPart::Name => reference.repository().last_component().to_string(),
                HelmPart::Repository if has(HelmPart::Registry) => reference.path().to_string(),
                HelmPart::Repository => reference.repository().to_string(),
                HelmPart::Digest => match reference.digest() {
                    Some(digest) => digest.to_string(),
                    None => continue,
                },
                HelmPart::Tag => match (reference.tag(), reference.digest()) {
                    (Some(tag), Some(digest)) if !has(HelmPart::Digest) => {
                        format!("{}@{digest}", tag.as_str())
                    }
                    (Some(tag), _) => tag.as_str().to_string(),
                    (None, Some(_)) if !has(HelmPart::Digest) => {
                        return Err(HelmValuesError::DigestOnly {
                            component: component.name.clone(),
                            reference: reference.to_string(),
                        })
                    }
                    (None, _) => continue,
                },
            };
            set.push((path.clone(), value, component.name.clone()));
        }
    }
    if set.is_empty() {
        return Ok(None);
    }
    let mut root = Node::map(Pos::default());
    let mut written: Vec<&(String, String, String)> = Vec::new();
    for entry in &set {
        let (path, value, component) = entry;
        if let Some(other) = written.iter().find(|(p, _, _)| p == path) {
            if other.1 != *value {
                return Err(HelmValuesError::Clash {
                    path: path.clone(),
                    first: other.2.clone(),
                    first_value: other.1.clone(),
                    second: component.clone(),
                    second_value: value.clone(),
                });
            }
            continue;
        }
        if let Some(other) = written.iter().find(|(p, _, _)| {
            path.starts_with(&format!("{p}.")) || p.starts_with(&format!("{path}."))
        }) {
            return Err(HelmValuesError::Nested {
                component: component.clone(),
                path: path.clone(),
                through: other.0.clone(),
            });
        }
        insert(&mut root, path, value);
        written.push(entry);
    }
    Ok(Some(root))
}

/// Sets the dotted `path` of the mapping `root` to the string `value`.
pub(super) fn insert(root: &mut Node, path: &str, value: &str) {
    let mut node = root;
    let keys: Vec<&str> = path.split('.').collect();
    for (i, key) in keys.iter().enumerate() {
        let last = i + 1 == keys.len();
        let Some(entries) = node.as_map_mut() else {
            return; // proven above: no path runs through a value
        };
        let index = match entries.iter().position(|(k, _)| k.as_str() == Some(key)) {
            Some(index) => index,
            None => {
                let child = if last {
                    Node::string(value, Pos::default())
                } else {
                    Node::map(Pos::default())
                };
                entries.push((Node::string(*key, Pos::default()), child));
                entries.len() - 1
            }
        };
        node = &mut entries[index].1;
    }
}

#[cfg(test)]
#[path = "helm_tests.rs"]
mod tests;
