//! One resolution of every component's image, used by every command.
//!
//! Precedence, highest first:
//! 1. `--image NAME=REF` (full reference);
//! 2. the component's full-reference variable (`env:`, default `<NAME>_IMAGE`);
//! 3. partial overrides of the default: the repository (`repositoryEnv`), else
//!    the registry (`--registry`, else the `registry.env` variable); the tag
//!    (`--tag NAME=TAG`, else `tagEnv`, else the shared `tag.env` unless `tag: false`);
//! 4. `image:` in berth.yaml, or with `sameAs: OTHER` OTHER's resolved image;
//! 5. with `--locked`, the digest `berth.lock` records for the resulting
//!    repository and tag (a reference that already has a digest keeps it).
//!
//! A full override and a tag (or repository) override that disagree are an
//! error naming both; a full reference is never re-prefixed by a registry
//! override. Empty variables count as unset, because Makefiles export empty
//! variables freely. Variables given on the command line of the program `berth
//! env` runs (`make test EPP_TAG=x`) win over the environment, as make's do.

use std::collections::HashMap;

use berth_ref::{RefError, Reference, RegistryPrefix, Tag};

use crate::project::{Component, Project};
use crate::suggest::closest;
use crate::suggest::hint;

mod error;
mod exports;
mod handed;
mod origin;
mod variants;
pub use error::{RepositoryConflict, ResolveError, TagConflict};
pub use handed::HANDED;
pub use origin::{Given, Origin, Origins, SourceNames, Var, VarSource};
pub use variants::{ResolvedVariant, SelectedBy, Selection};

/// Overrides of the default references, as the caller was given them (the
/// CLI's flags, a controller's custom resource).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// Full references by component, in order (the CLI's `--image NAME=REF`).
    pub images: Vec<(String, String)>,
    /// Tags by component, in order (`--tag NAME=TAG`).
    pub tags: Vec<(String, String)>,
    /// Variants by component, in order (`--variant NAME=VARIANT`).
    pub variants: Vec<(String, String)>,
    /// A registry prefix for every component (`--registry PREFIX`).
    pub registry: Option<String>,
    /// The pins of a lock, applied last (`--locked`).
    pub lock: Option<crate::lock::Lock>,
    /// `NAME=VALUE` variables from a command line (make's `make test EPP_TAG=x`),
    /// read before the environment: they win over it, as they do in make.
    pub command_line: Vec<(String, String)>,
    /// How messages name the command line: `command line of `make``.
    pub command_line_name: String,
    /// How messages name these sources.
    pub names: SourceNames,
    /// The names of every variable set where the resolver could read it (the
    /// environment, a command line): one that looks like a misspelling of a
    /// variable berth.yaml names is a warning ([`Resolution::warnings`]).
    pub present: Vec<String>,
}

/// A component's resolved image and how it was reached.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedImage<'p> {
    /// The component.
    pub component: &'p Component,
    /// The resolved reference.
    pub reference: Reference,
    /// The source of each part.
    pub origins: Origins,
    /// An override that was present but did not apply, and why.
    pub ignored: Option<String>,
    /// A family's selected member (`None` for a component without `variants:`):
    /// `reference` is its image.
    pub variant: Option<Selection>,
    /// Every member of a family, `default` first, each moved by the component's
    /// overrides (the selected one is `reference`); empty without `variants:`.
    pub variants: Vec<ResolvedVariant>,
}

impl ResolvedImage<'_> {
    /// The member called `name`, resolved.
    pub fn member(&self, name: &str) -> Option<&ResolvedVariant> {
        self.variants.iter().find(|v| v.name == name)
    }
}

/// Every component's resolved image, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution<'p> {
    /// One entry per component.
    pub images: Vec<ResolvedImage<'p>>,
    /// Under `--locked`, the remote charts berth.lock pins: a `helm:` source
    /// renders the archive of the digest pinned for its version, or fails.
    pub locked_charts: Option<Vec<crate::lock::ChartPin>>,
    /// What the resolution found suspicious but resolved anyway: a variable that
    /// looks like a misspelling of one berth.yaml names (`EPP_TGA`).
    pub warnings: Vec<crate::Warning>,
}

