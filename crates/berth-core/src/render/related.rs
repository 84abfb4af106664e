//! Operator related images: the images an operator pulls at run time, which
//! operator teams keep in three hand-edited copies — the operator's
//! `RELATED_IMAGE_*` environment, a ClusterServiceVersion's
//! `spec.relatedImages`, and the mirroring tool's list. berth writes the first
//! two from the components marked `relatedImage:` (the third is
//! `berth mirror`/`berth images --output imageset`), and says where the
//! manifests held something else: a value that disagrees, a name that is no
//! component's. (Under `--locked` every image has berth.lock's digest, or the
//! resolution fails naming the component: a related image is never tag-only there.)

use berth_yaml::{Node, Pos};

use super::pods::for_each_pod;
use crate::project::Operator;
use crate::resolve::Resolution;

/// The prefix OLM and operator-sdk give the variables.
pub const PREFIX: &str = "RELATED_IMAGE_";

/// The variable of related image `name`: `remote-vllm` → `RELATED_IMAGE_REMOTE_VLLM`.
pub fn variable(name: &str) -> String {
    format!("{PREFIX}{}", crate::project::variable_part(name))
}

/// One related image: its name, variable and the reference berth writes.
#[derive(Debug, Clone)]
struct Related {
    name: String,
    variable: String,
    reference: String,
}

/// What the manifests held that berth's answer does not: one message each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelatedFinding {
    /// `file:line:column (Kind/name)`.
    pub at: crate::place::Place,
    /// What is wrong and how to fix it.
    pub problem: String,
}

/// Writes the related images into the operator's container and into
/// ClusterServiceVersions, and remembers what disagreed.
#[derive(Debug, Default)]
pub struct RelatedImages<'a> {
    operator: Option<&'a Operator>,
    related: Vec<Related>,
    /// Whether the operator's container was found in any object.
    pub operator_seen: bool,
}

impl<'a> RelatedImages<'a> {
    /// The related images of `resolution` (components with `relatedImage:`), in order.
    pub fn new(operator: Option<&'a Operator>, resolution: &Resolution<'_>) -> Self {
        let related = resolution
            .images
            .iter()
            .filter_map(|image| {
                let name = image.component.related_image.clone()?;
                Some(Related {
                    variable: variable(&name),
                    name,
                    reference: image.reference.to_string(),
                })
            })
            .collect();
        RelatedImages {
            operator,
            related,
            operator_seen: false,
        }
    }

    /// Whether there is anything to write.
    pub fn is_empty(&self) -> bool {
        self.related.is_empty()
    }

    /// Writes into `object` (kind `kind`, named `name`); `at` places a field.
    pub fn apply(
        &mut self,
        object: &mut Node,
        kind: &str,
        name: &str,
        at: &dyn Fn(Pos) -> crate::place::Place,
        out: &mut Vec<RelatedFinding>,
    ) {
        if self.related.is_empty() {
            return;
        }
        if let Some(operator) = self.operator {
            if operator.kind == kind && operator.name == name {
                let mut seen = false;
                for_each_pod(object, kind, &mut |mut pod| {
                    if let Some(spec) = pod.spec() {
                        seen |= self.set_env(spec, at, out);
                    }
                });
                self.operator_seen |= seen;
            }
        }
        if kind == "ClusterServiceVersion" {
            self.fill_csv(object, at, out);
        }
    }

    /// A ClusterServiceVersion: `spec.relatedImages`, and the operator's
    /// container in `spec.install.spec.deployments[]` (OLM creates that Deployment).
    fn fill_csv(
        &mut self,
        csv: &mut Node,
        at: &dyn Fn(Pos) -> crate::place::Place,
        out: &mut Vec<RelatedFinding>,
    ) {
        let Some(spec) = csv.get_mut("spec") else {
            return;
        };
        if let Some(list) = spec.entry("relatedImages", || Node::seq(Pos::default())) {
            if list.is_null() {
                *list = Node::seq(Pos::default());
            }
            if let Some(items) = list.as_seq_mut() {
                self.fill_list(items, at, out);
            }
        }
        let Some(operator) = self.operator else {
            return;
        };
        let deployments = spec
            .get_mut("install")
            .and_then(|i| i.get_mut("spec"))
            .and_then(|s| s.get_mut("deployments"))
            .and_then(Node::as_seq_mut);
        for deployment in deployments.into_iter().flatten() {
            if deployment.get("name").and_then(Node::as_str) != Some(operator.name.as_str()) {
                continue;
            }
            let pod = deployment
                .get_mut("spec")
                .and_then(|s| s.get_mut("template"))
                .and_then(|t| t.get_mut("spec"));
            if let Some(pod) = pod {
                self.operator_seen |= self.set_env(pod, at, out);
            }
        }
    }

