//! `images.X.variants:` and a profile's `variants:`: one component released as a
//! family of images (an accelerator's or a platform's build), and which member a
//! profile runs. A variant is the component with another repository, a tag
//! suffix, or its own fixed tag; everything that moves the component (its
//! variables, the registry prefix, the shared tag) moves every variant alike.

use berth_ref::Reference;
use berth_yaml::{Node, Pos};

use super::{default_variable, Component, Loader, Project, ProjectError};

/// The keys of one variant.
pub(super) const VARIANT_KEYS: &[&str] = &["image", "tagSuffix", "platform", "resource"];

/// What `--variant NAME=default`, `<NAME>_VARIANT=default` or a profile's
/// `variants: {NAME: default}` call the component's own `image:`.
pub const DEFAULT_VARIANT: &str = "default";

/// One member of a component's image family (`images.X.variants.NAME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// The key under `variants:` (`rocm`).
    pub name: String,
    /// `image:`: a repository, which follows the family's tag, or a reference with
    /// its own tag (or digest), which it keeps (it lags on purpose).
    pub image: Reference,
    /// `tagSuffix:`: appended to the family tag (`-arm64`: `v0.7.0` → `v0.7.0-arm64`).
    pub tag_suffix: Option<String>,
    /// `platform:` (`linux/arm64`): the platform the variant's image must provide.
    pub platform: Option<String>,
    /// `resource:`: the extended resource a pod running it must request (`amd.com/gpu`).
    pub resource: Option<String>,
    /// Where the variant's key is written.
    pub pos: Pos,
}

impl Variant {
    /// Whether it keeps a tag of its own instead of following the family's.
    pub fn own_tag(&self) -> bool {
        self.image.tag().is_some() || self.image.digest().is_some()
    }

    /// `<NAME>_<VARIANT>_IMAGE`: the variable `berth images` and `berth env` give it.
    pub fn variable(&self, component: &str) -> String {
        default_variable(&[component, "_", &self.name].concat(), "IMAGE")
    }
}

impl Component {
    /// The variant called `name` (`None` for [`DEFAULT_VARIANT`] or an unknown one).
    pub fn variant(&self, name: &str) -> Option<&Variant> {
        self.variants.iter().find(|v| v.name == name)
    }

    /// Whether `name` is one of its variants, `default` included.
    pub fn has_variant(&self, name: &str) -> bool {
        name == DEFAULT_VARIANT || self.variant(name).is_some()
    }

    /// Its variants' names, `default` first: what an error about an unknown one lists.
    pub fn variant_names(&self) -> Vec<&str> {
        std::iter::once(DEFAULT_VARIANT)
            .chain(self.variants.iter().map(|v| v.name.as_str()))
            .collect()
    }
}

