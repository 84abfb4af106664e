//! The one walker over pod specs, for every transform that touches them.

use berth_yaml::{Node, Value};

/// Container lists of a pod spec, in the order berth visits them.
pub const CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

/// Where the pod template sits in kinds that have one.
fn template_path(kind: &str) -> Option<&'static [&'static str]> {
    crate::kinds::WorkloadKind::parse(kind).map(crate::kinds::WorkloadKind::template_path)
}

/// A pod found in an object.
pub enum Pod<'a> {
    /// A pod template (or a Pod): a mapping with `metadata` and `spec`.
    Template(&'a mut Node),
    /// A mapping holding `containers`/`initContainers` in a kind berth does not
    /// know (a custom resource); treated as a pod spec.
    Spec(&'a mut Node),
}

impl Pod<'_> {
    /// The pod spec.
    pub fn spec(&mut self) -> Option<&mut Node> {
        match self {
            Pod::Template(template) => template.get_mut("spec"),
            Pod::Spec(spec) => Some(spec),
        }
    }
}

/// Calls `f` for every pod of `object`, whose kind is `kind`. A
/// CustomResourceDefinition has none (its schema may describe `containers`, as
/// kustomize knows and leaves alone).
pub fn for_each_pod(object: &mut Node, kind: &str, f: &mut dyn FnMut(Pod<'_>)) {
    if kind == "CustomResourceDefinition" {
        return;
    }
    match template_path(kind) {
        Some(path) => {
            let mut node = object;
            for key in path {
                match node.get_mut(key) {
                    Some(next) => node = next,
                    None => return,
                }
            }
            if node.as_map().is_some() {
                f(Pod::Template(node));
            }
        }
        None => find_container_holders(object, f),
    }
}

fn holds_containers(node: &Node) -> bool {
    node.as_map().is_some_and(|entries| {
        entries.iter().any(|(k, v)| {
            matches!(k.as_str(), Some("containers" | "initContainers")) && v.as_seq().is_some()
        })
    })
}

/// Every mapping at any depth that holds `containers` or `initContainers`, as
/// kustomize's images filter searches other kinds: a holder's own children are
/// searched too (a custom kind may have `spec.containers` and
/// `spec.template.spec.containers`).
fn find_container_holders(node: &mut Node, f: &mut dyn FnMut(Pod<'_>)) {
    if holds_containers(node) {
        f(Pod::Spec(node));
    }
    match &mut node.value {
        Value::Map(entries) => entries
            .iter_mut()
            .for_each(|(_, v)| find_container_holders(v, f)),
        Value::Seq(items) => items.iter_mut().for_each(|v| find_container_holders(v, f)),
        Value::Scalar(_) => {}
    }
}

/// Calls `f` for every container (regular, init and ephemeral) of a pod spec.
pub fn for_each_container(spec: &mut Node, f: &mut dyn FnMut(&mut Node)) {
    for list in CONTAINER_LISTS {
        if let Some(items) = spec.get_mut(list).and_then(Node::as_seq_mut) {
            items
                .iter_mut()
                .filter(|c| c.as_map().is_some())
                .for_each(&mut *f);
        }
    }
}

/// Calls `f` for every `volumes[]` entry of a pod spec.
pub fn for_each_volume(spec: &mut Node, f: &mut dyn FnMut(&mut Node)) {
    if let Some(items) = spec.get_mut("volumes").and_then(Node::as_seq_mut) {
        items
            .iter_mut()
            .filter(|v| v.as_map().is_some())
            .for_each(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_yaml::{load_all, Limits};

    fn names(src: &str) -> Vec<String> {
        let mut doc = load_all(src, Limits::default()).unwrap().remove(0);
        let kind = doc
            .get("kind")
            .and_then(Node::as_str)
            .unwrap_or_default()
            .to_string();
        let mut out = Vec::new();
        for_each_pod(&mut doc, &kind, &mut |mut pod| {
            if let Some(spec) = pod.spec() {
                for_each_container(spec, &mut |c| {
                    out.push(
                        c.get("name")
                            .and_then(Node::as_str)
                            .unwrap_or("?")
                            .to_string(),
                    )
                });
            }
        });
        out
    }

    #[test]
    fn finds_containers_in_every_pod_bearing_kind() {
        let cases = [
            ("kind: Pod\nspec: {containers: [{name: a}], initContainers: [{name: i}], ephemeralContainers: [{name: e}]}", vec!["a", "i", "e"]),
            ("kind: PodTemplate\ntemplate: {spec: {containers: [{name: a}]}}", vec!["a"]),
            ("kind: Deployment\nspec: {template: {spec: {containers: [{name: a}, {name: b}]}}}", vec!["a", "b"]),
            ("kind: StatefulSet\nspec: {template: {spec: {initContainers: [{name: i}]}}}", vec!["i"]),
            ("kind: CronJob\nspec: {jobTemplate: {spec: {template: {spec: {containers: [{name: c}]}}}}}", vec!["c"]),
            ("kind: MyThing\nspec: {workers: [{pod: {containers: [{name: x}]}}, {pod: {initContainers: [{name: y}]}}]}", vec!["x", "y"]),
            ("kind: Deployment\nspec: {}", vec![]),
            ("kind: ConfigMap\ndata: {containers: not-a-list}", vec![]),
        ];
        for (src, want) in cases {
            assert_eq!(names(src), want, "{src}");
        }
    }
}
