//! `images:`, `tag:` and `profiles:` of berth.yaml: the components and how they
//! are overridden.

use std::collections::{HashMap, HashSet};

use berth_yaml::{Node, Pos};

use super::{
    default_variable, Component, ComponentSpec, Loader, Profile, Project, ProjectError, PullPolicy,
};

pub(super) const COMPONENT_KEYS: &[&str] = &[
    "image",
    "helmValues",
    "env",
    "tagEnv",
    "pullPolicy",
    "match",
    "registry",
    "repositoryEnv",
    "tag",
    "sameAs",
    "deployed",
    "tagSuffix",
    "relatedImage",
    "variants",
    "variantEnv",
    "resource",
    "versions",
    "verify",
];
/// The keys of `images.X.versions`.
pub(super) const VERSIONS_KEYS: &[&str] = &["pattern"];
/// The keys of a profile's map form.
pub(super) const PROFILE_KEYS: &[&str] = &["manifests", "variants"];
pub(super) const TAG_KEYS: &[&str] = &["env"];

impl Loader<'_> {
    pub(super) fn components(&self, node: &Node) -> Result<Vec<Component>, ProjectError> {
        let entries = self.mapping(node, "images", "a mapping of component names")?;
        let mut components: Vec<Component> = entries
            .iter()
            .map(|(k, v)| self.component(k, v))
            .collect::<Result<_, _>>()?;
        // A `sameAs` component is its source's image: without its own `registry:`
        // or `tag:`, it follows the source's (a `registry: false` source moved by
        // IMAGE_REGISTRY through its copy would diverge — sweep 4, Q27). Chains
        // settle in at most as many rounds as there are components.
        let own = |i: usize, key: &str| entries[i].1.get(key).is_some();
        // A third-party image (`registry: false`) is out of the shared tag too unless
        // it says `tag: true`: `RELEASE_TAG=my-fix` must not retag mysql or grafana.
        for (i, component) in components.iter_mut().enumerate() {
            if own(i, "registry") && !component.follows_registry && !own(i, "tag") {
                component.follows_tag = false;
            }
        }
        let by_name: HashMap<String, usize> = (components.iter().enumerate())
            .map(|(i, c)| (c.name.clone(), i))
            .collect();
        let source_of = |i: usize, components: &[Component]| {
            components[i]
                .same_as
                .as_deref()
                .and_then(|s| by_name.get(s).copied())
        };
        // Settle each chain once, from its far end back (a cycle, refused later by
        // `check_same_as`, stops the walk): linear in the number of components.
        let mut settled = vec![false; components.len()];
        for start in 0..components.len() {
            let mut path = vec![start];
            let mut on_path = HashSet::from([start]);
            while let Some(source) = path.last().and_then(|&i| source_of(i, &components)) {
                if settled[source] || !on_path.insert(source) {
                    break;
                }
                path.push(source);
            }
            for &i in path.iter().rev() {
                if settled[i] {
                    continue;
                }
                settled[i] = true;
                let Some(source) = source_of(i, &components).filter(|&s| settled[s] && s != i)
                else {
                    continue;
                };
                let (registry, tag) = (
                    components[source].follows_registry,
                    components[source].follows_tag,
                );
                if !own(i, "registry") {
                    components[i].follows_registry = registry;
                }
                if !own(i, "tag") {
                    components[i].follows_tag = tag;
                }
            }
        }
        Ok(components)
    }

    /// `pullPolicy:`.
    fn pull_policy(&self, v: &Node, key: &str) -> Result<PullPolicy, ProjectError> {
        let text = self.string(v, key)?;
        PullPolicy::parse(text).ok_or_else(|| {
            self.invalid(v, key, text, "use one of auto, Always, IfNotPresent, Never")
        })
    }

    /// `match:`: repositories, without tag or digest (any of those matches).
    fn repositories(
        &self,
        v: &Node,
        key: &str,
    ) -> Result<Vec<berth_ref::Repository>, ProjectError> {
        let mut out = Vec::new();
        for item in self.list(v, key, "a list of image repositories")? {
            let reference = self.reference(item, key)?;
            if reference.tag().is_some() || reference.digest().is_some() {
                return Err(self.invalid(item, key, item.as_str().unwrap_or_default(), "`match:` lists repositories, which any tag or digest matches: drop the tag and digest"));
            }
            out.push(reference.repository().clone());
        }
        Ok(out)
    }

    fn component(&self, key: &Node, node: &Node) -> Result<Component, ProjectError> {
        if key.as_str() == Some("") {
            return Err(ProjectError::Shape {
                file: self.file.to_string(),
                pos: key.pos,
                problem: "a component name is empty (`\"\"`); name it (a letter, then letters, digits, `-`, `_` or `.`)".into(),
            });
        }
        let name = self.string(key, "images")?;
        let valid_name = name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
            && name.starts_with(|c: char| c.is_ascii_alphabetic());
        if !valid_name {
            return Err(self.invalid(key, "images", name, "a component name starts with a letter and has only letters, digits, `-`, `_` and `.`"));
        }
        let context = super::load::child_key("images", name);
        let entries = self.fields(node, &context, COMPONENT_KEYS)?;
        let mut image = None;
        let mut same_as: Option<(String, Pos)> = None;
        let spec = ComponentSpec {
            name: name.to_string(),
            image: berth_ref::Reference::parse("scratch").map_err(|source| {
                ProjectError::InvalidImage {
                    file: self.file.to_string(),
                    pos: node.pos,
                    key: context.clone(),
                    source,
                }
            })?,
            pull_policy: None,
            repositories: Vec::new(),
            deployed: true,
            resource: None,
            variants: Vec::new(),
        };
        let mut component = Component {
            image_pos: node.pos,
            env: default_variable(name, "IMAGE"),
            tag_env: default_variable(name, "TAG"),
            variant_env: default_variable(name, "VARIANT"),
            ..Component::from_spec(spec)
        };
        let mut matches = Vec::new();
        for (k, v) in entries {
            let key = super::load::child_key(&context, k.as_str().unwrap_or_default());
            match k.as_str().unwrap_or_default() {
                "image" => image = Some((self.reference(v, &key)?, v.pos)),
                "env" => component.env = self.variable(v, &key)?,
                "tagEnv" => component.tag_env = self.variable(v, &key)?,
                "repositoryEnv" => component.repository_env = Some(self.variable(v, &key)?),
                "pullPolicy" => component.spec.pull_policy = Some(self.pull_policy(v, &key)?),
                "registry" => component.follows_registry = self.bool(v, &key)?,
                "tag" => component.follows_tag = self.bool(v, &key)?,
                "deployed" => component.spec.deployed = self.bool(v, &key)?,
                "sameAs" => same_as = Some((self.string(v, &key)?.to_string(), v.pos)),
                "match" => matches = self.repositories(v, &key)?,
                "helmValues" => component.helm_values = self.helm_values(v, &key)?,
                "tagSuffix" => component.tag_suffix = self.bool(v, &key)?,
                "relatedImage" => component.related_image = self.related_image(v, &key, name)?,
                "variants" => component.spec.variants = self.variants(v, &key)?,
                "variantEnv" => component.variant_env = self.variable(v, &key)?,
                "resource" => component.spec.resource = Some(self.resource(v, &key)?),
                "versions" => component.versions = self.versions(v, &key)?,
                "verify" => component.verify = self.bool(v, &key)?,
                _ => {}
            }
        }
        self.default_image(&mut component, image, same_as, node)?;
        let variants = component
            .variants
            .iter()
            .map(|v| v.image.repository().clone());
        for repository in matches.into_iter().chain(variants.collect::<Vec<_>>()) {
            if !component.repositories.contains(&repository) {
                component.spec.repositories.push(repository);
            }
        }
        Ok(component)
    }

    /// The component's default: its own `image:`, or (`sameAs:`) another's, filled
    /// in once every component is read — exactly one of them.
    fn default_image(
        &self,
        component: &mut Component,
        image: Option<(berth_ref::Reference, Pos)>,
        same_as: Option<(String, Pos)>,
        node: &Node,
    ) -> Result<(), ProjectError> {
        let name = component.name.clone();
        let name = name.as_str();
        match (image, same_as) {
            (Some(_), Some((_, pos))) => {
                return Err(ProjectError::SameAs {
                    file: self.file.to_string(),
                    pos,
                    component: name.to_string(),
                    problem: "a component has either `image:` (its own default) or `sameAs:` (another component's resolved image as its default), not both; remove one".into(),
                })
            }
            (Some((reference, pos)), None) => {
                component.spec.repositories.push(reference.repository().clone());
                component.spec.image = reference;
                component.image_pos = pos;
            }
            (None, Some((_, pos))) if !component.variants.is_empty() => {
                return Err(ProjectError::SameAs {
                    file: self.file.to_string(),
                    pos,
                    component: name.to_string(),
                    problem: "a `sameAs:` component follows another's image and has no variants of its own; give it its own `image:`, or put the variants on the other component".into(),
                })
            }
            (None, Some((other, pos))) => {
                // `image` is filled in from `other` once every component is read.
                component.same_as = Some(other);
                component.image_pos = pos;
            }
            (None, None) => {
                return Err(self.missing(node.pos, "image", format!("component `{name}`")))
            }
        }
        Ok(())
    }

    /// `tag: {env: NAME}`: one tag variable for every component without `tag: false`.
    pub(super) fn shared_tag(&self, node: &Node) -> Result<Option<String>, ProjectError> {
        // `tag: {}` says nothing: a shared tag without its variable is a mistake.
        self.env_only(
            node,
            "tag",
            TAG_KEYS,
            "`tag:` (the shared tag variable; remove `tag:` for none)",
        )
    }

    /// `profiles: {NAME: [manifests entries]}`.
    pub(super) fn profiles(&self, node: &Node) -> Result<Vec<Profile>, ProjectError> {
        let entries = self.mapping(
            node,
            "profiles",
            "a mapping of profile names to lists of manifests",
        )?;
        let mut out = Vec::new();
        for (key, value) in entries {
            let name = self.string(key, "profiles")?;
            self.dns_label(
                key,
                "profiles",
                name,
                63,
                "a profile name is lowercase letters, digits and `-` (it is given as `--profile NAME`)",
            )?;
            let context = format!("profiles.{name}");
            let (manifests, variants) = match value.get("manifests") {
                _ if value.as_map().is_none() => (self.manifests(value)?, Vec::new()),
                None => {
                    return Err(self.missing(value.pos, "manifests", format!("profile `{name}`")))
                }
                Some(_) => {
                    let mut manifests = Vec::new();
                    let mut variants = Vec::new();
                    for (k, v) in self.fields(value, &context, PROFILE_KEYS)? {
                        match k.as_str().unwrap_or_default() {
                            "manifests" => manifests = self.manifests(v)?,
                            "variants" => {
                                variants =
                                    self.profile_variants(v, &format!("{context}.variants"))?
                            }
                            _ => {}
                        }
                    }
                    (manifests, variants)
                }
            };
            if manifests.is_empty() {
                return Err(self.wrong(
                    value,
                    &format!("profiles.{name}"),
                    "a non-empty list of manifests (paths, `-`, or `kustomize: DIR`)",
                ));
            }
            out.push(Profile {
                name: name.to_string(),
                manifests,
                variants,
                pos: key.pos,
            });
        }
        Ok(out)
    }

    /// Every `sameAs:` names another component and no chain comes back; each such
    /// component's `image` becomes the default its chain ends at (for messages).
    pub(super) fn check_same_as(&self, project: &mut Project) -> Result<(), ProjectError> {
        let fail = |c: &Component, problem: String| ProjectError::SameAs {
            file: self.file.to_string(),
            pos: c.image_pos,
            component: c.name.clone(),
            problem,
        };
        let by_name: HashMap<&str, usize> = (project.components.iter().enumerate())
            .map(|(i, c)| (c.name.as_str(), i))
            .collect();
        // `end[i]`: the component whose own `image:` chain `i` ends at, found once per component
        // (each walk stops at a component already known), so a chain costs its length.
        let mut end: Vec<Option<usize>> = vec![None; project.components.len()];
        for start in 0..project.components.len() {
            let mut path: Vec<usize> = Vec::new();
            let mut on_path: HashSet<usize> = HashSet::new();
            let mut current = start;
            let last = loop {
                if let Some(known) = end[current] {
                    break known;
                }
                let c = &project.components[current];
                let Some(other) = &c.same_as else {
                    break current;
                };
                path.push(current);
                on_path.insert(current);
                let Some(&next) = by_name.get(other.as_str()) else {
                    let hint = crate::suggest::hint(project.suggest_component(other));
                    return Err(fail(c, format!("no component `{other}`{hint}")));
                };
                if on_path.contains(&next) {
                    let from = path.iter().position(|&i| i == next).unwrap_or(0);
                    let mut names: Vec<&str> = path[from..]
                        .iter()
                        .map(|&i| project.components[i].name.as_str())
                        .collect();
                    names.push(&project.components[next].name);
                    return Err(fail(
                        &project.components[path[from]],
                        format!(
                            "`sameAs` goes round in a circle ({}); one of them needs its own `image:`",
                            names.join(" → ")
                        ),
                    ));
                }
                current = next;
            };
            for i in path {
                end[i] = Some(last);
            }
        }
        let defaults: Vec<Option<berth_ref::Reference>> = (project.components.iter().zip(&end))
            .map(|(c, last)| {
                let last = last.map(|i| &project.components[i])?;
                c.same_as.as_ref().map(|_| last.image.clone())
            })
            .collect();
        for (c, default) in project.components.iter_mut().zip(defaults) {
            if let Some(image) = default {
                c.spec.image = image;
            }
        }
        Ok(())
    }
}

impl Loader<'_> {
    /// `versions: {pattern: REGEX}`: the component's own version scheme.
    fn versions(
        &self,
        node: &Node,
        context: &str,
    ) -> Result<berth_ref::version::Scheme, ProjectError> {
        let entries = self.fields(node, context, VERSIONS_KEYS)?;
        let Some((_, pattern)) = entries.iter().find(|(k, _)| k.as_str() == Some("pattern")) else {
            return Err(ProjectError::Shape {
                file: self.file.to_string(),
                pos: node.pos,
                problem: format!("`{context}` has no `pattern:`; write the regular expression a version's tag matches, one capture group per number, e.g. `pattern: 'v(\\d+)\\.(\\d+)\\.(\\d+)-ubuntu2404'`"),
            });
        };
        let key = format!("{context}.pattern");
        let text = self.string(pattern, &key)?;
        berth_ref::version::Pattern::new(text)
            .map(berth_ref::version::Scheme::Pattern)
            .map_err(|reason| ProjectError::Shape {
                file: self.file.to_string(),
                pos: pattern.pos,
                problem: format!(
                    "`{key}` `{}` cannot be used: {reason}",
                    berth_io::shown(text)
                ),
            })
    }
}
