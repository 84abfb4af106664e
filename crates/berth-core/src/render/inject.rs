//! Mounts CA bundles into the containers that should trust them.

use std::collections::HashSet;

use berth_ref::{Reference, Repository};
use berth_yaml::{Node, Pos, Value};

use super::pods::for_each_pod;
use crate::project::{BundleSpec, Inject};
use crate::resolve::Resolution;

struct Rule<'a> {
    bundle: &'a BundleSpec,
    inject: &'a Inject,
    /// Repositories of the chosen components, before and after resolution.
    repositories: HashSet<Repository>,
}

/// Adds the bundle volume, a read-only mount of its key at `mountPath`, and
/// the environment variables to chosen containers (regular and init; the API
/// refuses `subPath` mounts in ephemeral containers).
pub struct CaInjector<'a> {
    rules: Vec<Rule<'a>>,
}

impl<'a> CaInjector<'a> {
    /// Injection rules of `bundles`.
    pub fn new(bundles: &[&'a BundleSpec], resolution: &Resolution<'_>) -> Self {
        let rules = bundles
            .iter()
            .copied()
            .filter_map(|bundle| {
                let inject = bundle.inject.as_ref()?;
                let mut repositories = HashSet::new();
                for image in resolution
                    .images
                    .iter()
                    .filter(|i| inject.components.contains(&i.component.name))
                {
                    repositories.extend(image.component.repositories.iter().cloned());
                    repositories.insert(image.reference.repository().clone());
                }
                Some(Rule {
                    bundle,
                    inject,
                    repositories,
                })
            })
            .collect();
        CaInjector { rules }
    }

    /// Injects into every pod of `object`.
    pub fn inject(&self, object: &mut Node, kind: &str) {
        if self.rules.is_empty() {
            return;
        }
        for_each_pod(object, kind, &mut |mut pod| {
            let Some(spec) = pod.spec() else { return };
            for rule in &self.rules {
                let mut injected = false;
                for list in ["containers", "initContainers"] {
                    let Some(containers) = spec.get_mut(list).and_then(Node::as_seq_mut) else {
                        continue;
                    };
                    for container in containers.iter_mut().filter(|c| rule.chooses(c)) {
                        rule.mount(container);
                        injected = true;
                    }
                }
                if injected {
                    let volume = map(vec![
                        ("name", string(&rule.bundle.name)),
                        ("configMap", map(vec![("name", string(&rule.bundle.name))])),
                    ]);
                    upsert_by_name(spec, "volumes", &rule.bundle.name, volume);
                }
            }
        });
    }
}

impl Rule<'_> {
    fn chooses(&self, container: &Node) -> bool {
        let by_name = container
            .get("name")
            .and_then(Node::as_str)
            .is_some_and(|n| self.inject.containers.iter().any(|c| c == n));
        let by_image = container
            .get("image")
            .and_then(Node::as_str)
            .and_then(|i| Reference::parse(i).ok())
            .is_some_and(|r| self.repositories.contains(r.repository()));
        by_name || by_image
    }

    fn mount(&self, container: &mut Node) {
        let mount = map(vec![
            ("name", string(&self.bundle.name)),
            ("mountPath", string(&self.inject.mount_path)),
            ("subPath", string(&self.bundle.key)),
            ("readOnly", plain("true")),
        ]);
        upsert_by_name(container, "volumeMounts", &self.bundle.name, mount);
        for var in &self.inject.env {
            let entry = map(vec![
                ("name", string(var)),
                ("value", string(&self.inject.mount_path)),
            ]);
            upsert_by_name(container, "env", var, entry);
        }
    }
}

/// Replaces the item of `holder[list]` whose `name` is `name`, or appends `item`.
fn upsert_by_name(holder: &mut Node, list: &str, name: &str, item: Node) {
    let Some(slot) = holder.entry(list, || Node::seq(Pos::default())) else {
        return;
    };
    if slot.is_null() {
        *slot = Node::seq(Pos::default());
    }
    let Some(items) = slot.as_seq_mut() else {
        return;
    };
    match items
        .iter_mut()
        .find(|i| i.get("name").and_then(Node::as_str) == Some(name))
    {
        Some(existing) => *existing = item,
        None => items.push(item),
    }
}

fn string(text: &str) -> Node {
    Node::string(text, Pos::default())
}

/// A plain scalar whose YAML type is meant (`false`).
fn plain(text: &str) -> Node {
    Node::plain(text, Pos::default())
}

fn map(entries: Vec<(&str, Node)>) -> Node {
    Node {
        pos: Pos::default(),
        tag: None,
        value: Value::Map(entries.into_iter().map(|(k, v)| (string(k), v)).collect()),
    }
}
