//! `[lock-stale]`: berth.lock pins a tag berth.yaml no longer names — a tag
//! moved by hand or by a bot that did not pin again (NVIDIA/gpu-operator#2761:
//! the tag was bumped and the digest beside it kept, so the old image ran).

use berth_core::lock::{Lock, LOCK_FILE};
use berth_core::{Code, Place, Resolution, Warning};
use berth_ref::Reference;

/// One warning per pin of `lock` whose image is neither what `resolution`
/// gives its component (or family member) nor berth.yaml's default for it.
pub fn stale_pins(lock: &Lock, resolution: &Resolution<'_>) -> Vec<Warning> {
    let same =
        |a: &Reference, b: &Reference| a.repository() == b.repository() && a.tag() == b.tag();
    let mut out = Vec::new();
    for entry in &lock.entries {
        let Some(image) = resolution
            .images
            .iter()
            .find(|i| i.component.name == entry.component)
        else {
            out.push(Warning::at(Code::LockStale, Place::file(LOCK_FILE).about(entry.component.as_str()), format_args!(
                "{LOCK_FILE} pins `{}` for component `{}`, which berth.yaml no longer has; run `berth pin` to write the lock again",
                entry.image, entry.component
            )));
            continue;
        };
        let c = image.component;
        let (resolved, default) = match &entry.variant {
            Some(variant) => (
                image.member(variant).map(|m| &m.reference),
                c.variant(variant).map(|v| &v.image),
            ),
            None => (Some(&image.reference), Some(&c.image)),
        };
        // The selected member is pinned without `variant:`, and which member is selected
        // depends on the profile or variable `berth pin` ran with: any member's image is
        // one berth.yaml names.
        let any_member = entry.variant.is_none()
            && image
                .variants
                .iter()
                .any(|m| same(&m.reference, &entry.image));
        let named = resolved.is_some_and(|r| same(r, &entry.image))
            || default.is_some_and(|d| same(d, &entry.image))
            || any_member;
        if !named {
            let now = resolved.map_or_else(
                || "nothing".to_string(),
                |r| format!("`{}`", r.without_digest()),
            );
            let what = match &entry.variant {
                Some(variant) => format!("component `{}` variant `{variant}`", c.name),
                None => format!("component `{}`", c.name),
            };
            out.push(Warning::at(Code::LockStale, Place::file(LOCK_FILE).about(c.name.as_str()), format_args!(
                "{LOCK_FILE} pins `{}` for {what}, but berth.yaml now gives it {now}: `--locked` refuses it, and a tool that reads the lock keeps running the old image; run `berth pin` (`berth update` moves both together)",
                entry.image
            )));
        }
    }
    out
}