impl<'p> Resolution<'p> {
    /// The resolved image of the component whose repositories include `image`'s.
    pub fn for_image(&self, image: &Reference) -> Option<&ResolvedImage<'p>> {
        self.images
            .iter()
            .find(|r| r.component.repositories.contains(image.repository()))
    }
}

/// What the resolver reads: the components and the variables that move all of
/// them. berth.yaml gives one ([`Project::catalog`]); the controller builds one
/// from a `Berth` (no file behind it, no variables).
#[derive(Debug, Clone, Copy)]
pub struct Catalog<'p> {
    /// Where the components are written, for messages (`berth.yaml`, `Berth ns/name`).
    pub file: &'p str,
    /// The components, in order.
    pub components: &'p [Component],
    /// `registry.env`.
    pub registry_env: Option<&'p str>,
    /// `tag.env`.
    pub tag_env: Option<&'p str>,
}

impl Catalog<'_> {
    fn component(&self, name: &str) -> Option<&Component> {
        self.components.iter().find(|c| c.name == name)
    }

    fn suggest_component(&self, name: &str) -> Option<&str> {
        closest(name, self.components.iter().map(|c| c.name.as_str()))
    }
}

impl Project {
    /// What the resolver reads of this project.
    pub fn catalog(&self) -> Catalog<'_> {
        Catalog {
            file: &self.file,
            components: &self.components,
            registry_env: self.registry_env.as_deref(),
            tag_env: self.tag_env.as_deref(),
        }
    }
}

/// Resolves every component of `project`. `env` reads a variable (the CLI
/// passes the process environment; tests pass a table).
pub fn resolve<'p>(
    project: &'p Project,
    overrides: &Overrides,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolution<'p>, ResolveError> {
    let mut resolution = resolve_catalog(project.catalog(), overrides, env)?;
    let present: Vec<&str> = overrides.present.iter().map(String::as_str).collect();
    let read = project.variables();
    for (name, meant) in crate::suggest::misspelt_variables(&read, &present) {
        let text = format!(
            "`{name}` is set, but {} reads no variable of that name, so it changes nothing; did you mean `{meant}`?",
            project.file
        );
        let warning = crate::Warning::about(crate::Code::MisspeltVariable, name, text);
        resolution.warnings.push(warning);
    }
    Ok(resolution)
}

/// Variable `name`: the command line's words first (make's precedence), then the
/// environment; an empty value is unset.
fn read_variable(
    overrides: &Overrides,
    env: &dyn Fn(&str) -> Option<String>,
    name: &str,
) -> Option<(Var, String)> {
    let from_line = overrides
        .command_line
        .iter()
        .rev() // make: the last assignment of a variable wins
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
        .filter(|v| !v.is_empty());
    match from_line {
        Some(value) => Some((
            Var {
                name: name.to_string(),
                source: VarSource::CommandLine(overrides.command_line_name.clone()),
            },
            value,
        )),
        None => env(name)
            .filter(|v| !v.is_empty())
            .map(|v| (Var::env(name), v)),
    }
}

