//! `berth validate`: every check of `render`, nothing written.

use anyhow::{bail, Result};
use berth_core::{Project, Resolution};

use crate::cli::RenderArgs;
use crate::commands::render::render_all;
use crate::generate;

pub fn run(args: &RenderArgs, project: &Project, resolution: &Resolution<'_>) -> Result<()> {
    if args.out.is_some() {
        bail!("--out does not apply to `berth validate`, which writes nothing; use `berth render --out DIR`");
    }
    if args.paths.is_empty() && project.manifests.is_empty() {
        // Nothing to render: the configs and CA bundles are still checked.
        return generate::all(project, args.strict).map(|_| ());
    }
    render_all(args, project, resolution).map(|_| ())
}
