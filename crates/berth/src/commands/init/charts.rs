//! Charts that do not render with their own values: a chart that `required`s
//! or `fail`s on a value only its user can give (llm-d-router's gateway chart:
//! `.Values.router.modelServers.matchLabels is required`) would be a profile
//! that fails `berth validate`, so init renders each first — through berth's
//! one helm runner — and leaves those out of the profiles, saying why. Their
//! images are still found in their values. What the others render is kept:
//! an image a chart joins from two values (a registry prefix and a name) is
//! read from it.

use std::path::Path;

use berth_init::Facts;

/// `(chart directory, why)` for each chart helm refuses to render with its
/// own values, and `(chart directory, output)` for each that renders. A chart
/// whose dependencies are not built is not judged (init names the command that
/// builds them), nor is anything when helm is missing.
pub(super) fn render(root: &Path, facts: &Facts) -> Rendered {
    let mut out = Vec::new();
    let mut outputs = Vec::new();
    for chart in facts.charts.iter().filter(|c| !c.library) {
        if !super::missing_dependencies(root, chart).is_empty() {
            continue;
        }
        let text = format!(
            "name: init\nmanifests:\n- helm: {{chart: '{}', release: init}}\n",
            chart.dir.replace('\'', "''")
        );
        // A directory berth.yaml cannot name as a chart is left to validate.
        let Ok(project) = berth_core::project::parse("berth.yaml", root.to_path_buf(), &text)
        else {
            continue;
        };
        let Some(berth_core::project::ManifestSource::Helm(helm)) =
            project.manifests.first().map(|m| &m.source)
        else {
            continue;
        };
        let given = crate::helm::Given::default();
        let e = match crate::helm::template(&project, helm, &chart.dir, given) {
            Ok(inputs) => {
                let text = inputs.into_iter().map(|input| input.text).collect();
                outputs.push((chart.dir.clone(), text));
                continue;
            }
            Err(e) => e,
        };
        let message = e.to_string();
        // Only the chart's own refusal (`required`, `fail`): helm missing or
        // a runner failure says nothing about the chart.
        let Some((_, why)) = message.split_once("execution error at ") else {
            continue;
        };
        // `(chart/templates/x.yaml:2:3): .Values.a is required`
        let why = why.lines().next().unwrap_or(why).trim();
        let why = match why.strip_prefix('(').and_then(|w| w.split_once("): ")) {
            Some((at, what)) => format!("`{what}`, at {at}"),
            None => why.to_string(),
        };
        out.push((chart.dir.clone(), berth_io::shown(&why)));
    }
    (out, outputs)
}

/// What [`render`] found: the charts helm refused, and the others' output.
pub(super) type Rendered = (Vec<(String, String)>, Vec<(String, String)>);