/// Resolves every component of `catalog`: [`resolve`] for components that do not
/// come from berth.yaml.
pub fn resolve_catalog<'p>(
    project: Catalog<'p>,
    overrides: &Overrides,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolution<'p>, ResolveError> {
    let read = |name: &str| read_variable(overrides, env, name);
    // The command's own settings: what `berth env` handed, unchanged, is its
    // answer, already in the images it handed (`handed`).
    let handed = handed::Handed::read(env);
    let own = |name: &str| read(name).filter(|(var, value)| !handed.still(var, value));
    let image_flags = per_component(&project, &overrides.names.image, &overrides.images)?;
    let tag_flags = per_component(&project, &overrides.names.tag, &overrides.tags)?;
    let variant_flags = per_component(&project, &overrides.names.variant, &overrides.variants)?;
    let registry = registry_override(&project, overrides, &own)?;
    let shared_tag = project
        .tag_env
        .and_then(&own)
        .map(|(v, value)| (Origin::TagEnv(v), value));

    // Unlocked resolutions, filled in dependency order: a `sameAs` component's
    // default is its source's resolved image.
    let mut unlocked: Vec<Option<ResolvedImage<'p>>> = vec![None; project.components.len()];
    let by_name: HashMap<&str, usize> = (project.components.iter().enumerate())
        .map(|(i, c)| (c.name.as_str(), i))
        .collect();
    for index in 0..project.components.len() {
        resolve_index(
            index,
            &project,
            &by_name,
            &mut unlocked,
            &|component, default| {
                let name = &component.name;
                let source = component
                    .same_as
                    .as_deref()
                    .and_then(|s| project.component(s));
                let default = handed.base(&read, component, source)?.unwrap_or(default);
                let full = match find(&image_flags, name) {
                    Some(value) => Some((
                        Origin::Image(Given::new(&overrides.names.image, name)),
                        value.to_string(),
                    )),
                    None => own(&component.env).map(|(v, value)| (Origin::ImageEnv(v), value)),
                };
                let tag = match find(&tag_flags, name) {
                    Some(value) => Some((
                        Origin::Tag(Given::new(&overrides.names.tag, name)),
                        value.to_string(),
                    )),
                    None => own(&component.tag_env)
                        .map(|(v, value)| (Origin::TagEnv(v), value))
                        .or_else(|| shared_tag.clone().filter(|_| component.follows_tag)),
                };
                let repository = component
                    .repository_env
                    .as_ref()
                    .and_then(|var| own(var))
                    .map(|(v, value)| (Origin::RepositoryEnv(v), value));
                let given = Partial {
                    full,
                    tag,
                    repository,
                    registry: registry.as_ref(),
                };
                let flag = find(&variant_flags, name);
                if component.variants.is_empty() && flag.is_none() {
                    return resolve_one(component, default, given);
                }
                let selection = variants::select(
                    component,
                    flag.map(|v| (Given::new(&overrides.names.variant, name), v)),
                    read(&component.variant_env),
                )?;
                let members = handed.members(&read, component)?;
                let file = project.file;
                variants::resolve_family(file, component, default, given, selection, members)
            },
        )?;
    }
    let images = unlocked
        .into_iter()
        .flatten()
        .map(|resolved| match &overrides.lock {
            Some(lock) => apply_lock(resolved, lock, &overrides.names),
            None => Ok(resolved),
        })
        .collect::<Result<_, _>>()?;
    Ok(Resolution {
        images,
        locked_charts: overrides.lock.as_ref().map(|lock| lock.charts.clone()),
        warnings: Vec::new(),
    })
}

/// The registry prefix that moves every component: `--registry`, else the
/// `registry.env` variable (`own`: as the command set it), parsed.
fn registry_override(
    project: &Catalog<'_>,
    overrides: &Overrides,
    own: &dyn Fn(&str) -> Option<(Var, String)>,
) -> Result<Option<(Origin, RegistryPrefix)>, ResolveError> {
    let registry = match (&overrides.registry, project.registry_env) {
        (Some(prefix), _) => Some((
            Origin::Registry(Given::new(&overrides.names.registry, "")),
            prefix.clone(),
        )),
        (None, Some(var)) => own(var).map(|(v, value)| (Origin::RegistryEnv(v), value)),
        (None, None) => None,
    };
    Ok(registry
        .map(|(origin, value)| parsed(origin, value, RegistryPrefix::parse))
        .transpose()?
        .map(|(origin, _, prefix)| (origin, prefix)))
}

/// The default a component's overrides apply to, and where its parts came from.
type Base = (Reference, Origins);

