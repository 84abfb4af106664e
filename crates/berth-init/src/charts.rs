//! `berth init` on a repository with Helm charts: each top-level chart is a
//! `helm:` manifest source, and each image its values.yaml holds becomes a
//! component whose `helmValues:` names the values that carry it, so berth's
//! answer reaches every copy the chart makes (args, env, ConfigMaps).
//!
//! What counts as an image in values, as charts write them:
//! - a mapping with `repository:` (and `registry:`, `tag:`, `digest:` beside
//!   it) whose key names an image (`image:`, `proxyImage:`) or that has a
//!   `tag:` — the Bitnami and `helm create` shape; an empty `tag:` is the
//!   chart's `appVersion`, as `helm create`'s templates default it;
//! - an `image:` string that is a whole reference (`ghcr.io/acme/web:v1`).
//!
//! Images inside lists (`containers: [{image: …}]`) are found, but a
//! `helmValues:` path cannot name a list entry (a values layer replaces a
//! list whole): berth rewrites their rendered `image:` fields instead, and a
//! note says so.

use berth_ref::Reference;
use berth_yaml::{Limits, Node};

/// A Helm chart found in the repository.
#[derive(Debug, Clone, Default)]
pub struct Chart {
    /// Its directory, relative to the repository (`charts/router`).
    pub dir: String,
    /// `name:` of its Chart.yaml.
    pub name: String,
    /// `appVersion:` of its Chart.yaml: the tag an empty `tag:` stands for.
    pub app_version: Option<String>,
    /// The text of its values.yaml, when it has one.
    pub values: Option<String>,
    /// Its per-accelerator or per-platform values files (`values_xpu.yaml`,
    /// `values-rocm.yaml`): `(file name, text)`.
    pub variant_values: Vec<(String, String)>,
    /// `type: library`: it renders nothing itself; the charts that depend on it
    /// see its values under their dependency's name.
    pub library: bool,
    /// `dependencies:` of its Chart.yaml: (name or alias, repository as written).
    pub dependencies: Vec<(String, String)>,
    /// Its template files, joined: what an empty tag defaults to.
    pub templates: String,
}

