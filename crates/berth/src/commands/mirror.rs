//! `berth mirror --to PREFIX --out DIR`: copy every image to a mirror (as
//! `promote` copies, the path kept below the prefix) and write the
//! configuration that makes clusters pull from it ([`berth_mirror`]).

use anyhow::{anyhow, Result};
use berth_core::{Project, Resolution};

use crate::settings::Mirror;

/// `berth mirror --out`'s directory: marked `.berth-mirror`.
const MIRROR_OUT: crate::out_dir::Kind = crate::out_dir::Kind {
    command: "berth mirror",
    marker: ".berth-mirror",
    takes: "a directory (one file per configuration)",
};

pub fn run(args: &Mirror, project: &Project, resolution: &Resolution<'_>) -> Result<()> {
    let entries =
        berth_mirror::plan(resolution, &args.to, args.project_only).map_err(|e| anyhow!("{e}"))?;
    if entries.is_empty() {
        anyhow::bail!(
            "nothing to mirror: {} has no components{}",
            project.file,
            if args.project_only {
                " of the project's own (`--project-only` leaves `registry: false` ones out)"
            } else {
                ""
            }
        );
    }
    let options = berth_mirror::Options {
        project: project.name.clone(),
        ..args.options.clone()
    };
    let (files, warnings) = berth_mirror::files(&entries, &options);
    crate::pipeline::print_warnings(project, warnings);
    if !args.no_copy {
        // Tagged images are pushed by tag (the digest is the same bytes'); a
        // digest-only one by its digest.
        let copies: Vec<_> = (entries.iter())
            .flat_map(|e| {
                (e.copies().into_iter())
                    .map(|(source, target)| (e.component.clone(), source, target))
            })
            .collect();
        crate::copy::copy_all(
            &args.registry,
            &copies,
            args.signatures,
            "mirrored",
            args.to.as_str(),
        )?;
    }
    let bytes: Vec<(String, &[u8])> = files
        .iter()
        .map(|(path, text)| (path.clone(), text.as_bytes()))
        .collect();
    crate::out_dir::replace(&args.out, &MIRROR_OUT, &bytes)?;
    say!(
        "wrote {} file(s) to {}: {}",
        files.len(),
        args.out.display(),
        files.keys().cloned().collect::<Vec<_>>().join(", ")
    );
    Ok(())
}
