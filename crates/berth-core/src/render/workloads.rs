//! The workloads a rendered stream defines, and how to find their pods:
//! what `berth sync` needs to reach a project's containers in a cluster.

use std::collections::BTreeMap;

use berth_yaml::{Limits, Node};

use super::pods::{for_each_pod, Pod};

/// A rendered object that runs pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// `kind`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`, when the object sets one.
    pub namespace: Option<String>,
    /// How to find its pods: the pod template's labels (every pod it creates
    /// carries them), or, for a bare Pod, its name.
    pub pods: PodSelector,
}

/// How a workload's pods are found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodSelector {
    /// Pods carrying all of these labels.
    Labels(BTreeMap<String, String>),
    /// The Pod with this name.
    Name(String),
}

impl PodSelector {
    /// The `labelSelector` query value (`a=b,c=d`), if label-based.
    pub fn label_query(&self) -> Option<String> {
        match self {
            PodSelector::Labels(labels) => Some(
                labels
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            PodSelector::Name(_) => None,
        }
    }
}

/// The workloads in a rendered YAML stream (as produced by [`super::render`]).
/// Objects without a pod template, or whose template has no labels, are left out.
pub fn workloads(rendered_yaml: &str) -> Result<Vec<Workload>, berth_yaml::Error> {
    Ok(workloads_of(berth_yaml::load_all(
        rendered_yaml,
        Limits::default(),
    )?))
}

/// The workloads among rendered objects (`berth dev` has them as trees already).
pub fn workloads_of(objects: impl IntoIterator<Item = Node>) -> Vec<Workload> {
    let mut out = Vec::new();
    for mut doc in objects {
        let text = |node: &Node, path: &[&str]| -> Option<String> {
            let mut node = node;
            for key in path {
                node = node.get(key)?;
            }
            node.as_str().map(str::to_string)
        };
        let (Some(kind), Some(name)) = (text(&doc, &["kind"]), text(&doc, &["metadata", "name"]))
        else {
            continue;
        };
        let namespace = text(&doc, &["metadata", "namespace"]);
        let mut labels = None;
        for_each_pod(&mut doc, &kind, &mut |pod| {
            if let Pod::Template(template) = pod {
                let found: BTreeMap<String, String> = template
                    .get("metadata")
                    .and_then(|m| m.get("labels"))
                    .and_then(Node::as_map)
                    .map(|entries| {
                        entries
                            .iter()
                            .filter_map(|(k, v)| {
                                Some((k.as_str()?.to_string(), v.as_str()?.to_string()))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                labels = Some(found);
            }
        });
        let pods = match (kind.as_str(), labels) {
            ("Pod", Some(_)) => PodSelector::Name(name.clone()),
            (_, Some(labels)) if !labels.is_empty() => PodSelector::Labels(labels),
            _ => continue,
        };
        out.push(Workload {
            kind,
            name,
            namespace,
            pods,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_pod_templates_and_bare_pods() {
        let yaml = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: dev}\n\
                    spec:\n  template:\n    metadata: {labels: {app: web, tier: fe}}\n    spec: {containers: [{name: c, image: x}]}\n\
                    ---\napiVersion: v1\nkind: Pod\nmetadata: {name: solo}\nspec: {containers: [{name: c, image: x}]}\n\
                    ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {}\n\
                    ---\napiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\n\
                    spec: {jobTemplate: {spec: {template: {spec: {containers: []}}}}}\n";
        let found = workloads(yaml).unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].namespace.as_deref(), Some("dev"));
        assert_eq!(
            found[0].pods.label_query().as_deref(),
            Some("app=web,tier=fe")
        );
        assert_eq!(found[1].pods, PodSelector::Name("solo".into()));
    }
}
