//! Images a program reads from a ConfigMap's text: KServe's
//! `inferenceservice-config` holds JSON per key (`"image" :
//! "kserve/agent:latest"`) that its controller injects into every
//! InferenceService's pods. init proposes an `imagePaths:` entry per such key,
//! so a registry override or a pin reaches those images too (render rewrites
//! every component image spelt in the text).

use berth_ref::scan::Scanner;
use berth_ref::{Reference, Repository};
use berth_yaml::{Limits, Node};

use berth_core::project::data_key_path;

use super::Proposed;

/// `imagePaths:` entries (`(kind, path)`) for the ConfigMap data keys of
/// `sources` (`(file, YAML)`: what the kustomizations build when known, else
/// the manifests) whose text names a component's image on a line that is no
/// comment; documentation keys (`_example`) left out. Says which in `notes`.
pub(super) fn image_paths(
    sources: &[(String, String)],
    components: &[Proposed],
    notes: &mut Vec<String>,
) -> Vec<(String, String)> {
    let defaults: Vec<Option<Reference>> = (components.iter())
        .map(|c| Reference::parse(&c.image).ok())
        .collect();
    let repositories: Vec<Vec<Repository>> = (defaults.iter())
        .map(|r| r.iter().map(|r| r.repository().clone()).collect())
        .collect();
    let scanner = Scanner::new(
        repositories
            .iter()
            .enumerate()
            .map(|(i, r)| (i, r.as_slice())),
    );
    let mut keys: Vec<(String, String, String)> = Vec::new(); // path, ConfigMap, component
    for (_, yaml) in sources {
        if !scanner.may_match(yaml) {
            continue;
        }
        let Ok(docs) = berth_yaml::load_all(yaml, Limits::default()) else {
            continue;
        };
        for doc in docs
            .iter()
            .filter(|d| d.get("kind").and_then(Node::as_str) == Some("ConfigMap"))
        {
            let name = doc
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Node::as_str);
            let data = doc.get("data").and_then(Node::as_map).unwrap_or_default();
            for (key, value) in data {
                let (Some(key), Some(text)) = (key.as_str(), value.as_str()) else {
                    continue;
                };
                if key.ends_with("_example")
                    || keys.iter().any(|(p, _, _)| *p == data_key_path(key))
                {
                    continue;
                }
                let spelt: Vec<(usize, Option<Reference>)> = (text.lines())
                    .filter(|l| !["#", "//"].iter().any(|c| l.trim_start().starts_with(c)))
                    .flat_map(|l| {
                        let found = scanner.line(l).into_iter();
                        found
                            .map(|s| (s.component, Reference::parse(s.text).ok()))
                            .collect::<Vec<_>>()
                    })
                    .collect();
                // Only where berth would write what the text says: a tag that
                // differs would be rewritten, a change of the output init does not make.
                let agrees = |(i, spelling): &(usize, Option<Reference>)| {
                    let default = defaults[*i].as_ref();
                    spelling.as_ref().zip(default).is_some_and(|(s, d)| {
                        (s.tag().is_none() && s.digest().is_none())
                            || (s.tag() == d.tag() && s.digest() == d.digest())
                    })
                };
                if let Some((i, _)) = spelt.first().filter(|_| spelt.iter().all(agrees)) {
                    let c = components[*i].name.clone();
                    keys.push((data_key_path(key), name.unwrap_or_default().to_string(), c));
                }
            }
        }
    }
    if !keys.is_empty() {
        let list: Vec<String> = (keys.iter())
            .map(|(p, map, c)| format!("`{p}` of ConfigMap/{map} (component `{c}`)"))
            .collect();
        notes.push(format!(
            "imagePaths: {}: a program reads these images from the ConfigMap, so berth rewrites them there too (a registry override or a pin then reaches them)",
            list.join(", ")
        ));
    }
    keys.into_iter()
        .map(|(p, _, _)| ("ConfigMap".to_string(), p))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::{propose, Facts};

    #[test]
    fn configmap_keys_that_name_component_images_become_image_paths() {
        let yaml = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: c}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: c, image: 'quay.io/ks/agent:v1'}\n      - {name: r, image: 'quay.io/ks/router:v1'}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: inferenceservice-config}\ndata:\n  agent: '{\"image\" : \"quay.io/ks/agent:v1\"}'\n  run.py: 'base = \"quay.io/ks/router\"'\n  router: '{\"image\" : \"quay.io/ks/router:v0\"}'\n  _example: '{\"image\" : \"quay.io/ks/agent:v1\"}'\n  notes: |\n    # built from quay.io/ks/agent:v1\n    other: 1\n";
        let facts = Facts {
            name: "ks".into(),
            manifests: vec![("deploy/all.yaml".into(), yaml.into())],
            ..Facts::default()
        };
        let proposal = propose(&facts);
        let paths: Vec<&str> = (proposal.image_paths.iter())
            .map(|(kind, path)| {
                assert_eq!(kind, "ConfigMap");
                path.as_str()
            })
            .collect();
        // `router` spells another tag than berth's default: rewriting it would
        // change the output, so validate's [copy] says so instead.
        assert_eq!(
            paths,
            ["data.agent", "data[\"run.py\"]"],
            "{:#?}",
            proposal.notes
        );
        assert!(
            proposal.to_yaml().ends_with("imagePaths:\n- kind: ConfigMap\n  path: data.agent\n- kind: ConfigMap\n  path: data[\"run.py\"]\n"),
            "{}",
            proposal.to_yaml()
        );
    }
}
