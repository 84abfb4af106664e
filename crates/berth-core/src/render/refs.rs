//! Rewrites references to generated configs, and records where they are used.

use std::collections::{BTreeSet, HashMap};

use berth_yaml::{Node, Pos};
use sha2::{Digest as _, Sha256};

use super::pods::{for_each_container, for_each_pod, for_each_volume, Pod};
use crate::configs::{ConfigKind, Generated};
use crate::project::{ImagePath, PathSegment};

/// The pod-template annotation that rolls pods using `hash: false` configs.
pub const CONFIG_HASH_ANNOTATION: &str = "berth.dev/config-hash";

/// Rewrites base names to generated names in pod specs.
pub struct ConfigRewriter<'a> {
    by_name: HashMap<(&'a str, ConfigKind), usize>,
    generated: &'a [Generated],
    /// Per generated config, the namespaces of the objects that use it.
    pub used_in: Vec<BTreeSet<Option<String>>>,
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
        }
    }

    /// Rewrites one object whose namespace is `namespace` (none: the namespace it is applied to).
    pub fn rewrite(&mut self, object: &mut Node, kind: &str, namespace: Option<&str>) {
        if self.generated.is_empty() {
            return;
        }
        for_each_pod(object, kind, &mut |mut pod| {
            let mut used = BTreeSet::new();
            if let Some(spec) = pod.spec() {
                self.rewrite_spec(spec, &mut used);
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
        if self.generated.is_empty() {
            return;
        }
        let mut used = BTreeSet::new();
        for path in paths {
            let applies =
                path.kind == kind && path.api_version.as_deref().is_none_or(|v| v == api_version);
            if applies {
                self.rename_at(object, &path.path, &mut used);
            }
        }
        for &i in &used {
            self.used_in[i].insert(namespace.map(str::to_string));
        }
    }

    fn rename_at(&self, node: &mut Node, path: &[PathSegment], used: &mut BTreeSet<usize>) {
        match path {
            [] => {
                // A custom resource names a config without saying which kind: a
                // ConfigMap config first, then a Secret one.
                let index = node.as_str().and_then(|name| {
                    self.by_name
                        .get(&(name, ConfigKind::ConfigMap))
                        .or_else(|| self.by_name.get(&(name, ConfigKind::Secret)))
                        .copied()
                });
                if let Some(index) = index {
                    node.set_string(self.generated[index].name.as_str());
                    used.insert(index);
                }
            }
            [PathSegment::Key(key), rest @ ..] => {
                if let Some(child) = node.get_mut(key) {
                    self.rename_at(child, rest, used);
                }
            }
            [PathSegment::Each, rest @ ..] => {
                if let Some(items) = node.as_seq_mut() {
                    for item in items {
                        self.rename_at(item, rest, used);
                    }
                }
            }
        }
    }

    fn rewrite_spec(&self, spec: &mut Node, used: &mut BTreeSet<usize>) {
        use ConfigKind::{ConfigMap, Secret};
        for_each_volume(spec, &mut |volume| {
            self.rename(volume.get_mut("configMap"), "name", ConfigMap, used);
            self.rename(volume.get_mut("secret"), "secretName", Secret, used);
            if let Some(sources) = volume
                .get_mut("projected")
                .and_then(|p| p.get_mut("sources"))
                .and_then(Node::as_seq_mut)
            {
                for source in sources {
                    self.rename(source.get_mut("configMap"), "name", ConfigMap, used);
                    self.rename(source.get_mut("secret"), "name", Secret, used);
                }
            }
        });
        for_each_container(spec, &mut |container| {
            if let Some(items) = container.get_mut("envFrom").and_then(Node::as_seq_mut) {
                for item in items {
                    self.rename(item.get_mut("configMapRef"), "name", ConfigMap, used);
                    self.rename(item.get_mut("secretRef"), "name", Secret, used);
                }
            }
            if let Some(items) = container.get_mut("env").and_then(Node::as_seq_mut) {
                for item in items {
                    let from = item.get_mut("valueFrom");
                    if let Some(from) = from {
                        self.rename(from.get_mut("configMapKeyRef"), "name", ConfigMap, used);
                        self.rename(from.get_mut("secretKeyRef"), "name", Secret, used);
                    }
                }
            }
        });
        if let Some(items) = spec.get_mut("imagePullSecrets").and_then(Node::as_seq_mut) {
            for item in items {
                self.rename(Some(item), "name", Secret, used);
            }
        }
    }

    /// `holder[field]`, if it names a config of `kind`, becomes its generated name.
    fn rename(
        &self,
        holder: Option<&mut Node>,
        field: &str,
        kind: ConfigKind,
        used: &mut BTreeSet<usize>,
    ) {
        let Some(node) = holder.and_then(|h| h.get_mut(field)) else {
            return;
        };
        let Some(&index) = node
            .as_str()
            .and_then(|name| self.by_name.get(&(name, kind)))
        else {
            return;
        };
        node.set_string(self.generated[index].name.as_str());
        used.insert(index);
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
        let value: String = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
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
