//! `berth validate`: every check of `render`, nothing written, and warnings
//! about what is probably a mistake (errors with `--strict`).

use anyhow::{bail, Result};
use berth_core::render::Findings;
use berth_core::{Project, Resolution};

use crate::commands::render::render_all;
use crate::generate;
use crate::settings::Render;

pub fn run(settings: &Render, project: &Project, resolution: &Resolution<'_>) -> Result<()> {
    let mut warnings = Vec::new();
    for (first, second, repository) in project.shared_repositories() {
        warnings.push(format!(
            "{}:{}: components `{}` and `{}` both claim repository `{repository}`; `{}` (the first) gets every image there: give one of them a different `image:` or `match:`",
            project.file, second.image_pos, first.name, second.name, first.name
        ));
    }
    if settings.paths.is_empty() && project.manifests.is_empty() {
        // Nothing to render: the configs and CA bundles are still checked.
        generate::all(project, settings.strict)?;
    } else {
        let rendered = render_all(settings, project, resolution)?;
        let findings = &rendered.findings;
        warnings.extend(unparsed_image_warnings(findings));
        for name in &findings.unmatched_components {
            if let Some(c) = project.component(name) {
                warnings.push(format!(
                    "{}:{}: component `{name}` (`{}`) matches no image in the manifests; check its `image:` and `match:`, or the manifests' image fields (`imagePaths:` for custom resources)",
                    project.file, c.image_pos, c.image
                ));
            }
        }
        for name in &findings.unused_configs {
            let pos = project
                .configs
                .iter()
                .find(|c| &c.name == name)
                .map(|c| c.pos)
                .or_else(|| {
                    project
                        .ca_bundles
                        .iter()
                        .find(|b| &b.name == name)
                        .map(|b| b.pos)
                });
            let at = pos
                .map(|p| format!("{}:{p}: ", project.file))
                .unwrap_or_default();
            warnings.push(format!(
                "{at}`{name}` is referenced by no object in the manifests, so its generated name reaches nothing; refer to `{name}` from a pod spec (or inject it), or remove it"
            ));
        }
    }
    for warning in &warnings {
        say!("warning: {warning}");
    }
    if settings.strict && !warnings.is_empty() {
        bail!(
            "{} warning{} (errors under --strict)",
            warnings.len(),
            if warnings.len() == 1 { "" } else { "s" }
        );
    }
    Ok(())
}

/// One warning per image field that is neither a reference nor a placeholder berth
/// knows: `render` prints them too, since such a value reaches the cluster as written.
pub fn unparsed_image_warnings(findings: &Findings) -> impl Iterator<Item = String> + '_ {
    findings.unparsed_images.iter().map(|(at, value)| {
        let hint = match value.strip_prefix('$') {
            Some(_) => "a placeholder that names no component's variable (`env:`); add the component, or set its `env:` to this variable",
            None => "not an image reference, so no component can match it; fix the value, or render the templating step first",
        };
        let shown: String = value.chars().take(200).collect();
        format!("{at}: image `{shown}` is {hint}")
    })
}
