//! Related images (#46 item 6): an operator's manager container lists the images
//! it pulls at run time as `RELATED_IMAGE_*` variables (OLM's convention). Their
//! values are often empty in the repository — OLM fills them in a bundle, and the
//! operator falls back to images it embeds from a JSON file (the OGX operator's
//! `distributions.json`: `"starter": "docker.io/ogxai/distribution-starter:latest"`
//! for `RELATED_IMAGE_STARTER`). init proposes each as a `relatedImage:`
//! component and the container as `operator:`, so render fills the variables and
//! mirror copies the images.

use berth_ref::Reference;
use berth_yaml::{Limits, Node, Value};

use super::{Proposed, ProposedOperator};

/// The operator's container and its `RELATED_IMAGE_*` variables.
pub(super) struct Operator {
    /// `Deployment/controller-manager`.
    workload: String,
    container: String,
    /// `(suffix after RELATED_IMAGE_, its value, file:line:column)`.
    variables: Vec<(String, String, String)>,
}

/// The first container of `sources` (`(file, YAML)`: what the kustomizations
/// build when known, else the manifests) that sets `RELATED_IMAGE_*` variables.
pub(super) fn operator(sources: &[(String, String)]) -> Option<Operator> {
    sources.iter().find_map(|(file, yaml)| {
        let docs = berth_yaml::load_all(yaml, Limits::default()).ok()?;
        docs.into_iter().find_map(|mut doc| {
            let kind = doc.get("kind").and_then(Node::as_str)?.to_string();
            let name = doc
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Node::as_str)?
                .to_string();
            let mut found = None;
            berth_core::render::pods::for_each_pod(&mut doc, &kind, &mut |mut pod| {
                let Some(spec) = pod.spec() else { return };
                berth_core::render::pods::for_each_container(spec, &mut |container| {
                    if found.is_some() {
                        return;
                    }
                    let variables = related_variables(container, file);
                    let container = container.get("name").and_then(Node::as_str);
                    if let (false, Some(container)) = (variables.is_empty(), container) {
                        found = Some(Operator {
                            workload: format!("{kind}/{name}"),
                            container: container.to_string(),
                            variables,
                        });
                    }
                });
            });
            found
        })
    })
}

/// `RELATED_IMAGE_*` entries of a container's `env:`.
fn related_variables(container: &Node, file: &str) -> Vec<(String, String, String)> {
    let entries = container
        .get("env")
        .and_then(Node::as_seq)
        .into_iter()
        .flatten();
    entries
        .filter_map(|entry| {
            let name = entry.get("name").and_then(Node::as_str)?;
            let suffix = name.strip_prefix("RELATED_IMAGE_")?;
            let value = entry.get("value").and_then(Node::as_str).unwrap_or("");
            Some((
                suffix.to_string(),
                value.to_string(),
                format!("{file}:{}", entry.pos),
            ))
        })
        .collect()
}

/// Adds a `relatedImage: true` component per variable whose image is known
/// (its value, else a JSON file of `data` that maps the name to a reference),
/// and returns the `operator:` entry; a variable with no image is a note.
/// `third_party` says whether a repository is outside the project's registry.
pub(super) fn propose(
    operator: &Operator,
    data: &[(String, String)],
    third_party: &dyn Fn(&str) -> bool,
    images: &mut Vec<Proposed>,
    notes: &mut Vec<String>,
) -> Option<ProposedOperator> {
    let mut added = 0;
    for (suffix, value, at) in &operator.variables {
        let name = suffix.to_ascii_lowercase().replace('_', "-");
        let found = Reference::parse(value)
            .ok()
            .map(|r| (r, String::new()))
            .or_else(|| {
                from_data(suffix, data).map(|(r, file)| (r, format!("; its image from {file}")))
            });
        let Some((reference, source)) = found else {
            notes.push(format!("RELATED_IMAGE_{suffix} ({at}): no image found (its value is empty or no reference, and no JSON file maps `{name}` to one); add component `{name}` with `relatedImage: true` by hand"));
            continue;
        };
        if images.iter().any(|c| c.name == name) {
            notes.push(format!("RELATED_IMAGE_{suffix} ({at}): component `{name}` exists already; give it `relatedImage: true` by hand if it is this image"));
            continue;
        }
        let mut why = format!(
            "RELATED_IMAGE_{suffix} of {}'s container `{}`, {at}{source}; an image the operator pulls at run time",
            operator.workload, operator.container
        );
        let third_party = third_party(&reference.repository().to_string());
        if third_party {
            why.push_str("; third-party: the registry variable leaves it");
        }
        notes.push(format!("component `{name}`: {reference} ({why})"));
        images.push(Proposed {
            name,
            image: reference.to_string(),
            third_party,
            related_image: true,
            why,
            ..Proposed::default()
        });
        added += 1;
    }
    (added > 0).then(|| {
        notes.push(format!(
            "operator: {}'s container `{}` gets the RELATED_IMAGE_* variables",
            operator.workload, operator.container
        ));
        ProposedOperator {
            workload: operator.workload.clone(),
            container: operator.container.clone(),
        }
    })
}

