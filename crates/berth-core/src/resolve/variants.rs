//! Variant families: which member of a component's family is selected (highest
//! first: `--variant`, `<NAME>_VARIANT`, the profile's `variants:`, the default),
//! and every member's image moved by the component's overrides as the default
//! image is — the registry prefix and the family tag move them all, a full or
//! repository override names the selected member's image, and a member with a
//! tag of its own keeps it.

use std::fmt;

use berth_ref::Reference;

use super::{Base, Given, Origin, Origins, Partial, ResolveError, ResolvedImage, Var};
use crate::project::{unknown_variant, Component, Variant, DEFAULT_VARIANT};

/// What selected a component's variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectedBy {
    /// The caller's override (`--variant NAME=VARIANT`).
    Flag(Given),
    /// The component's variant variable (`variantEnv:`, default `<NAME>_VARIANT`).
    Variable(Var),
    /// The profile's `variants:`.
    Profile {
        /// The profile.
        name: String,
        /// Where its entry is written (`berth.yaml:14:7`).
        at: String,
    },
    /// Nothing: the component's own `image:`.
    Default,
}

impl SelectedBy {
    /// Whether anything chose the variant (a container running another member
    /// then contradicts it).
    pub fn is_explicit(&self) -> bool {
        !matches!(self, SelectedBy::Default)
    }
}

/// A component's selected variant, and what selected it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The variant's name (`default` for the component's own `image:`).
    pub name: String,
    /// What selected it.
    pub by: SelectedBy,
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.by {
            SelectedBy::Flag(given) => write!(f, "`{}`", given.with(&self.name)),
            SelectedBy::Variable(var) => {
                write!(f, "`{}={}` ({})", var.name, self.name, var.source_text())
            }
            SelectedBy::Profile { name, at } => write!(f, "profile `{name}` ({at})"),
            SelectedBy::Default => write!(f, "the default (`{}`)", self.name),
        }
    }
}

/// One member of a family, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedVariant {
    /// Its name (`default` for the component's own `image:`).
    pub name: String,
    /// Its image, moved by the registry prefix and the family tag.
    pub reference: Reference,
    /// Where each part came from.
    pub origins: Origins,
    /// An override that did not reach it, and why.
    pub ignored: Option<String>,
    /// When a full or repository override is set: the member as it is when it is
    /// the one selected (those overrides name the selected member's image), or
    /// why it cannot be (the overrides disagree for this member alone: an error
    /// only if a profile selects it).
    pub when_selected: Option<Result<Box<ResolvedVariant>, ResolveError>>,
}

impl ResolvedVariant {
    pub(super) fn new(name: &str, resolved: super::ResolvedImage<'_>, ignored: &[String]) -> Self {
        let ignored: Vec<String> = ignored.iter().cloned().chain(resolved.ignored).collect();
        ResolvedVariant {
            name: name.to_string(),
            reference: resolved.reference,
            origins: resolved.origins,
            ignored: (!ignored.is_empty()).then(|| ignored.join("; ")),
            when_selected: None,
        }
    }

    /// Its image in `image`'s resolution: the selected member's is `image.reference`.
    fn as_selected_if<'a>(
        &'a self,
        image: &'a super::ResolvedImage<'_>,
        name: &str,
    ) -> &'a Reference {
        match &image.variant {
            Some(selection) if selection.name == name => &image.reference,
            _ => &self.reference,
        }
    }

    /// The member as it is when selected, or why the overrides cannot select it.
    pub fn as_selected(&self) -> Result<&ResolvedVariant, &ResolveError> {
        match &self.when_selected {
            Some(Ok(member)) => Ok(member),
            Some(Err(error)) => Err(error),
            None => Ok(self),
        }
    }
}

impl<'p> super::Resolution<'p> {
    /// The variables `berth images --output env` prints and `berth env` sets, in
    /// order: each component's `<NAME>_IMAGE` (a family's selected member), then
    /// each of its variants' `<NAME>_<VARIANT>_IMAGE`.
    pub fn variables(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for image in &self.images {
            out.push((image.component.env.clone(), image.reference.to_string()));
            for variant in &image.component.variants {
                if let Some(member) = image.member(&variant.name) {
                    let reference = member.as_selected_if(image, &variant.name);
                    out.push((
                        variant.variable(&image.component.name),
                        reference.to_string(),
                    ));
                }
            }
        }
        out
    }

