//! Mounts CA bundles into the containers that should trust them.

use std::collections::HashSet;

use berth_ref::{Reference, Repository};
use berth_yaml::{Node, Pos, Value};

use super::pods::for_each_pod;
use crate::project::{Inject, TrustSpec};
use crate::resolve::Resolution;

struct Rule<'a> {
    bundle: &'a TrustSpec,
    inject: &'a Inject,
    /// Repositories of the chosen components, before and after resolution.
    repositories: HashSet<Repository>,
}

/// Adds the bundle volume, a read-only mount of its key at `mountPath`, and
/// the environment variables to chosen containers (regular and init; the API
/// refuses `subPath` mounts in ephemeral containers).
pub struct CaInjector<'a> {
    rules: Vec<Rule<'a>>,
    /// The names of the containers seen, when there are rules: for a rule that
    /// chose none, the names it could have said (A36, #46).
    pub containers_seen: std::collections::BTreeSet<String>,
}

impl<'a> CaInjector<'a> {
    /// Injection rules of `bundles`.
    pub fn new(bundles: &[&'a TrustSpec], resolution: &Resolution<'_>) -> Self {
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
        CaInjector {
            rules,
            containers_seen: Default::default(),
        }
    }

    /// Injects into every pod of `object`; a variable a container already sets
    /// to something else is kept, and said in `out` as `(where, what)`.
    pub fn inject(
        &mut self,
        object: &mut Node,
        kind: &str,
        at: &dyn Fn(Pos) -> crate::place::Place,
        out: &mut Vec<(crate::place::Place, String)>,
    ) {
        if self.rules.is_empty() {
            return;
        }
        let seen = &mut self.containers_seen;
        for_each_pod(object, kind, &mut |mut pod| {
            let Some(spec) = pod.spec() else { return };
            for list in ["containers", "initContainers"] {
                let names = spec.get(list).and_then(Node::as_seq).into_iter().flatten();
                seen.extend(
                    names.filter_map(|c| c.get("name").and_then(Node::as_str).map(str::to_string)),
                );
            }
            for rule in &self.rules {
                let mut injected = false;
                for list in ["containers", "initContainers"] {
                    let Some(containers) = spec.get_mut(list).and_then(Node::as_seq_mut) else {
                        continue;
                    };
                    for container in containers.iter_mut().filter(|c| rule.chooses(c)) {
                        for (pos, variable, found) in rule.mount(container) {
                            let problem = if variable == JAVA_OPTIONS {
                                format!("`{variable}` is `{found}` in this container, which names another truststore, so berth leaves it and Java does not trust CA bundle `{}`: remove its `-Djavax.net.ssl.trustStore…` options (berth appends its own), or leave `java` out of `inject.runtimes`", rule.bundle.name)
                            } else {
                                let ours = match &rule.inject.cert_dir {
                                    Some(dir) if variable == crate::names::CERT_DIR_VARIABLE => dir,
                                    _ => &rule.inject.mount_path,
                                };
                                format!("`{variable}` is already `{found}` in this container, so berth leaves it and CA bundle `{}` does not reach the runtime that reads it: remove the variable from the manifest (berth sets it to `{ours}`), or leave the runtime out of `inject.runtimes`", rule.bundle.name)
                            };
                            out.push((at(pos), problem));
                        }
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

    /// Mounts the bundle and sets its variables; returns the variables the
    /// container already set otherwise (kept): `(where, name, its value)`.
    fn mount(&self, container: &mut Node) -> Vec<(Pos, String, String)> {
        let mount = map(vec![
            ("name", string(&self.bundle.name)),
            ("mountPath", string(&self.inject.mount_path)),
            ("subPath", string(&self.bundle.key)),
            ("readOnly", plain("true")),
        ]);
        upsert_by_name(container, "volumeMounts", &self.bundle.name, mount);
        let mut kept = Vec::new();
        for var in &self.inject.env {
            kept.extend(set_variable(container, var, &self.inject.mount_path));
        }
        if let Some(dir) = &self.inject.cert_dir {
            // The whole ConfigMap as a directory: OpenSSL reads only the
            // `HHHHHHHH.N` files, Go every PEM file in it.
            let mount = map(vec![
                ("name", string(&self.bundle.name)),
                ("mountPath", string(dir)),
                ("readOnly", plain("true")),
            ]);
            upsert_by(container, "volumeMounts", "mountPath", dir, mount);
            let variable = crate::names::CERT_DIR_VARIABLE;
            kept.extend(set_variable(container, variable, dir));
        }
        if let Some(truststore) = &self.inject.truststore {
            kept.extend(self.java(container, truststore));
        }
        kept
    }

    /// The `java` runtime: the PKCS#12 truststore mounted beside the PEM file,
    /// and `JAVA_TOOL_OPTIONS` pointed at it — appended to the container's own
    /// options, never replacing them; options that name another truststore are
    /// kept and said.
    fn java(&self, container: &mut Node, truststore: &str) -> Vec<(Pos, String, String)> {
        let mount = map(vec![
            ("name", string(&self.bundle.name)),
            ("mountPath", string(truststore)),
            ("subPath", string(crate::configs::ca::PKCS12_KEY)),
            ("readOnly", plain("true")),
        ]);
        upsert_by(container, "volumeMounts", "mountPath", truststore, mount);
        // A password from a Secret reaches the JVM through a variable the
        // options reference (`$(NAME)`, which Kubernetes expands from the
        // variables before it): never written into the manifest.
        let password = match &self.inject.password {
            Some(_) => format!("$({})", self.password_variable()),
            None => crate::configs::truststore::DEFAULT_PASSWORD.to_string(),
        };
        let ours = format!(
            "-Djavax.net.ssl.trustStore={truststore} -Djavax.net.ssl.trustStoreType=PKCS12 -Djavax.net.ssl.trustStorePassword={password}"
        );
        let existing = env_entry(container, JAVA_OPTIONS);
        let value = match existing {
            None => ours,
            Some(item) => match item.get("value").and_then(Node::as_str) {
                Some(v) if v.contains(&ours) => return Vec::new(),
                Some(v) if v.contains("-Djavax.net.ssl.trustStore=") => {
                    return vec![(item.pos, JAVA_OPTIONS.into(), v.to_string())]
                }
                Some(v) if !v.trim().is_empty() => format!("{} {ours}", v.trim_end()),
                Some(_) => ours,
                None => {
                    return vec![(item.pos, JAVA_OPTIONS.into(), "set from `valueFrom`".into())]
                }
            },
        };
        let entry = map(vec![
            ("name", string(JAVA_OPTIONS)),
            ("value", string(&value)),
        ]);
        upsert_by_name(container, "env", JAVA_OPTIONS, entry);
        if let Some((config, key)) = &self.inject.password {
            let reference = map(vec![("name", string(config)), ("key", string(key))]);
            let from = map(vec![("secretKeyRef", reference)]);
            let variable = self.password_variable();
            let entry = map(vec![("name", string(&variable)), ("valueFrom", from)]);
            insert_before(container, &variable, entry, JAVA_OPTIONS);
        }
        Vec::new()
    }

    /// The variable that carries the stores' password: one per bundle.
    fn password_variable(&self) -> String {
        let name = crate::project::variable_part(&self.bundle.name);
        format!("BERTH_TRUSTSTORE_PASSWORD_{name}")
    }
}

/// Sets `variable` to `value` in the container, unless it is already set to
/// something else: then it is kept and returned as `(where, name, its value)`.
fn set_variable(
    container: &mut Node,
    variable: &str,
    value: &str,
) -> Option<(Pos, String, String)> {
    if let Some(item) = env_entry(container, variable) {
        let found = item.get("value").and_then(Node::as_str);
        if found != Some(value) {
            let found = found.map_or_else(|| "set from `valueFrom`".to_string(), str::to_string);
            return Some((item.pos, variable.to_string(), found));
        }
    }
    let entry = map(vec![("name", string(variable)), ("value", string(value))]);
    upsert_by_name(container, "env", variable, entry);
    None
}

/// Puts `entry` (variable `name`) into the container's `env` right before
/// `before`: a `$(name)` reference expands only from variables defined earlier.
fn insert_before(container: &mut Node, name: &str, entry: Node, before: &str) {
    let Some(items) = container.get_mut("env").and_then(Node::as_seq_mut) else {
        return;
    };
    let named = |i: &Node, n: &str| i.get("name").and_then(Node::as_str) == Some(n);
    items.retain(|i| !named(i, name));
    let at = items
        .iter()
        .position(|i| named(i, before))
        .unwrap_or(items.len());
    items.insert(at, entry);
}

/// The container's `env` entry named `name`.
fn env_entry<'n>(container: &'n Node, name: &str) -> Option<&'n Node> {
    container
        .get("env")
        .and_then(Node::as_seq)?
        .iter()
        .find(|i| i.get("name").and_then(Node::as_str) == Some(name))
}

/// The variable every JVM reads options from at start.
const JAVA_OPTIONS: &str = "JAVA_TOOL_OPTIONS";

/// Replaces the item of `holder[list]` whose `name` is `name`, or appends `item`.
fn upsert_by_name(holder: &mut Node, list: &str, name: &str, item: Node) {
    upsert_by(holder, list, "name", name, item);
}

/// Replaces the item of `holder[list]` whose `key` is `value`, or appends `item`.
fn upsert_by(holder: &mut Node, list: &str, key: &str, value: &str, item: Node) {
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
        .find(|i| i.get(key).and_then(Node::as_str) == Some(value))
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