/// One image found in a chart's values.
#[derive(Debug, Clone)]
pub(super) struct ValuesImage {
    /// The reference the chart renders by default.
    pub reference: Reference,
    /// `charts/router/values.yaml:3:15`.
    pub at: String,
    /// `helmValues:` entries: (part, dotted values path); empty inside a list.
    pub helm_values: Vec<(&'static str, String)>,
}

/// The parts of an image block, in the order `helmValues:` lists them.
const PARTS: [&str; 4] = ["registry", "repository", "tag", "digest"];

/// Every image in the values of `chart` (of a library chart: as the charts
/// that depend on it see them, under their dependency's name).
pub(super) fn images(chart: &Chart, all: &[Chart], notes: &mut Vec<String>) -> Vec<ValuesImage> {
    let prefix = if chart.library {
        let parent = all.iter().find_map(|p| {
            p.dependencies.iter().find_map(|(name, repository)| {
                let rel = repository.strip_prefix("file://")?;
                (super::normalize(&format!("{}/{rel}", p.dir)) == super::normalize(&chart.dir))
                    .then(|| name.clone())
            })
        });
        match parent {
            Some(name) => Some(name),
            None => return Vec::new(), // no chart renders it: its values reach nothing
        }
    } else {
        None
    };
    let mut found = own_images(chart, notes);
    if let Some(prefix) = prefix {
        for image in &mut found {
            for (_, path) in &mut image.helm_values {
                *path = format!("{prefix}.{path}");
            }
        }
    }
    found
}

/// The images of `chart`'s own values.yaml, with paths as it sees them.
fn own_images(chart: &Chart, notes: &mut Vec<String>) -> Vec<ValuesImage> {
    let Some(text) = &chart.values else {
        return Vec::new();
    };
    values_images(chart, "values.yaml", text, None, notes)
}

/// The images a values file of `chart` (`file`, in its directory) names; with
/// `over`, the file merged over those values as helm merges `-f` layers (an
/// accelerator's file that sets only a repository keeps values.yaml's tag).
pub(super) fn values_images(
    chart: &Chart,
    file: &str,
    text: &str,
    over: Option<&str>,
    notes: &mut Vec<String>,
) -> Vec<ValuesImage> {
    let file = format!("{}/{file}", chart.dir);
    let documents = match berth_yaml::load_all(text, Limits::default()) {
        Ok(documents) => documents,
        Err(e) => {
            notes.push(format!("{file}:{e}; its images were not read"));
            return Vec::new();
        }
    };
    let Some(root) = documents.first() else {
        return Vec::new();
    };
    let base = over.and_then(|text| berth_yaml::load_all(text, Limits::default()).ok());
    let merged = base.as_ref().and_then(|docs| docs.first()).map(|base| {
        let mut merged = base.clone();
        berth_core::render::merge_values(&mut merged, root);
        merged
    });
    let root = merged.as_ref().unwrap_or(root);
    let mut walk = Walk {
        chart,
        root,
        file: &file,
        found: Vec::new(),
        lists: Vec::new(),
        notes,
    };
    walk.node(root, "", false);
    for (path, at) in &walk.lists {
        walk.notes.push(format!(
            "{at}: images in the list `{path}`: `helmValues:` cannot name a list entry, so berth rewrites their rendered `image:` fields instead"
        ));
    }
    walk.found
}

/// `- helm: {chart: DIR, release: NAME}`.
pub(super) fn source(chart: &Chart) -> super::Source {
    super::Source::Helm {
        chart: chart.dir.clone(),
        release: (!chart.name.is_empty()).then(|| release(&chart.name)),
        values: Vec::new(),
    }
}

/// A chart's name as a release name (lowercase letters, digits, `-`; ≤ 53).
pub(super) fn release_name(name: &str) -> String {
    release(name)
}

fn release(name: &str) -> String {
    let mut out = crate::names::dashed(name);
    out.truncate(53);
    let out = out.trim_matches('-').to_string();
    if out.is_empty() {
        "release".into()
    } else {
        out
    }
}

struct Walk<'a> {
    chart: &'a Chart,
    /// The whole values: what an empty tag's default may name.
    root: &'a Node,
    file: &'a str,
    found: Vec<ValuesImage>,
    /// Lists holding images: (path, where), one each.
    lists: Vec<(String, String)>,
    notes: &'a mut Vec<String>,
}

