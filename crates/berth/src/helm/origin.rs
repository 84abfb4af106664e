//! Which values file set an image that a warning names in a chart's output. A
//! message about `helm template`'s output points at the template line; the
//! value came from the chart's values.yaml, a `values:` file or `set:`, and the
//! last of them that holds it is what the user edits. This adds it to the
//! finding's place, as in
//! ```text
//! ms/templates/d.yaml:12:18 (Deployment/decode; from prod.values.yaml:4:14 `decode.containers[0].image`)
//! ```

use berth_core::project::HelmChart;
use berth_core::render::{ChartValues, Findings};
use berth_core::{Project, Resolution};

/// Adds to each finding about a chart's output where the image came from; a
/// copy berth does not rewrite gets the fix that fits a chart: `helmValues:`.
/// The chart's layers are those [`super::local::charts`] read once for every judgement.
pub fn attribute(
    project: &Project,
    charts: &[(&HelmChart, ChartValues)],
    resolution: &Resolution<'_>,
    findings: &mut Findings,
) {
    for (chart, values) in charts {
        let output = super::output(chart);
        for drift in &mut findings.drifted {
            if drift.at.is_in(&output) {
                if let Some((origin, _)) = values.origin(&drift.found) {
                    drift.at.via.push(origin);
                }
            }
        }
        for stray in &mut findings.strays {
            if !stray.at.is_in(&output) {
                continue;
            }
            let Some((origin, path)) = values.origin(&stray.text) else {
                continue;
            };
            stray.at.via.push(origin);
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

#[cfg(test)]
mod tests {
    use super::*;
    use berth_yaml::{Limits, Node, Pos};

    fn layer(name: &str, text: &str) -> (berth_core::render::Layer, Node) {
        let node = berth_yaml::load_all(text, Limits::default())
            .ok()
            .and_then(|d| d.into_iter().next());
        (
            name.into(),
            node.unwrap_or_else(|| Node::map(Pos::default())),
        )
    }

    #[test]
    fn the_last_layer_that_spells_an_image_is_named() {
        let values = ChartValues {
            own: Some(layer(
                "c/values.yaml",
                "decode:\n  containers:\n  - image: ghcr.io/a/m:v1\n",
            )),
            given: vec![
                layer(
                    "prod.yaml",
                    "decode:\n  containers:\n  - {name: m, image: ghcr.io/a/m:v2}\n",
                ),
                layer("tag.yaml", "epp:\n  image:\n    tag: v9\n"),
            ],
            ..ChartValues::default()
        };
        let cases = [
            (
                "ghcr.io/a/m:v1",
                Some("from c/values.yaml:3:12 `decode.containers[0].image`"),
            ),
            (
                "ghcr.io/a/m:v2",
                Some("from prod.yaml:3:22 `decode.containers[0].image`"),
            ),
            (
                "ghcr.io/a/epp:v9",
                Some("from tag.yaml:3:10 `epp.image.tag`"),
            ),
            ("ghcr.io/a/other:v3", None),
        ];
        for (image, want) in cases {
            assert_eq!(
                values.origin(image).map(|(o, _)| o.to_string()).as_deref(),
                want,
                "{image}"
            );
        }
    }
}
