//! ConfigMaps that kustomize named by their content keep that promise after
//! berth changes their content.
//!
//! A `configMapGenerator` names its ConfigMap `NAME-<suffix>`, the suffix a
//! hash of the data, so that new content is a new object and the pods that
//! mount it roll. When an `imagePaths` entry rewrites an image in such a
//! ConfigMap's text (Kubeflow's profile controller reads its frontend image from
//! `sync.py`), the old suffix would name other content: under an override the
//! ConfigMap would change in place and its pods would keep the old text. So a
//! ConfigMap whose suffix berth can prove is kustomize's hash of what it read is
//! renamed with the hash of what berth writes, as kustomize would have named it,
//! and every reference to the old name in the same namespace follows: pod specs'
//! volumes, projected sources, `envFrom` and `configMapKeyRef`, and the
//! `configPaths:` fields. A name berth cannot prove (another tool's suffix, a
//! ConfigMap edited after kustomize hashed it) is left as it is.
//!
//! Objects are handed on one by one, so a reference written before its
//! ConfigMap is read could not follow a rename. kustomize and Helm write
//! ConfigMaps before workloads; for other orders, once an object names a
//! ConfigMap that could still be renamed and has not been read, it and every
//! object after it are held back until the end, in their order.

use std::collections::{HashMap, HashSet};

use berth_yaml::Node;

use super::metadata_text;
use super::refs::{for_each_path_field, for_each_reference};
use crate::configs::hash::{content_sha256, suffix, HashInput};
use crate::configs::ConfigKind;
use crate::project::ImagePath;

/// A ConfigMap's namespace (none: the namespace it is applied to) and name.
type Key = (Option<String>, String);

/// The renames of one render, and the objects held back for them.
pub(super) struct KustomizeNames<'s> {
    /// Whether any ConfigMap's content can change at all: an `imagePaths` entry applies to ConfigMaps.
    possible: bool,
    config_paths: &'s [ImagePath],
    renamed: HashMap<Key, String>,
    /// ConfigMaps read so far.
    read: HashSet<Key>,
    /// Objects held back, in order, with their apiVersion and kind.
    held: Vec<(Node, String, String)>,
}

/// A ConfigMap as read, whose name kustomize derived from its content.
pub(super) struct Hashed {
    base_len: usize,
    content_sha256: String,
}

impl<'s> KustomizeNames<'s> {
    /// Renames for a render with these `imagePaths` and `configPaths` entries.
    pub(super) fn new(image_paths: &[ImagePath], config_paths: &'s [ImagePath]) -> Self {
        KustomizeNames {
            possible: image_paths.iter().any(|p| p.kind == "ConfigMap"),
            config_paths,
            renamed: HashMap::new(),
            read: HashSet::new(),
            held: Vec::new(),
        }
    }

    /// Before berth changes `object`: its content hash, when it is a ConfigMap
    /// named `BASE-<suffix>` by kustomize from this content.
    pub(super) fn before(&self, object: &Node, kind: &str) -> Option<Hashed> {
        if !self.possible || kind != "ConfigMap" {
            return None;
        }
        let name = metadata_text(object, "name")?;
        let (base, tail) = name.rsplit_once('-')?;
        if !looks_hashed(tail) {
            return None;
        }
        let content_sha256 = configmap_sha256(object)?;
        (suffix(&content_sha256) == tail).then_some(Hashed {
            base_len: base.len(),
            content_sha256,
        })
    }

    /// After berth changed `object`: renamed with its new content's hash when
    /// that differs, and recorded as read.
    pub(super) fn after(&mut self, object: &mut Node, kind: &str, hashed: Option<Hashed>) {
        if !self.possible || kind != "ConfigMap" {
            return;
        }
        let namespace = metadata_text(object, "namespace").map(str::to_string);
        let Some(name) = metadata_text(object, "name").map(str::to_string) else {
            return;
        };
        self.read.insert((namespace.clone(), name.clone()));
        let Some(hashed) = hashed else { return };
        let Some(now) = configmap_sha256(object) else {
            return;
        };
        if now == hashed.content_sha256 {
            return;
        }
        let new_name = format!("{}-{}", &name[..hashed.base_len], suffix(&now));
        if let Some(field) = object.get_mut("metadata").and_then(|m| m.get_mut("name")) {
            field.set_string(new_name.as_str());
        }
        self.renamed.insert((namespace, name), new_name);
    }

