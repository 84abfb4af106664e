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

use super::{Found, Proposed};

/// One ConfigMap data key's text, as a program would read it.
pub(super) struct ConfigText<'s> {
    /// The source it is in (`(file, YAML)`'s file).
    file: &'s str,
    /// The ConfigMap's name.
    map: String,
    /// The data key.
    key: String,
    /// Its lines that are no comment (`#`, `//`): prose names images too.
    lines: Vec<String>,
}

/// Every ConfigMap data key of `sources` (`(file, YAML)`: what the
/// kustomizations build when known, else the manifests) but documentation keys
/// (`_example`, Knative's and KServe's), with their text. Only the documents
/// that name a ConfigMap are parsed: a built overlay is mostly other objects.
pub(super) fn config_texts(sources: &[(String, String)]) -> Vec<ConfigText<'_>> {
    let mut out = Vec::new();
    for (file, yaml) in sources {
        let docs = (yaml.split("\n---"))
            .filter(|doc| doc.contains("ConfigMap"))
            .filter_map(|doc| berth_yaml::load_all(doc, Limits::default()).ok())
            .flatten();
        let maps = docs.filter(|d| d.get("kind").and_then(Node::as_str) == Some("ConfigMap"));
        for doc in maps {
            let name = doc
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Node::as_str);
            for (key, value) in doc.get("data").and_then(Node::as_map).unwrap_or_default() {
                let (Some(key), Some(text)) = (key.as_str(), value.as_str()) else {
                    continue;
                };
                if key.ends_with("_example") {
                    continue;
                }
                let lines = (text.lines())
                    .filter(|l| !["#", "//"].iter().any(|c| l.trim_start().starts_with(c)))
                    .map(str::to_string)
                    .collect();
                out.push(ConfigText {
                    file,
                    map: name.unwrap_or_default().to_string(),
                    key: key.to_string(),
                    lines,
                });
            }
        }
    }
    out
}

/// `imagePaths:` entries (`(kind, path)`) for the ConfigMap data keys of
/// `sources` whose text names a component's image, as berth.yaml's default (or
/// the repository alone). Says which in `notes`.
pub(super) fn image_paths(
    texts: &[ConfigText<'_>],
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
    for text in texts {
        let path = data_key_path(&text.key);
        if keys.iter().any(|(p, _, _)| *p == path) {
            continue;
        }
        let spelt: Vec<(usize, Option<Reference>)> = (text.lines.iter())
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
            keys.push((path, text.map.clone(), components[*i].name.clone()));
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

/// Project images (under `owner`) that a ConfigMap's text names and no pod of
/// `found` runs: Katib's `katib-config` lists the suggestion, early-stopping and
/// metrics-collector images its controller starts. Each becomes a component,
/// so `berth mirror` copies it and ([`image_paths`]) overrides reach it.
pub(super) fn spelt_images(
    texts: &[ConfigText<'_>],
    owner: Option<&str>,
    found: &[Found],
) -> Vec<Found> {
    let Some(owner) = owner else {
        return Vec::new();
    };
    let prefix = format!("{owner}/");
    let mut out: Vec<Found> = Vec::new();
    for text in texts {
        let words = text.lines.iter().flat_map(|l| {
            l.split(|c: char| !(c.is_ascii_alphanumeric() || "./-_:@".contains(c)))
                .filter(|w| w.contains('/') && spelt_as_image(w))
                .filter_map(|w| Reference::parse(w).ok())
                .collect::<Vec<_>>()
        });
        for reference in words {
            let repository = reference.repository();
            let known = (found.iter().chain(&out)).any(|f| f.reference.repository() == repository);
            if known || !repository.to_string().starts_with(&prefix) {
                continue;
            }
            out.push(Found {
                reference,
                at: format!(
                    "{}: ConfigMap/{} data key `{}`",
                    text.file, text.map, text.key
                ),
                helm_values: Vec::new(),
                in_chart: false,
            });
        }
    }
    out
}

/// Whether a word is spelt as an image and not as a `namespace/name` pair
/// (KServe's `"kserveIngressGateway" : "kserve/kserve-ingress-gateway"`): it has
/// a tag or a digest, or starts with a registry's host (`ghcr.io/…`).
fn spelt_as_image(word: &str) -> bool {
    let (first, rest) = word.split_once('/').unwrap_or((word, ""));
    let host = first.contains(['.', ':']) || first == "localhost";
    host || rest.contains([':', '@'])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::{propose, Facts, Proposal};

    /// What init proposes for a repository of one manifest file.
    fn proposed(name: &str, yaml: &str) -> Proposal {
        propose(&Facts {
            name: name.into(),
            manifests: vec![("deploy/all.yaml".into(), yaml.into())],
            ..Facts::default()
        })
    }

    #[test]
    fn configmap_keys_that_name_component_images_become_image_paths() {
        let yaml = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: c}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: c, image: 'quay.io/ks/agent:v1'}\n      - {name: r, image: 'quay.io/ks/router:v1'}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: inferenceservice-config}\ndata:\n  agent: '{\"image\" : \"quay.io/ks/agent:v1\"}'\n  run.py: 'base = \"quay.io/ks/router\"'\n  router: '{\"image\" : \"quay.io/ks/router:v0\"}'\n  _example: '{\"image\" : \"quay.io/ks/agent:v1\"}'\n  notes: |\n    # built from quay.io/ks/agent:v1\n    other: 1\n";
        let proposal = proposed("ks", yaml);
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

    /// Katib's shape: the controller starts the images `katib-config` lists.
    /// Project images there become components (and the key an `imagePaths`
    /// entry); a `namespace/name` pair and a third-party image do not.
    #[test]
    fn project_images_only_a_configmap_names_become_components() {
        let yaml = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: c}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: c, image: 'ghcr.io/kq/katib-controller:v1'}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: katib-config}\ndata:\n  katib-config.yaml: |\n    suggestions:\n    - algorithmName: tpe\n      image: ghcr.io/kq/suggestion-hyperopt:v1\n    - algorithmName: random\n      image: ghcr.io/kq/suggestion-hyperopt:v1\n    gateway: kq/ingress-gateway\n    init: docker.io/library/busybox:1.36\n";
        let proposal = proposed("kq", yaml);
        let found: Vec<(&str, &str)> = (proposal.components.iter())
            .map(|c| (c.name.as_str(), c.image.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("katib-controller", "ghcr.io/kq/katib-controller:v1"),
                ("suggestion-hyperopt", "ghcr.io/kq/suggestion-hyperopt:v1")
            ],
            "{:#?}",
            proposal.notes
        );
        assert_eq!(
            proposal.image_paths,
            [(
                "ConfigMap".to_string(),
                "data[\"katib-config.yaml\"]".to_string()
            )]
        );
        // KServe's gateway `namespace/name` is no image; these are.
        assert!(!super::spelt_as_image("kserve/kserve-ingress-gateway"));
        assert!(super::spelt_as_image("kserve/agent:latest"));
        assert!(super::spelt_as_image("ghcr.io/kq/x"));
        assert!(super::spelt_as_image("localhost/x"));
    }
}
