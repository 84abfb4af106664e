//! Which values file set an image that a warning names in a chart's output. A
//! message about `helm template`'s output points at the template line; the
//! value came from the chart's values.yaml, a `values:` file or `set:`, and the
//! last of them that holds it is what the user edits. This adds it to the
//! finding's place, as in
//! ```text
//! ms/templates/d.yaml:12:18 (Deployment/decode; from prod.values.yaml:4:14 `decode.containers[0].image`)
//! ```

use berth_core::project::HelmChart;
use berth_core::render::Findings;
use berth_core::{Manifest, ManifestSource, Project, Resolution};
use berth_ref::Reference;
use berth_yaml::{Limits, Node, Pos};

/// Adds to each finding about a chart's output where the image came from; a
/// copy berth does not rewrite gets the fix that fits a chart: `helmValues:`.
pub fn attribute(
    project: &Project,
    manifests: &[Manifest],
    resolution: &Resolution<'_>,
    findings: &mut Findings,
) {
    for manifest in manifests {
        let ManifestSource::Helm(chart) = &manifest.source else {
            continue;
        };
        let prefix = format!("{}: ", super::input_name(chart));
        let layers = layers(project, chart, manifest.pos);
        for drift in &mut findings.drifted {
            if drift.at.starts_with(&prefix) {
                if let Some((origin, _)) = origin(&layers, &drift.found) {
                    add(&mut drift.at, &origin);
                }
            }
        }
        for stray in &mut findings.strays {
            if !stray.at.starts_with(&prefix) {
                continue;
            }
            let Some((origin, path)) = origin(&layers, &stray.text) else {
                continue;
            };
            add(&mut stray.at, &origin);
            let Some(image) = resolution.images.get(stray.component) else {
                continue;
            };
            let name = &image.component.name;
            stray.fix = Some(if path.contains('[') {
                format!("the chart takes it from `{path}`, a list entry, which `helmValues:` cannot name (a values layer replaces a list whole): keep berth's answer there by hand, or have the chart read the image from a value outside the list")
            } else if image.component.helm_values.is_empty() {
                format!("let berth set the chart's value: give component `{name}` `helmValues: {{image: {path}}}` in {} (or its `repository:` and `tag:` paths)", project.file)
            } else {
                format!("the chart takes it from `{path}`, which `images.{name}.helmValues` does not name: add it there, or have the chart read the value berth sets")
            });
        }
    }
}

/// `at` (`file:line:column (Kind/name)`) with the value's origin inside its parentheses.
fn add(at: &mut String, origin: &str) {
    *at = match at.strip_suffix(')') {
        Some(head) => format!("{head}; from {origin})"),
        None => format!("{at} (from {origin})"),
    };
}

/// The chart's values sources in the order helm applies them: its own
/// values.yaml (a local directory's), `values:` files, `set:`.
fn layers(project: &Project, chart: &HelmChart, pos: Pos) -> Vec<(String, Node)> {
    let mut files: Vec<(String, String)> = Vec::new();
    if chart.is_local() && project.dir.join(&chart.chart).is_dir() {
        let own = format!("{}/values.yaml", chart.chart.trim_end_matches('/'));
        files.push((own.clone(), own));
    }
    files.extend(
        chart
            .values
            .iter()
            .map(|v| (v.value.clone(), v.value.clone())),
    );
    let mut out = Vec::new();
    for (name, path) in files {
        // A values file that cannot be read or parsed is helm's error to report.
        let Ok(bytes) = crate::fs_source::read_bounded(&project.dir.join(path)) else {
            continue;
        };
        if let Some(node) = first_document(&String::from_utf8_lossy(&bytes)) {
            out.push((name, node));
        }
    }
    if let Some(node) = chart.set.as_deref().and_then(first_document) {
        out.push((format!("{}:{pos} (`set:`)", project.file), node));
    }
    out
}

fn first_document(text: &str) -> Option<Node> {
    berth_yaml::load_all(text, Limits::default())
        .ok()?
        .into_iter()
        .next()
}

/// `FILE:LINE:COLUMN `path`` of the last layer that spells `image` (the whole
/// reference, or its tag under an image's `tag:` key), and the path.
fn origin(layers: &[(String, Node)], image: &str) -> Option<(String, String)> {
    let tag = Reference::parse(image)
        .ok()
        .and_then(|r| r.tag().map(|t| t.to_string()));
    layers.iter().rev().find_map(|(name, node)| {
        let (pos, path) = find(node, "", image, tag.as_deref())?;
        let place = match name.ends_with("(`set:`)") {
            true => format!("{name} `{path}`"),
            false => format!("{name}:{pos} `{path}`"),
        };
        Some((place, path))
    })
}

/// The scalar below `node` that is `image`, else a `tag:` that is its tag in a
/// mapping that looks like an image (a `repository:` beside it, or a path
/// naming an image).
fn find(node: &Node, path: &str, image: &str, tag: Option<&str>) -> Option<(Pos, String)> {
    if let Some(items) = node.as_seq() {
        return items
            .iter()
            .enumerate()
            .find_map(|(i, item)| find(item, &format!("{path}[{i}]"), image, tag));
    }
    let entries = node.as_map()?;
    for (key, value) in entries {
        let key = key.as_str().unwrap_or_default();
        let child = berth_core::render::child_path(path, key);
        if value.as_str() == Some(image) {
            return Some((value.pos, child));
        }
        let image_like =
            node.get("repository").is_some() || path.to_ascii_lowercase().contains("image");
        if key == "tag" && image_like && tag.is_some() && value.as_str() == tag {
            return Some((value.pos, child));
        }
        if let Some(found) = find(value, &child, image, tag) {
            return Some(found);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(name: &str, text: &str) -> (String, Node) {
        (
            name.to_string(),
            first_document(text).unwrap_or_else(|| Node::map(Pos::default())),
        )
    }

    #[test]
    fn the_last_layer_that_spells_an_image_is_named() {
        let layers = [
            layer(
                "c/values.yaml",
                "decode:\n  containers:\n  - image: ghcr.io/a/m:v1\n",
            ),
            layer(
                "prod.yaml",
                "decode:\n  containers:\n  - {name: m, image: ghcr.io/a/m:v2}\n",
            ),
            layer("tag.yaml", "epp:\n  image:\n    tag: v9\n"),
        ];
        let cases = [
            (
                "ghcr.io/a/m:v1",
                Some("c/values.yaml:3:12 `decode.containers[0].image`"),
            ),
            (
                "ghcr.io/a/m:v2",
                Some("prod.yaml:3:22 `decode.containers[0].image`"),
            ),
            ("ghcr.io/a/epp:v9", Some("tag.yaml:3:10 `epp.image.tag`")),
            ("ghcr.io/a/other:v3", None),
        ];
        for (image, want) in cases {
            assert_eq!(
                origin(&layers, image).map(|(o, _)| o).as_deref(),
                want,
                "{image}"
            );
        }
    }
}