    /// Every image the project runs, with its component, in file order: each
    /// component's resolved image, then its family's other members (promote,
    /// mirror, `--output list`; a `sameAs` copy is the caller's to merge).
    pub fn every_image(&self) -> Vec<(&super::ResolvedImage<'p>, &Reference)> {
        let mut out = Vec::new();
        for image in &self.images {
            out.push((image, &image.reference));
            let selected = image.variant.as_ref().map(|s| s.name.as_str());
            for member in &image.variants {
                if Some(member.name.as_str()) != selected {
                    out.push((image, &member.reference));
                }
            }
        }
        out
    }

    /// The resolution a render of `profile` uses: a family no flag or variable
    /// selected runs the member the profile's `variants:` names. `file` names
    /// berth.yaml in what the selection says.
    pub fn for_profile(
        &self,
        profile: Option<&crate::project::Profile>,
        file: &str,
    ) -> Result<std::borrow::Cow<'_, super::Resolution<'p>>, ResolveError> {
        use std::borrow::Cow;
        let Some(profile) = profile.filter(|p| !p.variants.is_empty()) else {
            return Ok(Cow::Borrowed(self));
        };
        let mut out = self.clone();
        for image in &mut out.images {
            let explicit = image.variant.as_ref().is_some_and(|s| s.by.is_explicit());
            let entry = profile
                .variants
                .iter()
                .find(|(c, _, _)| *c == image.component.name);
            let (Some((_, name, pos)), false) = (entry, explicit) else {
                continue;
            };
            let Some(member) = image.member(name) else {
                continue; // the loader refused a name that is not a member
            };
            let at = format!("{file}:{pos}");
            let member = (member.as_selected())
                .map_err(|error| ResolveError::ProfileSelection {
                    profile: profile.name.clone(),
                    at: at.clone(),
                    variant: name.clone(),
                    source: Box::new(error.clone()),
                })?
                .clone();
            image.reference = member.reference;
            image.origins = member.origins;
            image.ignored = member.ignored;
            image.variant = Some(Selection {
                name: name.clone(),
                by: SelectedBy::Profile {
                    name: profile.name.clone(),
                    at,
                },
            });
        }
        Ok(Cow::Owned(out))
    }
}

/// A family: every member resolved with the registry and the family tag, the
/// selected one with the full and repository overrides too. `handed`: the
/// members whose image the `berth env` that runs this berth handed, which is
/// their base ([`super::handed`]).
pub(super) fn resolve_family<'p>(
    file: &str,
    component: &'p Component,
    default: Base,
    given: Partial<'_>,
    selection: Option<Selection>,
    handed: Vec<(String, Base)>,
) -> Result<ResolvedImage<'p>, ResolveError> {
    let selected = selection
        .as_ref()
        .map_or(crate::project::DEFAULT_VARIANT, |s| s.name.as_str());
    let mut ignored = Vec::new();
    let mut members = Vec::new();
    let file: std::sync::Arc<str> = file.into();
    let names = std::iter::once(None).chain(component.variants.iter().map(Some));
    for variant in names {
        let name = variant.map_or(crate::project::DEFAULT_VARIANT, |v| v.name.as_str());
        let mut not_applied = Vec::new();
        let (start, tag) = match variant {
            None => (default.clone(), given.tag.clone()),
            Some(v) => (
                (handed.iter().find(|(member, _)| *member == v.name))
                    .map(|(_, start)| start.clone())
                    .unwrap_or_else(|| base(&file, component, v, &default)),
                tag_for(v, given.tag.clone(), &mut not_applied),
            ),
        };
        let plain = Partial {
            full: None,
            tag: tag.clone(),
            repository: None,
            registry: given.registry,
        };
        // The full and repository overrides name the selected member's image: a
        // profile may select another one later (`Resolution::for_profile`).
        let overridden = given.full.is_some() || given.repository.is_some();
        let (member, when_selected) = if overridden {
            let member = super::resolve_one(component, start.clone(), plain)?;
            let partial = Partial {
                full: given.full.clone(),
                tag,
                repository: given.repository.clone(),
                registry: given.registry,
            };
            // Overrides that agree for the selected member may disagree for
            // another (a tag suffix): an error only if a profile selects it.
            let when_selected = match super::resolve_one(component, start, partial) {
                Ok(resolved) => Ok(Box::new(ResolvedVariant::new(name, resolved, &not_applied))),
                Err(error) if name == selected => return Err(error),
                Err(error) => Err(error),
            };
            (member, Some(when_selected))
        } else {
            (super::resolve_one(component, start, plain)?, None)
        };
        if name == selected {
            ignored.extend(not_applied.iter().cloned());
        }
        let mut member = ResolvedVariant::new(name, member, &not_applied);
        member.when_selected = when_selected;
        members.push(member);
    }
    let chosen = (members.iter().find(|m| m.name == selected))
        .map(|m| m.as_selected().map_err(Clone::clone))
        .transpose()?
        .cloned();
    // `select` refused a name that is not a member.
    let chosen = chosen.ok_or_else(|| ResolveError::UnknownVariant {
        selection: selected.to_string(),
        problem: crate::project::unknown_variant(component, selected),
    })?;
    Ok(ResolvedImage {
        component,
        reference: chosen.reference,
        origins: chosen.origins,
        ignored: chosen.ignored,
        variant: selection,
        variants: members,
    })
}

