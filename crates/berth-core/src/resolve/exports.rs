//! The variables `berth env` hands its command: every variable berth.yaml names
//! that the resolution can answer, set to that answer. A Makefile that builds
//! `$(IMG):$(IMG_VERSION)` from a component's `repositoryEnv:` and `tagEnv:`
//! then builds what `berth render` deploys, and a `berth` the command runs
//! resolves the same images as the one that started it (the round trip the
//! tests check).

use super::{Catalog, Origin, Resolution, ResolvedImage};
use crate::project::DEFAULT_VARIANT;

impl Resolution<'_> {
    /// What `berth env` sets, in order: [`Resolution::variables`] (each
    /// component's `<NAME>_IMAGE`, then its variants'), then per component its
    /// `variantEnv` (the member a flag or variable selected, for a family), `tagEnv` (the family's
    /// tag) and `repositoryEnv` (the selected image's repository), then
    /// `tag.env` when every component that follows it resolved one tag, and
    /// `registry.env`: `registry_flag` (`--registry`) when given, else the
    /// prefix every component that follows it resolved, when it is one.
    ///
    /// Left unset, because no one value is berth's: the tag of an image given
    /// by digest alone; a family's tag while a full override names its
    /// selected member (the members' tag is then not that image's); `tag.env`
    /// when its components resolved different tags, and `registry.env` when
    /// they resolved different prefixes.
    pub fn command_variables(
        &self,
        catalog: &Catalog<'_>,
        registry_flag: Option<&str>,
    ) -> Vec<(String, String)> {
        let mut out = self.variables();
        for image in &self.images {
            let component = image.component;
            // A default selection is left to the command: a `berth render
            // --profile` it runs may select another member.
            if let Some(selection) = image.variant.as_ref().filter(|s| s.by.is_explicit()) {
                out.push((component.variant_env.clone(), selection.name.clone()));
            }
            if let Some(tag) = family_tag(image) {
                out.push((component.tag_env.clone(), tag));
            }
            if let Some(var) = &component.repository_env {
                let repository = image.reference.repository().to_string();
                out.push((var.clone(), repository));
            }
        }
        if let Some(var) = catalog.tag_env {
            if let Some(tag) = self.one_shared_tag() {
                out.push((var.to_string(), tag));
            }
        }
        if let Some(var) = catalog.registry_env {
            let prefix = registry_flag.map(str::to_string);
            if let Some(prefix) = prefix.or_else(|| self.one_registry()) {
                out.push((var.to_string(), prefix));
            }
        }
        // A `Berth`'s components have no variables (`Component::from_spec`).
        out.retain(|(name, _)| !name.is_empty());
        let handed = self.handed_variable(&out);
        out.extend(handed);
        out
    }

    /// The tag every component that follows `tag.env` resolved, when it is one.
    fn one_shared_tag(&self) -> Option<String> {
        let mut tags = (self.images.iter())
            .filter(|image| image.component.follows_tag)
            .map(family_tag);
        let first = tags.next()??;
        tags.all(|tag| tag.as_deref() == Some(first.as_str()))
            .then_some(first)
    }

    /// The registry prefix (all but an image's last path component) of every
    /// component that follows `registry.env`, when it is one.
    fn one_registry(&self) -> Option<String> {
        let mut prefixes = (self.images.iter())
            .filter(|image| image.component.follows_registry)
            .map(|image| {
                let repository = image.reference.repository().to_string();
                repository
                    .rsplit_once('/')
                    .map(|(prefix, _)| prefix.to_string())
            });
        let first = prefixes.next()??;
        prefixes
            .all(|prefix| prefix.as_deref() == Some(first.as_str()))
            .then_some(first)
    }
}

/// The tag a component's tag variable gives: a family's is its default member's
/// (members with a suffix or a tag of their own derive theirs from it).
fn family_tag(image: &ResolvedImage<'_>) -> Option<String> {
    if image.variant.is_some() && fully_overridden(image) {
        return None;
    }
    let reference = match image.member(DEFAULT_VARIANT) {
        Some(member) => &member.reference,
        None => &image.reference,
    };
    reference.tag().map(|tag| tag.to_string())
}

/// Whether a full override (`--image`, `env:`) gave the image.
fn fully_overridden(image: &ResolvedImage<'_>) -> bool {
    matches!(image.origins.name, Origin::Image(_) | Origin::ImageEnv(_))
}