/// Resolves component `index` into `done`, its `sameAs` sources first: the chain is walked
/// once to the first component already resolved (or with its own default), then resolved from
/// that end back, so a long chain costs its length, not its square, and no recursion. The loader
/// refused cycles and unknown names; a cycle here still ends (the walk stops after every
/// component) with the component's own default.
fn resolve_index<'p>(
    index: usize,
    project: &Catalog<'p>,
    by_name: &HashMap<&str, usize>,
    done: &mut [Option<ResolvedImage<'p>>],
    one: &dyn Fn(&'p Component, Base) -> Result<ResolvedImage<'p>, ResolveError>,
) -> Result<(), ResolveError> {
    let source_of = |i: usize| {
        project.components[i]
            .same_as
            .as_deref()
            .and_then(|other| by_name.get(other).copied())
            .filter(|&source| source != i)
    };
    let mut chain = vec![index];
    while let Some(&last) = chain.last() {
        if done[last].is_some() || chain.len() > project.components.len() {
            break;
        }
        match source_of(last) {
            Some(source) => chain.push(source),
            None => break,
        }
    }
    for &i in chain.iter().rev() {
        if done[i].is_some() {
            continue;
        }
        let component = &project.components[i];
        let default = match source_of(i).and_then(|source| done[source].as_ref()) {
            Some(r) => (r.reference.clone(), r.origins.clone()),
            None => own_default(project, component),
        };
        done[i] = Some(one(component, default)?);
    }
    Ok(())
}

fn own_default(project: &Catalog<'_>, component: &Component) -> Base {
    let origin = Origin::Project {
        file: project.file.into(),
        component: component.name.as_str().into(),
    };
    let reference = component.image.clone();
    let origins = Origins::of(origin, &reference);
    (reference, origins)
}

/// The overrides of one component that were set, with their sources.
struct Partial<'a> {
    full: Option<(Origin, String)>,
    tag: Option<(Origin, String)>,
    repository: Option<(Origin, String)>,
    registry: Option<&'a (Origin, RegistryPrefix)>,
}

/// `value` from `origin` parsed, or the error that says where it came from.
fn parsed<T>(
    origin: Origin,
    value: String,
    parse: impl FnOnce(&str) -> Result<T, RefError>,
) -> Result<(Origin, String, T), ResolveError> {
    match parse(&value) {
        Ok(parsed) => Ok((origin, value, parsed)),
        Err(source) => Err(ResolveError::Invalid {
            origin,
            value,
            source,
        }),
    }
}

fn resolve_one<'p>(
    component: &'p Component,
    (default, default_origins): Base,
    given: Partial<'_>,
) -> Result<ResolvedImage<'p>, ResolveError> {
    let tag = given
        .tag
        .map(|(origin, value)| parsed(origin, value, Tag::parse))
        .transpose()?;
    let repository = given
        .repository
        .map(|(origin, value)| match Reference::parse(&value) {
            Ok(r) if r.tag().is_none() && r.digest().is_none() => Ok((origin, value, r)),
            Ok(_) => Err(ResolveError::NotARepository { origin, value }),
            Err(source) => Err(ResolveError::Invalid {
                origin,
                value,
                source,
            }),
        })
        .transpose()?;

    if let Some((full_origin, value)) = given.full {
        return resolve_full(
            component,
            full_origin,
            value,
            tag,
            repository,
            given.registry,
        );
    }

    let mut reference = default;
    let mut origins = default_origins;
    let mut ignored = None;
    if let Some((origin, _, wanted)) = &repository {
        reference = reference.with_repository(wanted.repository());
        origins.registry = origin.clone();
        origins.name = origin.clone();
        if let Some((registry_origin, prefix)) = given.registry {
            ignored = Some(format!(
                "{registry_origin} (`{prefix}`) not applied: {origin} gives the repository"
            ));
        }
    } else {
        let registry = match given.registry {
            Some((origin, prefix)) if !component.follows_registry => {
                ignored = Some(format!(
                    "{origin} (`{prefix}`) not applied: the component has `registry: false`"
                ));
                None
            }
            other => other,
        };
        if let Some((origin, prefix)) = registry {
            reference = reference
                .with_prefix(prefix)
                .map_err(|source| ResolveError::Invalid {
                    origin: origin.clone(),
                    value: prefix.to_string(),
                    source,
                })?;
            origins.registry = origin.clone();
        }
    }
    if let Some((origin, _, tag)) = tag {
        reference = reference.with_tag(tag);
        origins.tag = Some(origin);
        origins.digest = None;
    }
    Ok(ResolvedImage {
        component,
        reference,
        origins,
        ignored,
        variant: None,
        variants: Vec::new(),
    })
}

