//! Rewrites references to generated configs, and records where they are used.

use std::collections::{BTreeSet, HashMap};

use berth_yaml::{Node, Pos};
use sha2::{Digest as _, Sha256};

use super::pods::{for_each_container, for_each_pod, for_each_volume, Pod};
use crate::configs::{ConfigKind, Generated};
use crate::project::{ImagePath, PathSegment};

/// Where a pod spec names a ConfigMap or a Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    /// `volumes[].configMap` (`name`).
    VolumeConfigMap,
    /// `volumes[].secret` (`secretName`).
    VolumeSecret,
    /// `volumes[].projected.sources[].configMap` (`name`).
    ProjectedConfigMap,
    /// `volumes[].projected.sources[].secret` (`name`).
    ProjectedSecret,
    /// `envFrom[].configMapRef` (`name`), in any container.
    EnvFromConfigMap,
    /// `envFrom[].secretRef` (`name`).
    EnvFromSecret,
    /// `env[].valueFrom.configMapKeyRef` (`name`).
    ConfigMapKeyRef,
    /// `env[].valueFrom.secretKeyRef` (`name`).
    SecretKeyRef,
    /// `imagePullSecrets[]` (`name`).
    ImagePullSecret,
}

impl Site {
    /// The field of the holder that has the name.
    pub fn name_field(self) -> &'static str {
        match self {
            Site::VolumeSecret => "secretName",
            _ => "name",
        }
    }

    /// What the name names.
    pub fn kind(self) -> ConfigKind {
        match self {
            Site::VolumeConfigMap
            | Site::ProjectedConfigMap
            | Site::EnvFromConfigMap
            | Site::ConfigMapKeyRef => ConfigKind::ConfigMap,
            _ => ConfigKind::Secret,
        }
    }
}

/// Calls `f` with every mapping of a pod spec that names a ConfigMap or Secret
/// (its volumes, projected sources, every container's `envFrom` and
/// `env[].valueFrom`, `imagePullSecrets`): the one list of places, for the
/// rewriter and for [`referenced`].
pub fn for_each_reference(spec: &mut Node, f: &mut dyn FnMut(&mut Node, Site)) {
    use Site::*;
    for_each_volume(spec, &mut |volume| {
        holders(
            volume,
            [("configMap", VolumeConfigMap), ("secret", VolumeSecret)],
            f,
        );
        let projected = volume
            .get_mut("projected")
            .and_then(|p| p.get_mut("sources"));
        for source in projected.and_then(Node::as_seq_mut).into_iter().flatten() {
            let sites = [
                ("configMap", ProjectedConfigMap),
                ("secret", ProjectedSecret),
            ];
            holders(source, sites, f);
        }
    });
    for_each_container(spec, &mut |container| {
        let env_from = container.get_mut("envFrom").and_then(Node::as_seq_mut);
        for item in env_from.into_iter().flatten() {
            holders(
                item,
                [
                    ("configMapRef", EnvFromConfigMap),
                    ("secretRef", EnvFromSecret),
                ],
                f,
            );
        }
        let env = container.get_mut("env").and_then(Node::as_seq_mut);
        for from in (env.into_iter().flatten()).filter_map(|item| item.get_mut("valueFrom")) {
            let sites = [
                ("configMapKeyRef", ConfigMapKeyRef),
                ("secretKeyRef", SecretKeyRef),
            ];
            holders(from, sites, f);
        }
    });
    if let Some(items) = spec.get_mut("imagePullSecrets").and_then(Node::as_seq_mut) {
        for item in items {
            f(item, ImagePullSecret);
        }
    }
}

/// Calls `f` with each field of `node` that `sites` names, as its site.
fn holders(node: &mut Node, sites: [(&str, Site); 2], f: &mut dyn FnMut(&mut Node, Site)) {
    for (field, site) in sites {
        if let Some(holder) = node.get_mut(field) {
            f(holder, site);
        }
    }
}