impl Walk<'_> {
    fn node(&mut self, node: &Node, path: &str, in_list: bool) {
        if let Some(items) = node.as_seq() {
            for item in items {
                self.node(item, path, true);
            }
            return;
        }
        let Some(entries) = node.as_map() else {
            return;
        };
        if let Some(image) = self.block(node, path, in_list) {
            self.push(image, path, in_list);
            return;
        }
        for (key, value) in entries {
            // A key a dotted `helmValues:` path cannot spell is not followed.
            let Some(key) = key
                .as_str()
                .filter(|k| !k.is_empty() && !k.contains(['.', '[', ']', '=', ',']))
            else {
                continue;
            };
            let child = join(path, key);
            match value.as_str() {
                Some(text) if key == "image" => {
                    if let Some(reference) = whole_reference(text) {
                        let at = format!("{}:{}", self.file, value.pos);
                        let helm_values = vec![("image", child.clone())];
                        let image = ValuesImage {
                            reference,
                            at,
                            helm_values,
                        };
                        self.push(image, path, in_list);
                    }
                }
                _ => self.node(value, &child, in_list),
            }
        }
    }

    fn push(&mut self, mut image: ValuesImage, path: &str, in_list: bool) {
        if in_list {
            image.helm_values.clear();
            if !self.lists.iter().any(|(p, _)| p == path) {
                self.lists.push((path.to_string(), image.at.clone()));
            }
        }
        self.found.push(image);
    }

    /// A `repository:` block at `path`, when it is one.
    fn block(&mut self, node: &Node, path: &str, in_list: bool) -> Option<ValuesImage> {
        let part = |key: &str| node.get(key).and_then(Node::as_str).map(str::trim);
        // `{image: kserve/kserve-controller, tag: ''}` (KServe's charts): `image:`
        // is the repository when a `tag:` beside it completes it.
        let untagged =
            |r: &&str| !r.contains('@') && !r.rsplit('/').next().unwrap_or(r).contains(':');
        let repo_key = match part("repository") {
            Some(_) => "repository",
            None if node.get("tag").is_some() && part("image").filter(untagged).is_some() => {
                "image"
            }
            // Istio's shape: `{hub: gcr.io/istio-release, name: pilot, tag: 1.29.1}`.
            None if node.get("tag").is_some()
                && part("hub").is_some()
                && part("name").is_some() =>
            {
                "name"
            }
            None => return None,
        };
        let registry_key = if repo_key == "name" {
            "hub"
        } else {
            "registry"
        };
        let repository = part(repo_key).filter(|r| !r.is_empty())?;
        let named = path
            .rsplit('.')
            .next()
            .is_some_and(|k| k.to_ascii_lowercase().contains("image"));
        if !named && part("tag").is_none() && !in_list {
            return None;
        }
        let mut text = match part(registry_key).filter(|r| !r.is_empty()) {
            Some(registry) => format!("{}/{repository}", registry.trim_end_matches('/')),
            None => repository.to_string(),
        };
        let at = format!("{}:{}", self.file, node.get(repo_key).unwrap_or(node).pos);
        let defaulted =
            berth_core::render::empty_default(&self.chart.templates, &join(path, "tag"));
        let other = match defaulted {
            Some(berth_core::render::EmptyDefault::Value(other)) => {
                let value = berth_core::render::lookup(self.root, &other)
                    .and_then(Node::as_str)
                    .filter(|v| !v.is_empty());
                value.map(|v| (other, v.to_string()))
            }
            _ => None,
        };
        let tag = match (
            part("tag").filter(|t| !t.is_empty()),
            other,
            &self.chart.app_version,
        ) {
            (Some(tag), _, _) => Some(tag.to_string()),
            (None, Some((other, value)), _) => {
                self.notes.push(format!(
                    "{at}: no tag: `{other}` (`{value}`), as its templates default it"
                ));
                Some(value)
            }
            (None, None, Some(app)) => {
                self.notes.push(format!("{at}: no tag: the chart's appVersion `{app}` (Chart.yaml), as charts default it"));
                Some(app.clone())
            }
            (None, None, None) => None,
        };
        if let Some(tag) = tag {
            text = format!("{text}:{tag}");
        }
        if let Some(digest) = part("digest").filter(|d| !d.is_empty()) {
            text = format!("{text}@{digest}");
        }
        let reference = Reference::parse(&text).ok()?;
        let key_of = |p: &str| match p {
            "repository" => repo_key.to_string(),
            "registry" => registry_key.to_string(),
            _ => p.to_string(),
        };
        let helm_values = PARTS
            .iter()
            .filter(|p| node.get(&key_of(p)).is_some())
            .map(|p| (*p, join(path, &key_of(p))))
            .collect();
        Some(ValuesImage {
            reference,
            at,
            helm_values,
        })
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// `text` as an image reference when it is clearly one (it names a path or a
/// tag: `nginx` alone could be anything).
fn whole_reference(text: &str) -> Option<Reference> {
    if !text.contains(['/', ':']) || text.contains(['{', '$', ' ']) {
        return None;
    }
    Reference::parse(text).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn found(values: &str) -> (Vec<String>, Vec<String>) {
        let chart = Chart {
            dir: "c".into(),
            name: "c".into(),
            app_version: Some("1.0.0".into()),
            values: Some(values.into()),
            ..Chart::default()
        };
        let mut notes = Vec::new();
        let images = images(&chart, &[], &mut notes)
            .into_iter()
            .map(|i| {
                let paths: Vec<String> = i
                    .helm_values
                    .iter()
                    .map(|(part, path)| format!("{part}={path}"))
                    .collect();
                format!("{} [{}]", i.reference, paths.join(" "))
            })
            .collect();
        (images, notes)
    }

    #[test]
    fn images_in_values_as_charts_write_them() {
        let cases: &[(&str, &[&str])] = &[
            // helm create's shape; an empty tag is the appVersion.
            (
                "image: {repository: ghcr.io/a/web, tag: ''}",
                &["ghcr.io/a/web:1.0.0 [repository=image.repository tag=image.tag]"],
            ),
            // Bitnami's split registry, under a key that names an image.
            (
                "metrics:\n  proxyImage: {registry: docker.io, repository: bitnami/x, tag: '2', digest: ''}",
                &["docker.io/bitnami/x:2 [registry=metrics.proxyImage.registry repository=metrics.proxyImage.repository tag=metrics.proxyImage.tag digest=metrics.proxyImage.digest]"],
            ),
            // A whole reference.
            ("sidecar: {image: ghcr.io/a/s:v2}", &["ghcr.io/a/s:v2 [image=sidecar.image]"]),
            // KServe's: `image:` is the repository when a `tag:` completes it.
            (
                "kserve:\n  controller: {image: kserve/kserve-controller, tag: '', imagePullPolicy: Always}",
                &["docker.io/kserve/kserve-controller:1.0.0 [repository=kserve.controller.image tag=kserve.controller.tag]"],
            ),
            // Istio's hub/name/tag (#46 item 6): the hub is the registry part.
            (
                "pilot:\n  image: {hub: gcr.io/istio-release, name: pilot, tag: 1.29.1}",
                &["gcr.io/istio-release/pilot:1.29.1 [registry=pilot.image.hub repository=pilot.image.name tag=pilot.image.tag]"],
            ),
            // A repository that is no image, a bare name, a template: none.
            ("git: {repository: https://github.com/a/b}\nimage: nginx\nother: {image: '{{ .Values.x }}'}", &[]),
            // In a list: found, with no values path.
            ("containers:\n- {name: a, image: ghcr.io/a/m:v1}", &["ghcr.io/a/m:v1 []"]),
            // A key helmValues cannot spell is not followed.
            ("a.b: {image: ghcr.io/a/d:v1}", &[]),
        ];
        for (values, want) in cases {
            assert_eq!(found(values).0, *want, "{values}");
        }
        let (_, notes) = found(
            "containers:\n- {name: a, image: ghcr.io/a/m:v1}\n- {name: b, image: ghcr.io/a/n:v1}",
        );
        assert_eq!(notes.len(), 1, "one note per list: {notes:?}");
        assert!(notes[0].starts_with("c/values.yaml:2:"), "{notes:?}");
    }

    /// llm-d-router's shape: the images live in a library chart's values, which
    /// the application charts see under their dependency's name (`router.`).
    #[test]
    fn a_library_charts_images_are_set_through_the_charts_that_depend_on_it() {
        let library = Chart {
            dir: "config/charts/routerlib".into(),
            name: "router".into(),
            values: Some(
                "epp:\n  image: {registry: ghcr.io/llm-d, repository: epp, tag: dev}\n".into(),
            ),
            library: true,
            ..Chart::default()
        };
        let app = Chart {
            dir: "config/charts/standalone".into(),
            name: "standalone".into(),
            dependencies: vec![("router".into(), "file://../routerlib".into())],
            ..Chart::default()
        };
        let all = [library.clone(), app];
        let found = images(&library, &all, &mut Vec::new());
        let paths: Vec<&str> = found[0]
            .helm_values
            .iter()
            .map(|(_, p)| p.as_str())
            .collect();
        assert_eq!(
            paths,
            [
                "router.epp.image.registry",
                "router.epp.image.repository",
                "router.epp.image.tag"
            ]
        );
        // A library no chart depends on reaches nothing.
        assert!(images(&library, std::slice::from_ref(&library), &mut Vec::new()).is_empty());
    }

    #[test]
    fn a_chart_name_is_a_release_name() {
        assert_eq!(release("My_Chart"), "my-chart");
        assert_eq!(release("__"), "release");
        assert_eq!(release(&"a".repeat(60)).len(), 53);
    }
}