    /// `relatedImages: [{name, image}]`: berth's entries set (added in order
    /// when missing), an entry that disagrees or names no component a finding.
    fn fill_list(
        &self,
        items: &mut Vec<Node>,
        at: &dyn Fn(Pos) -> crate::place::Place,
        out: &mut Vec<RelatedFinding>,
    ) {
        for item in items.iter_mut() {
            let Some(name) = item.get("name").and_then(Node::as_str).map(str::to_string) else {
                continue;
            };
            let pos = item.pos;
            match self.related.iter().find(|r| r.name == name) {
                Some(related) => {
                    if let Some(image) = item.get_mut("image") {
                        let found = image.as_str().unwrap_or_default().to_string();
                        if !found.is_empty() && found != related.reference {
                            out.push(RelatedFinding {
                                at: at(image.pos),
                                problem: format!("`relatedImages` entry `{name}` is `{found}`, but berth's answer is `{}` (component with `relatedImage: {name}`), which berth writes: remove the value from the manifest, or change berth.yaml", related.reference),
                            });
                        }
                        image.set_string(related.reference.clone());
                    }
                }
                None => out.push(RelatedFinding {
                    at: at(pos),
                    problem: format!("`relatedImages` entry `{name}` names no component with `relatedImage:`; the operator would pull an image berth neither resolves nor mirrors: mark its component `relatedImage: {name}` in berth.yaml, or remove the entry"),
                }),
            }
        }
        for related in &self.related {
            if !items
                .iter()
                .any(|i| i.get("name").and_then(Node::as_str) == Some(related.name.as_str()))
            {
                items.push(pair("name", &related.name, "image", &related.reference));
            }
        }
    }

    /// The operator's container in pod spec `spec`: each `RELATED_IMAGE_*` set
    /// to berth's answer (appended in order when missing); returns whether the
    /// container was there.
    fn set_env(
        &self,
        spec: &mut Node,
        at: &dyn Fn(Pos) -> crate::place::Place,
        out: &mut Vec<RelatedFinding>,
    ) -> bool {
        let Some(operator) = self.operator else {
            return false;
        };
        let Some(containers) = spec.get_mut("containers").and_then(Node::as_seq_mut) else {
            return false;
        };
        let Some(container) = containers
            .iter_mut()
            .find(|c| c.get("name").and_then(Node::as_str) == Some(operator.container.as_str()))
        else {
            return false;
        };
        let Some(env) = container.entry("env", || Node::seq(Pos::default())) else {
            return true;
        };
        if env.is_null() {
            *env = Node::seq(Pos::default());
        }
        let Some(items) = env.as_seq_mut() else {
            return true;
        };
        for item in items.iter_mut() {
            let Some(name) = item.get("name").and_then(Node::as_str).map(str::to_string) else {
                continue;
            };
            if !name.starts_with(PREFIX) {
                continue;
            }
            let pos = item.pos;
            match self.related.iter().find(|r| r.variable == name) {
                Some(related) => {
                    let found = item.get("value").and_then(Node::as_str).unwrap_or_default().to_string();
                    if !found.is_empty() && found != related.reference {
                        out.push(RelatedFinding {
                            at: at(item.get("value").map_or(pos, |v| v.pos)),
                            problem: format!("`{name}` is `{found}`, but berth's answer is `{}` (related image `{}`), which berth writes: remove the value from the manifest, or change berth.yaml", related.reference, related.name),
                        });
                    }
                    *item = pair("name", &name, "value", &related.reference);
                }
                None => out.push(RelatedFinding {
                    at: at(pos),
                    problem: format!("`{name}` names no component with `relatedImage:`, so berth neither resolves nor mirrors what the operator pulls: mark that component `relatedImage: {}` in berth.yaml, or remove the variable", name.trim_start_matches(PREFIX).to_ascii_lowercase().replace('_', "-")),
                }),
            }
        }
        for related in &self.related {
            if !items
                .iter()
                .any(|i| i.get("name").and_then(Node::as_str) == Some(related.variable.as_str()))
            {
                items.push(pair("name", &related.variable, "value", &related.reference));
            }
        }
        true
    }
}

/// `{k1: v1, k2: v2}` as strings.
fn pair(k1: &str, v1: &str, k2: &str, v2: &str) -> Node {
    let mut node = Node::map(Pos::default());
    if let Some(entries) = node.as_map_mut() {
        entries.push((
            Node::string(k1, Pos::default()),
            Node::string(v1, Pos::default()),
        ));
        entries.push((
            Node::string(k2, Pos::default()),
            Node::string(v2, Pos::default()),
        ));
    }
    node
}