/// A component given a full reference (`--image`, `<NAME>_IMAGE`): it is the
/// answer, unless a tag or repository given as well disagrees with it; the
/// registry prefix does not apply (and says so).
fn resolve_full<'p>(
    component: &'p Component,
    full_origin: Origin,
    value: String,
    tag: Option<(Origin, String, Tag)>,
    repository: Option<(Origin, String, Reference)>,
    registry: Option<&(Origin, RegistryPrefix)>,
) -> Result<ResolvedImage<'p>, ResolveError> {
    let reference = Reference::parse(&value).map_err(|source| ResolveError::Invalid {
        origin: full_origin.clone(),
        value: value.clone(),
        source,
    })?;
    if let Some((tag_origin, tag_value, wanted)) = tag {
        if reference.tag() != Some(&wanted) {
            return Err(ResolveError::Conflict(Box::new(TagConflict {
                component: component.name.clone(),
                full_origin,
                full: value,
                full_tag: reference.tag().map(|t| t.to_string()),
                tag_origin,
                tag: tag_value,
            })));
        }
    }
    if let Some((repository_origin, repository_value, wanted)) = repository {
        if reference.repository() != wanted.repository() {
            return Err(ResolveError::RepositoryConflict(Box::new(
                RepositoryConflict {
                    component: component.name.clone(),
                    full_origin,
                    full: value,
                    full_repository: reference.repository().to_string(),
                    repository_origin,
                    repository: repository_value,
                },
            )));
        }
    }
    let ignored = registry.map(|(origin, prefix)| {
        format!("{origin} (`{prefix}`) not applied: {full_origin} gives a full reference")
    });
    Ok(ResolvedImage {
        component,
        origins: Origins::of(full_origin, &reference),
        reference,
        ignored,
        variant: None,
        variants: Vec::new(),
    })
}

/// Step 5: the digest pinned for the resolved repository and tag.
fn apply_lock<'p>(
    mut image: ResolvedImage<'p>,
    lock: &crate::lock::Lock,
    names: &SourceNames,
) -> Result<ResolvedImage<'p>, ResolveError> {
    if image.reference.digest().is_some() {
        return Ok(image); // an explicit digest is more specific than any pin
    }
    match lock.find(&image.reference) {
        Some(entry) => {
            image.reference = image.reference.with_digest(entry.digest.clone());
            image.origins.digest = Some(Origin::Lock(Given::new(&names.lock, "")));
            // Every member of a family renders pinned: each has its own pin.
            for member in &mut image.variants {
                if member.reference.digest().is_some() {
                    continue;
                }
                let Some(entry) = lock.find(&member.reference) else {
                    return Err(ResolveError::NotLocked {
                        component: format!("{}` variant `{}", image.component.name, member.name),
                        image: member.reference.to_string(),
                        pinned: None,
                    });
                };
                member.reference = member.reference.with_digest(entry.digest.clone());
                member.origins.digest = Some(Origin::Lock(Given::new(&names.lock, "")));
            }
            Ok(image)
        }
        None => Err(ResolveError::NotLocked {
            component: image.component.name.clone(),
            image: image.reference.to_string(),
            pinned: lock
                .for_component(&image.component.name)
                .map(|e| e.image.to_string()),
        }),
    }
}

/// Checks that each `NAME=VALUE` flag names a component, once.
fn per_component<'a>(
    project: &Catalog<'_>,
    template: &str,
    given: &'a [(String, String)],
) -> Result<Vec<(&'a str, &'a str)>, ResolveError> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for (name, value) in given {
        if project.component(name).is_none() {
            return Err(ResolveError::UnknownComponent {
                source_name: Given::new(template, name).with("…"),
                name: name.clone(),
                file: project.file.to_string(),
                suggestion: project.suggest_component(name).map(str::to_string),
            });
        }
        if out.iter().any(|(n, _)| n == name) {
            return Err(ResolveError::Repeated {
                // The source without the component: `--image`.
                source_name: template
                    .split("{component}")
                    .next()
                    .unwrap_or(template)
                    .trim()
                    .to_string(),
                name: name.clone(),
            });
        }
        out.push((name, value));
    }
    Ok(out)
}

fn find<'a>(pairs: &[(&str, &'a str)], name: &str) -> Option<&'a str> {
    pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "resolve/variants_tests.rs"]
mod variants_tests;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "resolve/exports_tests.rs"]
mod exports_tests;