impl Loader<'_> {
    /// `images.X.variants: {NAME: {image, tagSuffix, platform, resource}}`.
    pub(super) fn variants(
        &self,
        node: &Node,
        context: &str,
    ) -> Result<Vec<Variant>, ProjectError> {
        let entries = self.mapping(node, context, "a mapping of variant names")?;
        let mut out = Vec::new();
        for (key, value) in entries {
            let name = self.string(key, context)?;
            self.dns_label(key, context, name, 63, "a variant name is lowercase letters, digits and `-` (it is given as `--variant COMPONENT=NAME`)")?;
            if name == DEFAULT_VARIANT {
                return Err(self.invalid(
                    key,
                    context,
                    name,
                    "`default` names the component's own `image:`; give the variant another name",
                ));
            }
            let here = super::load::child_key(context, name);
            let (mut image, mut tag_suffix, mut platform, mut resource) = (None, None, None, None);
            for (k, v) in self.fields(value, &here, VARIANT_KEYS)? {
                let key = super::load::child_key(&here, k.as_str().unwrap_or_default());
                match k.as_str().unwrap_or_default() {
                    "image" => image = Some(self.reference(v, &key)?),
                    "tagSuffix" => tag_suffix = Some(self.tag_suffix(v, &key)?),
                    "platform" => platform = Some(self.platform(v, &key)?),
                    "resource" => resource = Some(self.resource(v, &key)?),
                    _ => {}
                }
            }
            let Some(image) = image else {
                return Err(self.missing(value.pos, "image", format!("variant `{here}`")));
            };
            let variant = Variant {
                name: name.to_string(),
                image,
                tag_suffix,
                platform,
                resource,
                pos: key.pos,
            };
            if variant.own_tag() && variant.tag_suffix.is_some() {
                return Err(self.invalid(value, &here, name, "a variant with its own tag keeps it; `tagSuffix:` applies to the family's tag: remove one of them"));
            }
            out.push(variant);
        }
        Ok(out)
    }

    /// `tagSuffix: -arm64`: characters a tag may hold after the family's.
    fn tag_suffix(&self, node: &Node, key: &str) -> Result<String, ProjectError> {
        let text = self.string(node, key)?;
        let valid = !text.is_empty()
            && text.len() <= 64
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !valid {
            return Err(self.invalid(node, key, text, "a tag suffix is letters, digits, `-`, `_` and `.` (at most 64), appended to the family's tag"));
        }
        Ok(text.to_string())
    }

    /// `platform: os/arch[/variant]`, as an image index names it.
    fn platform(&self, node: &Node, key: &str) -> Result<String, ProjectError> {
        let text = self.string(node, key)?;
        let parts: Vec<&str> = text.split('/').collect();
        let valid = (2..=3).contains(&parts.len())
            && parts.iter().all(|p| {
                !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            });
        if !valid {
            return Err(self.invalid(
                node,
                key,
                text,
                "a platform is `os/arch` or `os/arch/variant` (`linux/arm64`)",
            ));
        }
        Ok(text.to_string())
    }

    /// `resource: amd.com/gpu`: an extended resource name, as a pod requests it.
    pub(super) fn resource(&self, node: &Node, key: &str) -> Result<String, ProjectError> {
        let text = self.string(node, key)?;
        let valid = match text.split_once('/') {
            Some((domain, name)) => {
                !domain.is_empty()
                    && domain.len() <= 253
                    && super::is_dns_label(name, 63).then_some(()).is_some()
                    && domain
                        .split('.')
                        .all(|label| super::is_dns_label(label, 63))
            }
            None => false,
        };
        if !valid {
            return Err(self.invalid(node, key, text, "an extended resource is `DOMAIN/NAME` as a pod requests it (`nvidia.com/gpu`, `amd.com/gpu`)"));
        }
        Ok(text.to_string())
    }

    /// A profile's `variants: {COMPONENT: VARIANT}`, checked once every component is read.
    pub(super) fn profile_variants(
        &self,
        node: &Node,
        context: &str,
    ) -> Result<Vec<(String, String, Pos)>, ProjectError> {
        let mut out = Vec::new();
        for (key, value) in self.mapping(
            node,
            context,
            "a mapping of component names to variant names",
        )? {
            let component = self.string(key, context)?;
            let variant = self.string(value, &format!("{context}.{component}"))?;
            out.push((component.to_string(), variant.to_string(), key.pos));
        }
        Ok(out)
    }

    /// Every profile's `variants:` names a component and one of its variants.
    pub(super) fn check_profile_variants(&self, project: &Project) -> Result<(), ProjectError> {
        let names: Vec<String> = project.components.iter().map(|c| c.name.clone()).collect();
        for profile in &project.profiles {
            let context = format!("profiles.{}.variants", profile.name);
            for (name, variant, pos) in &profile.variants {
                self.known_component(name, *pos, &context, &names)?;
                let Some(component) = project.component(name) else {
                    continue;
                };
                if !component.has_variant(variant) {
                    return Err(ProjectError::Shape {
                        file: self.file.to_string(),
                        pos: *pos,
                        problem: format!(
                            "`{context}.{name}`: {}",
                            unknown_variant(component, variant)
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}

/// Why `variant` is not one of `component`'s, with the ones it has.
pub fn unknown_variant(component: &Component, variant: &str) -> String {
    if component.variants.is_empty() {
        return format!(
            "component `{}` has no variants (`images.{}.variants:`), so there is no `{}` to select",
            component.name,
            component.name,
            berth_io::shown(variant)
        );
    }
    let names = component.variant_names();
    let hint = crate::suggest::hint(crate::suggest::closest(variant, names.iter().copied()));
    format!(
        "component `{}` has no variant `{}`; its variants: {}{hint}",
        component.name,
        berth_io::shown(variant),
        names.join(", ")
    )
}

/// `[variant-lag]`: each variant that keeps a tag of its own other than the
/// family's (the default image's): no family tag moves it, on purpose or not.
pub fn lagging(project: &Project) -> Vec<crate::Warning> {
    let mut out = Vec::new();
    for component in &project.components {
        let Some(family) = component.image.tag() else {
            continue;
        };
        for variant in &component.variants {
            let Some(own) = variant.image.tag().filter(|t| *t != family) else {
                continue;
            };
            let at = crate::place::Place::file(&project.file)
                .at(variant.pos)
                .about(format!("{}/{}", component.name, variant.name));
            out.push(crate::Warning::at(crate::Code::VariantLag, at, format_args!(
                "variant `{}` of component `{}` keeps its own tag `{own}` while the family is at `{family}`: `{}` and the shared tag do not move it; write its `image:` as a repository alone to follow the family, or acknowledge the lag (`accept:` with `at: {}/{}`)",
                variant.name, component.name, component.tag_env, component.name, variant.name
            )));
        }
    }
    out
}
