//! Pinning a resolution's images to digests: what `berth pin` writes to
//! berth.lock, `render --pin` uses in memory, and `berth update` re-pins for the
//! components it moved — one path for all three.

use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use berth_core::lock::{Lock, LockEntry};
use berth_core::Resolution;
use berth_registry::{Pin, Pinned, Platform, Registry, RegistryError};

use crate::settings::Registry as RegistrySettings;

/// Resolves every image of the resolution to a digest; the lock is in memory.
/// `registry` is the client the caller verifies signatures with too, so the
/// registries' `/v2/` checks and tokens are paid once.
pub fn pin(
    registry: &Arc<Registry>,
    settings: &RegistrySettings,
    resolution: &Resolution<'_>,
) -> Result<Lock> {
    pin_components(registry, settings, resolution, &|_| true)
}

/// Pins each reference as asked, `settings.concurrency` at a time; one result each,
/// in order.
pub fn pin_each(
    registry: &Arc<Registry>,
    settings: &RegistrySettings,
    asked: Vec<(berth_ref::Reference, Pin)>,
) -> Result<Vec<Result<Pinned, RegistryError>>> {
    let pinning = berth_registry::pin_all(Arc::clone(registry), asked, settings.concurrency);
    Ok(crate::runtime::get()?.block_on(pinning))
}

/// [`pin`] for the components `wanted` accepts (`berth update` re-pins those it moved).
pub fn pin_components(
    registry: &Arc<Registry>,
    settings: &RegistrySettings,
    resolution: &Resolution<'_>,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Lock> {
    let platform: Option<Platform> = settings.platform.clone();
    // Every member of a family is pinned, each on its own entry.
    let mut chosen = pinned_images(resolution);
    chosen.retain(|w| wanted(w.component));
    let wanted = chosen;
    // A reference that already names a digest is pinned as it is.
    let to_fetch: Vec<_> = (wanted.iter())
        .filter(|w| w.reference.digest().is_none())
        .map(|w| {
            let pin = match (&platform, &w.platform) {
                (Some(platform), _) => Pin::Platform(platform.clone()),
                (None, Some(needed)) => Pin::Providing(needed.clone()),
                (None, None) => Pin::Top,
            };
            (w.reference.clone(), pin)
        })
        .collect();
    let results = pin_each(registry, settings, to_fetch)?;
    let mut fetched = results.into_iter();
    let mut entries = Vec::new();
    let mut failures = Vec::new();
    for w in wanted {
        let digest = match w.reference.digest() {
            Some(digest) => digest.clone(),
            None => match fetched.next() {
                Some(Ok(pinned)) => pinned.digest,
                Some(Err(e)) => {
                    failures.push(match &w.member {
                        Some(member) => {
                            format!("component `{}` variant `{member}`: {e}", w.component)
                        }
                        None => e.to_string(),
                    });
                    continue;
                }
                None => bail!("internal error: a pin result is missing"),
            },
        };
        entries.push(LockEntry {
            component: w.component.to_string(),
            variant: w.variant,
            image: w.reference.without_digest(),
            digest,
            platform: platform.as_ref().map(|p| p.to_string()),
            verified: None,
        });
    }
    match failures.len() {
        0 => Ok(Lock {
            entries,
            charts: Vec::new(),
        }),
        1 => Err(anyhow!("{}; berth.lock is unchanged", failures[0])),
        n => Err(anyhow!(
            "{n} images could not be pinned; berth.lock is unchanged:\n  {}",
            failures.join("\n  ")
        )),
    }
}

/// One image `berth pin` pins.
struct Wanted<'r> {
    component: &'r str,
    /// The lock entry's `variant:` (`None` for the component's resolved image).
    variant: Option<String>,
    /// The family member it is, for messages.
    member: Option<String>,
    reference: berth_ref::Reference,
    /// The member's `platform:`, which its image must provide.
    platform: Option<Platform>,
}

/// What `berth pin` pins: each component's resolved image, then each member of
/// a family that is not the selected one (which the first entry pins).
fn pinned_images<'r>(resolution: &'r Resolution<'_>) -> Vec<Wanted<'r>> {
    let platform_of = |image: &berth_core::resolve::ResolvedImage<'_>, member: &str| {
        let variant = image.component.variant(member)?;
        let text = variant.platform.as_deref()?;
        // The loader checked the form (`os/arch[/variant]`).
        text.parse::<Platform>().ok()
    };
    let mut out = Vec::new();
    for image in &resolution.images {
        let component = image.component.name.as_str();
        let selected = image.variant.as_ref().map(|s| s.name.as_str());
        out.push(Wanted {
            component,
            variant: None,
            member: selected
                .filter(|_| !image.component.variants.is_empty())
                .map(str::to_string),
            reference: image.reference.clone(),
            platform: selected.and_then(|s| platform_of(image, s)),
        });
        for member in image
            .variants
            .iter()
            .filter(|m| Some(m.name.as_str()) != selected)
        {
            out.push(Wanted {
                component,
                variant: Some(member.name.clone()),
                member: Some(member.name.clone()),
                reference: member.reference.clone(),
                platform: platform_of(image, &member.name),
            });
        }
    }
    out
}

/// Through berth-io's one writer: a new temporary beside berth.lock, then a
/// rename; never through a link out of the project.
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    berth_io::write_atomic(dir, path, text.as_bytes(), berth_io::WriteMode::Replace)
        .map_err(|e| anyhow!("{e}"))
}