/// Every ConfigMap and Secret the pods of `object` (of `kind`) name.
pub fn referenced(object: &mut Node, kind: &str) -> BTreeSet<(ConfigKind, String)> {
    let mut out = BTreeSet::new();
    for_each_pod(object, kind, &mut |mut pod| {
        if let Some(spec) = pod.spec() {
            for_each_reference(spec, &mut |holder, site| {
                if let Some(name) = holder.get(site.name_field()).and_then(Node::as_str) {
                    out.insert((site.kind(), name.to_string()));
                }
            });
        }
    });
    out
}

/// The pod-template annotation that rolls pods using `hash: false` configs.
pub const CONFIG_HASH_ANNOTATION: &str = "berth.dev/config-hash";

/// Rewrites base names to generated names in pod specs.
pub struct ConfigRewriter<'a> {
    by_name: HashMap<(&'a str, ConfigKind), usize>,
    generated: &'a [Generated],
    /// Per generated config, the namespaces of the objects that use it.
    pub used_in: Vec<BTreeSet<Option<String>>>,
    /// Keys asked of a generated config that it does not have, since the last take.
    missing: Vec<MissingKey>,
    /// Per `configPaths` entry: an object of its kind was seen; a field was at its path.
    pub paths_seen: Vec<(bool, bool)>,
}

/// A key a reference asks of a generated config or bundle that is not in it:
/// the pod would fail with `CreateContainerConfigError`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingKey {
    /// Where the key is asked for.
    pub pos: Pos,
    /// The field that asks (`configMapKeyRef`, `volumes[].configMap.items[]`).
    pub field: &'static str,
    /// The generated config (index).
    pub config: usize,
    /// The key asked for.
    pub key: String,
}

impl<'a> ConfigRewriter<'a> {
    /// A rewriter for these generated configs.
    pub fn new(generated: &'a [Generated]) -> Self {
        let by_name = generated
            .iter()
            .enumerate()
            .map(|(i, g)| ((g.base_name.as_str(), g.kind), i))
            .collect();
        ConfigRewriter {
            by_name,
            generated,
            used_in: vec![BTreeSet::new(); generated.len()],
            missing: Vec::new(),
            paths_seen: Vec::new(),
        }
    }

    /// The missing keys seen since the last call.
    pub fn take_missing(&mut self) -> Vec<MissingKey> {
        std::mem::take(&mut self.missing)
    }

    /// Whether generated config `index` has `key` (in `data` or `binaryData`).
    fn has_key(&self, index: usize, key: &str) -> bool {
        let g = &self.generated[index];
        g.data.iter().chain(&g.binary_data).any(|(k, _)| k == key)
    }

    /// Rewrites one object whose namespace is `namespace` (none: the namespace it is applied to).
    pub fn rewrite(&mut self, object: &mut Node, kind: &str, namespace: Option<&str>) {
        if self.generated.is_empty() {
            return;
        }
        for_each_pod(object, kind, &mut |mut pod| {
            let mut used = BTreeSet::new();
            if let Some(spec) = pod.spec() {
                let missing = self.rewrite_spec(spec, &mut used);
                self.missing.extend(missing);
            }
            for &i in &used {
                self.used_in[i].insert(namespace.map(str::to_string));
            }
            self.annotate(pod, &used);
        });
    }

    /// Rewrites the `configPaths:` fields of `object` that apply to it: a field that
    /// names a config or CA bundle by its base name gets the generated name.
    pub fn rewrite_paths(
        &mut self,
        object: &mut Node,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        paths: &[ImagePath],
    ) {
        if self.paths_seen.len() != paths.len() {
            self.paths_seen = vec![(false, false); paths.len()];
        }
        let mut used = BTreeSet::new();
        for (n, path) in paths.iter().enumerate() {
            if path.applies(api_version, kind) {
                self.paths_seen[n].0 = true;
                let mut found = Vec::new();
                collect_at(object, &path.path, &mut Vec::new(), &mut found);
                if !found.is_empty() {
                    self.paths_seen[n].1 = true;
                }
                for trail in found {
                    self.rename_path(object, &trail, path, &mut used);
                }
            }
        }
        for &i in &used {
            self.used_in[i].insert(namespace.map(str::to_string));
        }
    }

