//! `berth render`: manifests in, manifests out.

use std::path::Path;

use anyhow::Result;
use berth_core::render::{ObjectInfo, Rendered};
use berth_core::{Project, Resolution};

use crate::output::print;
use crate::pipeline;
use crate::settings::RenderCommand;

pub fn run(command: &RenderCommand, project: &Project, resolution: &Resolution<'_>) -> Result<()> {
    let rendered = pipeline::render(&command.render, project, resolution)?;
    pipeline::print_warnings(project, rendered.warnings);
    match &command.out {
        None => print(&rendered.rendered.yaml),
        Some(dir) => write_dir(dir, &rendered.rendered),
    }
}

/// One file per object, in stream order, through the one output-directory writer.
fn write_dir(dir: &Path, rendered: &Rendered) -> Result<()> {
    let mut used = std::collections::HashSet::new();
    let mut files: Vec<(String, &[u8])> = Vec::new();
    for (i, object) in rendered.objects.iter().enumerate() {
        let mut name = file_name(i, object);
        while !used.insert(name.clone()) {
            name = format!("{}-{i}.yaml", name.trim_end_matches(".yaml"));
        }
        files.push((name, rendered.yaml[object.range.clone()].as_bytes()));
    }
    crate::out_dir::replace(dir, &RENDER_OUT, &files)
}

/// `berth render --out`'s directory: marked `.berth-render`.
const RENDER_OUT: crate::out_dir::Kind = crate::out_dir::Kind {
    command: "berth render",
    marker: ".berth-render",
    takes: "a directory (one file per object); to get one file, redirect stdout",
};

/// `0001-deployment-web.yaml`, `0002-service-ns-web.yaml`: stream order kept,
/// so `kubectl apply -f DIR` applies in the same order.
fn file_name(index: usize, object: &ObjectInfo) -> String {
    let mut parts = vec![
        format!("{:04}", index + 1),
        object.kind.to_ascii_lowercase(),
    ];
    parts.extend(object.namespace.iter().cloned());
    parts.extend(object.name.iter().cloned());
    let joined = parts.join("-");
    let safe: String = joined
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.yaml")
}