/// The selection for `component` by a flag or a variable, the highest that gives
/// one (a profile's comes later: `Resolution::for_profile`); a name
/// that is not one of its variants is an error listing those it has.
pub(super) fn select(
    component: &Component,
    flag: Option<(Given, &str)>,
    variable: Option<(Var, String)>,
) -> Result<Option<Selection>, ResolveError> {
    let chosen = match (flag, variable) {
        (Some((given, name)), _) => Some((name.to_string(), SelectedBy::Flag(given))),
        (None, Some((var, name))) => Some((name, SelectedBy::Variable(var))),
        (None, None) => None,
    };
    let selection = match chosen {
        Some((name, by)) => Selection { name, by },
        None if component.variants.is_empty() => return Ok(None),
        None => Selection {
            name: DEFAULT_VARIANT.to_string(),
            by: SelectedBy::Default,
        },
    };
    if !component.has_variant(&selection.name) {
        return Err(ResolveError::UnknownVariant {
            selection: selection.to_string(),
            problem: unknown_variant(component, &selection.name),
        });
    }
    Ok(Some(selection))
}

/// A variant's default, before any override: its repository with the family's
/// tag (plus its suffix), or its own tag. A family digest is the default image's
/// and no other member's.
pub(super) fn base(
    file: &std::sync::Arc<str>,
    component: &Component,
    variant: &Variant,
    family: &Base,
) -> Base {
    let (family_reference, family_origins) = family;
    let here = Origin::Project {
        file: file.clone(),
        component: [component.name.as_str(), ".variants.", &variant.name]
            .concat()
            .into(),
    };
    let mut tag_origin = here.clone();
    // One copy of the member's reference, whichever way it goes (`with_tag`
    // drops the digest too): this runs for every member of every family.
    let reference = if variant.own_tag() {
        variant.image.clone()
    } else {
        if let Some(origin) = &family_origins.tag {
            tag_origin = origin.clone();
        }
        let suffix = variant.tag_suffix.as_deref().unwrap_or_default();
        let tag = family_reference
            .tag()
            .and_then(|tag| berth_ref::Tag::parse(&[tag.as_str(), suffix].concat()).ok());
        match tag {
            Some(tag) => variant.image.with_tag(tag),
            None => variant.image.without_digest(),
        }
    };
    let origins = Origins {
        registry: here.clone(),
        name: here.clone(),
        tag: reference.tag().map(|_| tag_origin),
        digest: reference.digest().map(|_| here),
    };
    (reference, origins)
}

/// The tag override as it reaches `variant`: with its suffix, or not at all for
/// a variant with a tag of its own (said in `ignored`).
pub(super) fn tag_for(
    variant: &Variant,
    tag: Option<(Origin, String)>,
    ignored: &mut Vec<String>,
) -> Option<(Origin, String)> {
    let (origin, value) = tag?;
    if variant.own_tag() {
        ignored.push(format!(
            "{origin} (`{}`) not applied to variant `{}`: it keeps its own tag (`{}`)",
            berth_io::shown(&value),
            variant.name,
            variant.image
        ));
        return None;
    }
    let suffix = variant.tag_suffix.as_deref().unwrap_or_default();
    Some((origin, format!("{value}{suffix}")))
}