    /// Renames the field at `trail` (a concrete path to one field of `entry`) and
    /// checks the key beside it, when the entry names one (`key:`).
    fn rename_path(
        &mut self,
        object: &mut Node,
        trail: &[Step],
        entry: &ImagePath,
        used: &mut BTreeSet<usize>,
    ) {
        let Some(node) = follow_mut(object, trail) else {
            return;
        };
        // A custom resource names a config without saying which kind: a
        // ConfigMap config first, then a Secret one.
        let index = node.as_str().and_then(|name| {
            self.by_name
                .get(&(name, ConfigKind::ConfigMap))
                .or_else(|| self.by_name.get(&(name, ConfigKind::Secret)))
                .copied()
        });
        let Some(index) = index else { return };
        node.set_string(self.generated[index].name.as_str());
        used.insert(index);
        let Some(key_path) = &entry.key else { return };
        // The key sits beside the name: the concrete steps both paths share (the
        // same list items), then the key path's own.
        let shared = common_prefix(&entry.path, key_path).min(trail.len().saturating_sub(1));
        let mut key_trail: Vec<Step> = trail[..shared].to_vec();
        let mut keys = Vec::new();
        if let Some(base) = follow(object, &key_trail) {
            collect_at(base, &key_path[shared..], &mut key_trail, &mut keys);
        }
        for at in keys {
            let found =
                follow(object, &at).and_then(|key| self.absent(key, index, "configPaths `key:`"));
            self.missing.extend(found);
        }
    }

    fn rewrite_spec(&self, spec: &mut Node, used: &mut BTreeSet<usize>) -> Vec<MissingKey> {
        let mut missing = Vec::new();
        for_each_reference(spec, &mut |holder, site| {
            let index = self.rename(Some(&mut *holder), site.name_field(), site.kind(), used);
            let items = match site {
                Site::VolumeConfigMap => Some("volumes[].configMap.items[]"),
                Site::VolumeSecret => Some("volumes[].secret.items[]"),
                Site::ProjectedConfigMap => Some("projected configMap items[]"),
                Site::ProjectedSecret => Some("projected secret items[]"),
                _ => None,
            };
            if let Some(field) = items {
                return self.check_items(Some(holder), index, field, &mut missing);
            }
            let key_ref = match site {
                Site::ConfigMapKeyRef => Some("configMapKeyRef"),
                Site::SecretKeyRef => Some("secretKeyRef"),
                _ => None,
            };
            if let (Some(field), Some(i)) = (key_ref, index) {
                self.key_of(holder, i, field, &mut missing);
            }
        });
        missing
    }

