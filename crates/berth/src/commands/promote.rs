//! `berth promote --to PREFIX`: copy every component image, digests preserved.

use anyhow::{anyhow, Result};
use berth_core::Resolution;
use berth_ref::{Reference, RegistryPrefix};

use crate::output::print;
use crate::settings::Promote;

/// (component, source, destination) for every image.
fn plan(
    args: &Promote,
    resolution: &Resolution<'_>,
) -> Result<Vec<(String, Reference, Reference)>> {
    let prefix = RegistryPrefix::parse(&args.to).map_err(|e| anyhow!("--to: {e}"))?;
    // Every member of a family too.
    (resolution.every_image().into_iter())
        .map(|(image, source)| {
            let tag = source.tag().ok_or_else(|| {
                anyhow!("component `{}`: `{source}` has no tag to promote under; give it one (`--tag {}=TAG`)", image.component.name, image.component.name)
            })?;
            let target = source.without_digest().with_prefix(&prefix).map_err(|e| anyhow!("--to {}: {e}", args.to))?.with_tag(tag.clone());
            Ok((image.component.name.clone(), source.clone(), target))
        })
        .collect()
}

pub fn run(args: &Promote, resolution: &Resolution<'_>) -> Result<()> {
    let copies = plan(args, resolution)?;
    if args.dry_run {
        let text: String = copies
            .iter()
            .map(|(c, s, t)| format!("{c}: {s} -> {t}\n"))
            .collect();
        return print(&text);
    }
    crate::copy::copy_all(
        &args.registry,
        &copies,
        args.signatures,
        "promoted",
        &args.to,
    )
}