/// The reference a JSON file of `data` gives under the key that spells
/// `suffix` (`remote-vllm`, `remote_vllm` or `REMOTE_VLLM` for `REMOTE_VLLM`),
/// with the file's name.
fn from_data(suffix: &str, data: &[(String, String)]) -> Option<(Reference, String)> {
    data.iter().find_map(|(file, json)| {
        let docs = berth_yaml::load_all(json, Limits::default()).ok()?;
        docs.iter()
            .find_map(|doc| find_key(doc, suffix))
            .map(|r| (r, file.clone()))
    })
}

fn find_key(node: &Node, suffix: &str) -> Option<Reference> {
    match &node.value {
        Value::Map(entries) => entries.iter().find_map(|(key, value)| {
            let spelled = key
                .as_str()
                .is_some_and(|k| k.to_ascii_uppercase().replace('-', "_") == suffix);
            let here = spelled
                .then(|| value.as_str().and_then(|v| Reference::parse(v).ok()))
                .flatten();
            here.or_else(|| find_key(value, suffix))
        }),
        Value::Seq(items) => items.iter().find_map(|item| find_key(item, suffix)),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::{propose, Facts};

    /// The OGX operator's shape: empty `RELATED_IMAGE_*` values, the images in
    /// a JSON map keyed by the names the variables spell; one with no image is
    /// a note, not a guess.
    #[test]
    fn related_variables_become_related_image_components_with_their_operator() {
        let manager = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op-manager}\nspec:\n  template:\n    spec:\n      containers:\n      - name: manager\n        image: quay.io/acme/op:v1\n        env:\n        - {name: RELATED_IMAGE_STARTER, value: ''}\n        - {name: RELATED_IMAGE_REMOTE_VLLM}\n        - {name: RELATED_IMAGE_PINNED, value: 'quay.io/acme/pinned:v2'}\n        - {name: RELATED_IMAGE_NOWHERE, value: ''}\n";
        let facts = Facts {
            name: "op".into(),
            manifests: vec![("config/manager.yaml".into(), manager.into())],
            data: vec![(
                "distributions.json".into(),
                r#"{"starter": "docker.io/other/starter:latest", "remote-vllm": "docker.io/other/vllm:0.3"}"#.into(),
            )],
            ..Facts::default()
        };
        let plan = propose(&facts);
        assert!(
            plan.to_yaml().contains("  starter:\n    image: docker.io/other/starter:latest\n    registry: false\n    relatedImage: true\n  remote-vllm:\n    image: docker.io/other/vllm:0.3\n    registry: false\n    relatedImage: true\n  pinned:\n    image: quay.io/acme/pinned:v2\n    relatedImage: true\noperator:\n  workload: Deployment/op-manager\n  container: manager\n"),
            "{}",
            plan.to_yaml()
        );
        assert!(
            plan.notes.iter().any(|n| n
                .starts_with("RELATED_IMAGE_NOWHERE (config/manager.yaml:14:11): no image found")),
            "{:?}",
            plan.notes
        );
    }
}