    /// `items[].key` of a volume source that names generated config `index`.
    fn check_items(
        &self,
        source: Option<&Node>,
        index: Option<usize>,
        field: &'static str,
        missing: &mut Vec<MissingKey>,
    ) {
        let (Some(source), Some(index)) = (source, index) else {
            return;
        };
        if source.get("optional").and_then(Node::as_str) == Some("true") {
            return;
        }
        for item in source
            .get("items")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            self.key_of(item, index, field, missing);
        }
    }

    /// `holder.key`, when generated config `index` lacks it.
    fn key_of(
        &self,
        holder: &Node,
        index: usize,
        field: &'static str,
        missing: &mut Vec<MissingKey>,
    ) {
        if holder.get("optional").and_then(Node::as_str) == Some("true") {
            return; // the kubelet starts the pod without it
        }
        missing.extend(
            holder
                .get("key")
                .and_then(|key| self.absent(key, index, field)),
        );
    }

    /// `key`, a key of generated config `index` that it lacks.
    fn absent(&self, key: &Node, index: usize, field: &'static str) -> Option<MissingKey> {
        let text = key.as_str()?;
        (!self.has_key(index, text)).then(|| MissingKey {
            pos: key.pos,
            field,
            config: index,
            key: text.to_string(),
        })
    }

    /// `holder[field]`, if it names a config of `kind`, becomes its generated name;
    /// returns the config's index.
    fn rename(
        &self,
        holder: Option<&mut Node>,
        field: &str,
        kind: ConfigKind,
        used: &mut BTreeSet<usize>,
    ) -> Option<usize> {
        let node = holder.and_then(|h| h.get_mut(field))?;
        let &index = node
            .as_str()
            .and_then(|name| self.by_name.get(&(name, kind)))?;
        node.set_string(self.generated[index].name.as_str());
        used.insert(index);
        Some(index)
    }

    /// Writes the annotation when the pod uses configs whose names do not change with content.
    fn annotate(&self, pod: Pod<'_>, used: &BTreeSet<usize>) {
        let unhashed: Vec<&Generated> = used
            .iter()
            .map(|&i| &self.generated[i])
            .filter(|g| !g.hashed)
            .collect();
        let Pod::Template(template) = pod else { return };
        if unhashed.is_empty() {
            return;
        }
        let mut hasher = Sha256::new();
        for g in &unhashed {
            hasher.update(g.kind.as_str().as_bytes());
            hasher.update(b"/");
            hasher.update(g.name.as_bytes());
            hasher.update(b"=");
            hasher.update(g.content_sha256.as_bytes());
            hasher.update(b"\n");
        }
        let value = berth_ref::lower_hex(&hasher.finalize());
        let map = || Node::map(Pos::default());
        if template.get("metadata").is_none() {
            if let Some(entries) = template.as_map_mut() {
                entries.insert(0, (Node::string("metadata", Pos::default()), map()));
            }
        }
        if let Some(annotations) = template
            .entry("metadata", map)
            .and_then(|m| m.entry("annotations", map))
        {
            if annotations.is_null() {
                *annotations = map();
            }
            if let Some(slot) =
                annotations.entry(CONFIG_HASH_ANNOTATION, || Node::string("", Pos::default()))
            {
                slot.set_string(value);
            }
        }
    }
}

/// Calls `f` with every field of `object` that a `configPaths:` entry applying to
/// it reaches: the fields that name a config in a kind berth does not know.
pub(super) fn for_each_path_field(
    object: &mut Node,
    api_version: &str,
    kind: &str,
    paths: &[ImagePath],
    f: &mut dyn FnMut(&mut Node),
) {
    for path in paths.iter().filter(|p| p.applies(api_version, kind)) {
        let mut found = Vec::new();
        collect_at(object, &path.path, &mut Vec::new(), &mut found);
        for trail in found {
            if let Some(node) = follow_mut(object, &trail) {
                f(node);
            }
        }
    }
}

/// One step of a concrete path: a mapping key, or a list index.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Every concrete path below `node` that `path` reaches (each `[]` expanded).
fn collect_at(node: &Node, path: &[PathSegment], trail: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match path {
        [] => out.push(trail.clone()),
        [PathSegment::Key(key), rest @ ..] => {
            if let Some(child) = node.get(key) {
                trail.push(Step::Key(key.clone()));
                collect_at(child, rest, trail, out);
                trail.pop();
            }
        }
        [PathSegment::Each, rest @ ..] => {
            for (i, item) in node.as_seq().unwrap_or_default().iter().enumerate() {
                trail.push(Step::Index(i));
                collect_at(item, rest, trail, out);
                trail.pop();
            }
        }
    }
}

fn follow<'n>(node: &'n Node, trail: &[Step]) -> Option<&'n Node> {
    trail.iter().try_fold(node, |n, step| match step {
        Step::Key(k) => n.get(k),
        Step::Index(i) => n.as_seq()?.get(*i),
    })
}

fn follow_mut<'n>(node: &'n mut Node, trail: &[Step]) -> Option<&'n mut Node> {
    trail.iter().try_fold(node, |n, step| match step {
        Step::Key(k) => n.get_mut(k),
        Step::Index(i) => n.as_seq_mut()?.get_mut(*i),
    })
}

/// How many leading segments two paths share.
fn common_prefix(a: &[PathSegment], b: &[PathSegment]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