    /// Hands `object` to `each` with every reference renamed so far, or holds it
    /// back while a ConfigMap it names may still be renamed.
    pub(super) fn hand_on(
        &mut self,
        mut object: Node,
        api_version: String,
        kind: String,
        each: &mut dyn FnMut(Node, String, String),
    ) {
        let hold = !self.held.is_empty()
            || (self.possible && self.names_unread(&mut object, &api_version, &kind));
        if hold {
            self.held.push((object, api_version, kind));
            return;
        }
        self.rename_references(&mut object, &api_version, &kind);
        each(object, api_version, kind);
    }

    /// Hands on what was held back, renamed, once every object was read.
    pub(super) fn finish(&mut self, each: &mut dyn FnMut(Node, String, String)) {
        for (mut object, api_version, kind) in std::mem::take(&mut self.held) {
            self.rename_references(&mut object, &api_version, &kind);
            each(object, api_version, kind);
        }
    }

    /// Whether `object` names a ConfigMap with a kustomize-shaped name not read yet.
    fn names_unread(&self, object: &mut Node, api_version: &str, kind: &str) -> bool {
        let namespace = metadata_text(object, "namespace").map(str::to_string);
        let mut unread = false;
        let mut check = |name: &str| {
            let shaped = name.rsplit_once('-').is_some_and(|(_, t)| looks_hashed(t));
            unread |= shaped && !self.read.contains(&(namespace.clone(), name.to_string()));
        };
        each_configmap_name(object, kind, &mut |node| {
            if let Some(name) = node.as_str() {
                check(name);
            }
        });
        for_each_path_field(object, api_version, kind, self.config_paths, &mut |node| {
            if let Some(name) = node.as_str() {
                check(name);
            }
        });
        unread
    }

    fn rename_references(&self, object: &mut Node, api_version: &str, kind: &str) {
        if self.renamed.is_empty() {
            return;
        }
        let namespace = metadata_text(object, "namespace").map(str::to_string);
        let renamed = &self.renamed;
        let mut rename = |node: &mut Node| {
            let new = node
                .as_str()
                .and_then(|name| renamed.get(&(namespace.clone(), name.to_string())));
            if let Some(new) = new {
                node.set_string(new.as_str());
            }
        };
        each_configmap_name(object, kind, &mut rename);
        for_each_path_field(object, api_version, kind, self.config_paths, &mut rename);
    }
}

/// Calls `f` with every field of `object`'s pods that names a ConfigMap.
fn each_configmap_name(object: &mut Node, kind: &str, f: &mut dyn FnMut(&mut Node)) {
    super::pods::for_each_pod(object, kind, &mut |mut pod| {
        let Some(spec) = pod.spec() else { return };
        for_each_reference(spec, &mut |holder, site| {
            if site.kind() == ConfigKind::ConfigMap {
                if let Some(name) = holder.get_mut(site.name_field()) {
                    f(name);
                }
            }
        });
    });
}

/// Whether `tail` could be kustomize's suffix: 10 characters of the hex digits
/// it keeps and the letters it puts for `0 1 3 a e`.
fn looks_hashed(tail: &str) -> bool {
    tail.len() == 10 && tail.bytes().all(|b| b"2456789bcdfghkmt".contains(&b))
}

/// The hash kustomize names a ConfigMap by, of `data` and `binaryData` as read;
/// `None` when a value is not text.
fn configmap_sha256(object: &Node) -> Option<String> {
    let data = pairs(object.get("data"), false)?;
    // kustomize breaks long base64 into lines; the hash puts its own breaks back.
    let binary_data = pairs(object.get("binaryData"), true)?;
    Some(content_sha256(&HashInput {
        kind: "ConfigMap",
        secret_type: None,
        data: &data,
        binary_data: &binary_data,
    }))
}

/// A mapping's entries sorted by key; `None` when a key or value is not text.
fn pairs(node: Option<&Node>, base64: bool) -> Option<Vec<(String, String)>> {
    let Some(node) = node.filter(|n| !n.is_null()) else {
        return Some(Vec::new());
    };
    let mut out = Vec::new();
    for (key, value) in node.as_map()? {
        let value = value.as_str()?;
        let value = match base64 {
            true => value.split_whitespace().collect(),
            false => value.to_string(),
        };
        out.push((key.as_str()?.to_string(), value));
    }
    out.sort();
    Some(out)
}
