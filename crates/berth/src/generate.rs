//! Builds every generated object of the project: configs, then CA bundles.

use anyhow::Result;
use berth_core::configs::{self, ca, Generated};
use berth_core::gitops::Engine;
use berth_core::Project;

use crate::fs_source::Fs;

/// Generated objects in file order; CA warnings go to stderr (errors with `strict`).
/// For a GitOps engine they carry its never-prune annotations and berth's labels.
pub fn all(project: &Project, strict: bool, gitops: Option<Engine>) -> Result<Vec<Generated>> {
    let mut generated = configs::generate_all(project, &Fs { root: &project.dir })?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    for spec in &project.ca_bundles {
        let bundle = ca::build(project, spec, &Fs { root: &project.dir }, now, strict)?;
        for warning in &bundle.warnings {
            say!("warning: {warning}");
        }
        generated.push(bundle.generated);
    }
    if let Some(engine) = gitops {
        berth_core::gitops::stamp(&mut generated, engine, &project.name);
    }
    Ok(generated)
}
