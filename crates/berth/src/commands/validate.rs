//! `berth validate`: every check of `render`, nothing written.

use anyhow::Result;
use berth_core::{Project, Resolution};

use crate::commands::render::render_all;
use crate::generate;
use crate::settings::Render;

pub fn run(settings: &Render, project: &Project, resolution: &Resolution<'_>) -> Result<()> {
    if settings.paths.is_empty() && project.manifests.is_empty() {
        // Nothing to render: the configs and CA bundles are still checked.
        return generate::all(project, settings.strict).map(|_| ());
    }
    render_all(settings, project, resolution).map(|_| ())
}
