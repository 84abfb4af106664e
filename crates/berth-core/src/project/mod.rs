//! `berth.yaml`: the project model and its strict loader.
//!
//! Unknown keys are errors (with a "did you mean"), every error carries
//! `file:line:column`, and values are parsed into their types here, once:
//! image references become [`Reference`]s, never strings split later.

use std::path::PathBuf;

use berth_ref::{RefError, Reference, Repository};
use berth_yaml::{Limits, Node, Pos};

use crate::suggest::{closest, hint};

mod components;
mod dev;
mod generated;
pub mod schema;
mod sync;
pub use dev::{Dev, Forward};
pub use generated::{CaBundleSpec, ConfigSpec, Inject, Spanned};
pub use sync::{RunStep, SyncPath, SyncRule, SyncTarget};

/// Name of the project file.
pub const PROJECT_FILE: &str = "berth.yaml";

const TOP_KEYS: &[&str] = &[
    "configPaths",
    "name",
    "namespace",
    "manifests",
    "images",
    "registry",
    "imagePaths",
    "configs",
    "caBundles",
    "sync",
    "tag",
    "profiles",
    "dev",
    "gitops",
];
const REGISTRY_KEYS: &[&str] = &["env"];
const IMAGE_PATH_KEYS: &[&str] = &["kind", "apiVersion", "path"];
const CONFIG_PATH_KEYS: &[&str] = &["kind", "apiVersion", "path", "key"];

/// A loaded, validated `berth.yaml`.
#[derive(Debug, Clone, PartialEq)]
pub struct Project {
    /// The file it came from, as given to the loader (for messages).
    pub file: String,
    /// The directory relative paths are resolved against.
    pub dir: PathBuf,
    /// `name:`.
    pub name: String,
    /// `namespace:`, the default namespace for cluster commands.
    pub namespace: Option<String>,
    /// `manifests:`, in order.
    pub manifests: Vec<Manifest>,
    /// `images:`, in file order.
    pub components: Vec<Component>,
    /// `registry.env`: the variable holding a registry prefix for every component.
    pub registry_env: Option<String>,
    /// `tag.env`: one tag variable for every component without `tag: false`
    /// (below each component's own `tagEnv`).
    pub tag_env: Option<String>,
    /// `profiles:`: alternative manifest sets, chosen with `--profile NAME`.
    pub profiles: Vec<Profile>,
    /// `imagePaths:`: image fields of custom resources.
    pub image_paths: Vec<ImagePath>,
    /// `configPaths:`: fields of custom resources that name a config or CA bundle.
    pub config_paths: Vec<ImagePath>,
    /// `configs:`, in file order.
    pub configs: Vec<ConfigSpec>,
    /// `caBundles:`, in file order.
    pub ca_bundles: Vec<CaBundleSpec>,
    /// `sync:`, live-update rules, in file order.
    pub sync: Vec<SyncRule>,
    /// `dev:`, what `berth dev` adds (port-forwards).
    pub dev: Dev,
    /// `gitops:` as written: the engine that applies the rendered output (`flux`,
    /// `argocd`), whose pruning generated objects are kept from; `Some(None)` is an
    /// explicit `none`, `None` that berth.yaml does not say.
    pub gitops: Option<Option<crate::gitops::Engine>>,
}

/// One entry of `images:`: an image the project ships.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    /// The key under `images:`.
    pub name: String,
    /// `image:`, the default reference.
    pub image: Reference,
    /// Where `image:` is written.
    pub image_pos: Pos,
    /// The full-reference override variable (`env:`, default `<NAME>_IMAGE`).
    pub env: String,
    /// The tag-only override variable (`tagEnv:`, default `<NAME>_TAG`).
    pub tag_env: String,
    /// `pullPolicy:`; `None` leaves pull policies as they are.
    pub pull_policy: Option<PullPolicy>,
    /// Repositories that are this component: the default's and `match:` entries.
    pub repositories: Vec<Repository>,
    /// `registry:` (default true); `false` keeps the component out of the registry
    /// override (a third-party image a fork does not mirror).
    pub follows_registry: bool,
    /// `repositoryEnv:`: a variable that replaces the repository and keeps the tag
    /// (operator-sdk's `IMAGE_TAG_BASE`); it wins over the registry override.
    pub repository_env: Option<String>,
    /// `tag:` (default true); `false` keeps the component out of the shared tag
    /// variable (`tag.env`).
    pub follows_tag: bool,
    /// `sameAs:`: the component whose resolved image is this one's default. `image`
    /// then holds that component's `image:` (for messages); the resolver uses its
    /// resolved reference instead.
    pub same_as: Option<String>,
    /// `deployed:` (default true); `false`: built and pushed, never in manifests, so
    /// nothing looks for it there.
    pub deployed: bool,
}

/// One entry of `profiles:`: a named set of manifests used instead of `manifests:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The key under `profiles:`.
    pub name: String,
    /// Its manifests, in order.
    pub manifests: Vec<Manifest>,
    /// Where the key is written.
    pub pos: Pos,
}

/// `pullPolicy:` of a component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullPolicy {
    /// `IfNotPresent` for digests and fixed tags, `Always` for `latest` or no tag.
    Auto,
    /// Kubernetes `Always`.
    Always,
    /// Kubernetes `IfNotPresent`.
    IfNotPresent,
    /// Kubernetes `Never`.
    Never,
}

impl PullPolicy {
    /// Parses `auto | Always | IfNotPresent | Never`.
    pub fn parse(s: &str) -> Option<PullPolicy> {
        match s {
            "auto" => Some(PullPolicy::Auto),
            "Always" => Some(PullPolicy::Always),
            "IfNotPresent" => Some(PullPolicy::IfNotPresent),
            "Never" => Some(PullPolicy::Never),
            _ => None,
        }
    }

    /// The Kubernetes value for a container running `image`.
    pub fn for_image(self, image: &Reference) -> &'static str {
        match self {
            PullPolicy::Always => "Always",
            PullPolicy::IfNotPresent => "IfNotPresent",
            PullPolicy::Never => "Never",
            PullPolicy::Auto if image.digest().is_some() => "IfNotPresent",
            PullPolicy::Auto => match image.tag().map(|t| t.as_str()) {
                None | Some("latest") => "Always",
                Some(_) => "IfNotPresent",
            },
        }
    }
}

/// One entry of `manifests:`, with where berth.yaml gives it (for messages about it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// What to read.
    pub source: ManifestSource,
    /// The entry's `line:column` in berth.yaml.
    pub pos: Pos,
}

/// What one `manifests:` entry reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestSource {
    /// A file, or a directory read recursively (`*.yaml`, `*.yml`, sorted by path).
    Path(PathBuf),
    /// `-`: standard input.
    Stdin,
    /// `kustomize: DIR`: the output of `kubectl kustomize DIR`.
    Kustomize(PathBuf),
}

/// One entry of `imagePaths:` or `configPaths:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagePath {
    /// The object kind it applies to.
    pub kind: String,
    /// The apiVersion it applies to; any when absent.
    pub api_version: Option<String>,
    /// The field, as segments.
    pub path: Vec<PathSegment>,
    /// `configPaths` only: the field beside the name that holds the key the
    /// resource reads (`spec.overrideConfig.key`), checked against the config.
    pub key: Option<Vec<PathSegment>>,
    /// The entry as written (`spec.overrideConfig.name`), for messages.
    pub text: String,
    /// Where the entry is in berth.yaml.
    pub pos: Pos,
}

impl ImagePath {
    /// Whether the entry applies to an object of this apiVersion and kind.
    pub fn applies(&self, api_version: &str, kind: &str) -> bool {
        self.kind == kind && self.api_version.as_deref().is_none_or(|v| v == api_version)
    }
}

/// A step of an [`ImagePath`]: a mapping key, or every item of a list (`[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment {
    /// Descend into a mapping key.
    Key(String),
    /// Descend into every item of a sequence.
    Each,
}

/// An RFC 1123 label of at most `max` characters.
fn is_dns_label(text: &str, max: usize) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= max
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// `; valid keys: a, b`, or nothing when there are none to list.
fn valid_keys(expected: &[&str]) -> String {
    if expected.is_empty() {
        String::new()
    } else {
        format!("; valid keys: {}", expected.join(", "))
    }
}

/// A `berth.yaml` that cannot be used, and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProjectError {
    /// Not valid YAML.
    #[error("{file}:{source}")]
    Yaml {
        /// The file.
        file: String,
        /// The YAML error, with its position.
        source: berth_yaml::Error,
    },
    /// More than one YAML document: the rest would be ignored.
    #[error("{file}:{pos}: a second YAML document; berth.yaml is one document: merge it into the first, or remove the `---` before it")]
    ExtraDocument {
        /// The file.
        file: String,
        /// Where the second document starts.
        pos: Pos,
    },
    /// A key that is not part of the format.
    #[error("{file}:{pos}: unknown key `{key}` in {context}{}{}", hint(suggestion.as_deref()), valid_keys(expected))]
    UnknownKey {
        /// The file.
        file: String,
        /// Where the key is.
        pos: Pos,
        /// The key.
        key: String,
        /// What it is inside (`the project`, `images.epp`).
        context: String,
        /// The closest valid key.
        suggestion: Option<String>,
        /// The valid keys.
        expected: &'static [&'static str],
    },
    /// A value of the wrong shape.
    #[error("{file}:{pos}: `{key}` must be {expected}")]
    WrongType {
        /// The file.
        file: String,
        /// Where the value is.
        pos: Pos,
        /// The key path (`images.epp.match`).
        key: String,
        /// What is expected (`a string`, `a list of strings`).
        expected: &'static str,
    },
    /// A required key is absent.
    #[error("{file}:{pos}: {context} has no `{key}`; add it")]
    Missing {
        /// The file.
        file: String,
        /// Where the enclosing mapping starts.
        pos: Pos,
        /// The missing key.
        key: &'static str,
        /// What lacks it.
        context: String,
    },
    /// An image reference that does not parse.
    #[error("{file}:{pos}: `{key}`: {source}")]
    InvalidImage {
        /// The file.
        file: String,
        /// Where the reference is.
        pos: Pos,
        /// The key path.
        key: String,
        /// Why it is invalid.
        source: RefError,
    },
    /// `sameAs:` names no component, itself, or a chain that comes back.
    #[error("{file}:{pos}: `images.{component}.sameAs`: {problem}")]
    SameAs {
        /// The file.
        file: String,
        /// Where `sameAs:` is.
        pos: Pos,
        /// The component that has it.
        component: String,
        /// What is wrong and how to fix it.
        problem: String,
    },
    /// A value outside its allowed set or syntax.
    #[error("{file}:{pos}: invalid `{key}` value `{value}`: {reason}")]
    InvalidValue {
        /// The file.
        file: String,
        /// Where the value is.
        pos: Pos,
        /// The key path.
        key: String,
        /// The value.
        value: String,
        /// What is allowed.
        reason: &'static str,
    },
    /// Two generated objects (configs, CA bundles) share a name.
    #[error("{file}:{pos}: `{name}` is defined in both {first} and {second}; generated objects need distinct names")]
    DuplicateName {
        /// The file.
        file: String,
        /// Where the second definition is.
        pos: Pos,
        /// The name.
        name: String,
        /// The first section.
        first: &'static str,
        /// The second section.
        second: &'static str,
    },
    /// Two components (or the registry) would read the same variable.
    #[error("{file}:{pos}: variable `{var}` is used by both {first} and {second}; give one of them another `env:`/`tagEnv:`")]
    DuplicateVariable {
        /// The file.
        file: String,
        /// Where the second use is.
        pos: Pos,
        /// The variable.
        var: String,
        /// The first user.
        first: String,
        /// The second user.
        second: String,
    },
}

/// Reads `berth.yaml` text. `file` names it in messages; `dir` anchors its relative paths.
pub fn parse(file: &str, dir: PathBuf, src: &str) -> Result<Project, ProjectError> {
    Loader { file }.project(dir, src)
}

impl Project {
    /// Pairs of components that claim the same repository, with it: the first
    /// component wins it when images are matched, so the second never matches there.
    pub fn shared_repositories(&self) -> Vec<(&Component, &Component, &Repository)> {
        let mut shared = Vec::new();
        for (i, first) in self.components.iter().enumerate() {
            for second in &self.components[i + 1..] {
                if let Some(r) = first
                    .repositories
                    .iter()
                    .find(|r| second.repositories.contains(r))
                {
                    shared.push((first, second, r));
                }
            }
        }
        shared
    }

    /// Every variable the resolution reads: each component's `env`, `tagEnv` and
    /// `repositoryEnv`, `registry.env` and `tag.env`.
    pub fn variables(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self.registry_env.iter().map(String::as_str).collect();
        out.extend(self.tag_env.as_deref());
        for c in &self.components {
            out.extend([c.env.as_str(), c.tag_env.as_str()]);
            out.extend(c.repository_env.as_deref());
        }
        out.retain(|v| !v.is_empty());
        out
    }

    /// The component called `name`.
    pub fn component(&self, name: &str) -> Option<&Component> {
        self.components.iter().find(|c| c.name == name)
    }

    /// The component name closest to `name`, for "did you mean" hints.
    pub fn suggest_component(&self, name: &str) -> Option<&str> {
        closest(name, self.components.iter().map(|c| c.name.as_str()))
    }
}

/// `<NAME>_<SUFFIX>`: upper-cased, `-` and `.` as `_`.
pub fn default_variable(component: &str, suffix: &str) -> String {
    let mut var: String = component
        .chars()
        .map(|c| match c {
            '-' | '.' => '_',
            c => c.to_ascii_uppercase(),
        })
        .collect();
    var.push('_');
    var.push_str(suffix);
    var
}

fn is_variable_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

struct Loader<'a> {
    file: &'a str,
}

impl Loader<'_> {
    fn project(&self, dir: PathBuf, src: &str) -> Result<Project, ProjectError> {
        let file = self.file.to_string();
        let mut docs =
            berth_yaml::load_all(src, Limits::default()).map_err(|source| ProjectError::Yaml {
                file: file.clone(),
                source,
            })?;
        if let Some(extra) = docs.iter().skip(1).find(|d| !d.is_null()) {
            return Err(ProjectError::ExtraDocument {
                file,
                pos: extra.pos,
            });
        }
        let root = match docs.len() {
            0 => Node::map(Pos { line: 1, column: 1 }),
            _ => docs.swap_remove(0),
        };
        let root = if root.is_null() {
            Node::map(root.pos)
        } else {
            root
        };
        let entries = self.fields(&root, "the project", TOP_KEYS)?;
        let mut ca_node = None;
        let mut sync_node = None;
        let mut dev_node = None;
        let mut tag_node = None;
        let mut project = Project {
            file,
            dir,
            name: String::new(),
            namespace: None,
            manifests: Vec::new(),
            components: Vec::new(),
            registry_env: None,
            tag_env: None,
            profiles: Vec::new(),
            image_paths: Vec::new(),
            config_paths: Vec::new(),
            configs: Vec::new(),
            ca_bundles: Vec::new(),
            sync: Vec::new(),
            dev: Dev::default(),
            gitops: None,
        };
        for (key, value) in entries {
            match key.as_str().unwrap_or_default() {
                "name" => {
                    let name = self.string(value, "name")?;
                    // It names the apply records (`berth-NAME-rN`, a Secret) and a label value.
                    if !is_dns_label(name, 53) {
                        return Err(self.invalid(value, "name", name, "lowercase letters, digits and `-`, starting and ending with a letter or digit, at most 53 characters (it names the apply records, `berth-NAME-rN`)"));
                    }
                    project.name = name.to_string()
                }
                "namespace" => {
                    let namespace = self.string(value, "namespace")?;
                    if !is_dns_label(namespace, 63) {
                        return Err(self.invalid(value, "namespace", namespace, "a Kubernetes namespace name: lowercase letters, digits and `-`, starting and ending with a letter or digit, at most 63 characters"));
                    }
                    project.namespace = Some(namespace.to_string())
                }
                "manifests" => project.manifests = self.manifests(value)?,
                "images" => project.components = self.components(value)?,
                "registry" => project.registry_env = self.registry(value)?,
                "tag" => tag_node = Some(value),
                "profiles" => project.profiles = self.profiles(value)?,
                "imagePaths" => project.image_paths = self.field_paths(value, "imagePaths")?,
                "configPaths" => project.config_paths = self.field_paths(value, "configPaths")?,
                "configs" => project.configs = self.configs(value)?,
                "caBundles" => ca_node = Some(value),
                "sync" => sync_node = Some(value),
                "dev" => dev_node = Some(value),
                "gitops" => {
                    let text = self.string(value, "gitops")?;
                    project.gitops = Some(crate::gitops::Engine::parse(text).map_err(|_| {
                        self.invalid(
                            value,
                            "gitops",
                            text,
                            "use flux, argocd or none: the engine that applies the rendered output",
                        )
                    })?);
                }
                _ => {} // `fields` admitted only the keys above
            }
        }
        if project.name.is_empty() {
            return Err(ProjectError::Missing {
                file: self.file.to_string(),
                pos: root.pos,
                key: "name",
                context: "the project".into(),
            });
        }
        // After `images:`, whatever the key order: both name components.
        let names: Vec<String> = project.components.iter().map(|c| c.name.clone()).collect();
        if let Some(node) = ca_node {
            project.ca_bundles = self.ca_bundles(node, &names)?;
        }
        if let Some(node) = sync_node {
            project.sync = self.sync_rules(node, &names)?;
        }
        if let Some(node) = dev_node {
            project.dev = self.dev(node, &names)?;
        }
        let mut tag_pos = root.pos;
        if let Some(node) = tag_node {
            project.tag_env = self.shared_tag(node)?;
            tag_pos = node.pos;
        }
        self.check_same_as(&mut project)?;
        self.check_variables(&project, tag_pos)?;
        self.check_generated_names(&project)?;
        Ok(project)
    }

    /// The entries of a mapping whose keys must all be in `allowed`.
    fn fields<'n>(
        &self,
        node: &'n Node,
        context: &str,
        allowed: &'static [&'static str],
    ) -> Result<&'n [(Node, Node)], ProjectError> {
        let entries = node
            .as_map()
            .ok_or_else(|| self.wrong(node, context, "a mapping"))?;
        for (key, _) in entries {
            let name = key.as_str().unwrap_or_default();
            if allowed.contains(&name) {
                continue;
            }
            return Err(ProjectError::UnknownKey {
                file: self.file.to_string(),
                pos: key.pos,
                key: name.to_string(),
                context: context.to_string(),
                suggestion: closest(name, allowed.iter().copied()).map(str::to_string),
                expected: allowed,
            });
        }
        Ok(entries)
    }

    fn wrong(&self, node: &Node, key: &str, expected: &'static str) -> ProjectError {
        ProjectError::WrongType {
            file: self.file.to_string(),
            pos: node.pos,
            key: key.to_string(),
            expected,
        }
    }

    fn string<'n>(&self, node: &'n Node, key: &str) -> Result<&'n str, ProjectError> {
        node.as_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| self.wrong(node, key, "a non-empty string"))
    }

    fn variable(&self, node: &Node, key: &str) -> Result<String, ProjectError> {
        let value = self.string(node, key)?;
        if !is_variable_name(value) {
            return Err(self.invalid(
                node,
                key,
                value,
                "a variable name is letters, digits and `_`, not starting with a digit",
            ));
        }
        Ok(value.to_string())
    }

    fn invalid(&self, node: &Node, key: &str, value: &str, reason: &'static str) -> ProjectError {
        ProjectError::InvalidValue {
            file: self.file.to_string(),
            pos: node.pos,
            key: key.to_string(),
            value: berth_io::shown(value),
            reason,
        }
    }

    /// `name`, written at `pos` under `key`, must be a component (a key of `images:`).
    fn known_component(
        &self,
        name: &str,
        pos: Pos,
        key: &str,
        components: &[String],
    ) -> Result<(), ProjectError> {
        if components.iter().any(|c| c == name) {
            return Ok(());
        }
        Err(ProjectError::UnknownKey {
            file: self.file.to_string(),
            pos,
            suggestion: closest(name, components.iter().map(String::as_str)).map(str::to_string),
            key: name.to_string(),
            context: format!(
                "{key} (components are the keys of `images:`{})",
                if components.is_empty() {
                    ", and berth.yaml has none"
                } else {
                    ""
                }
            ),
            expected: &[],
        })
    }

    fn reference(&self, node: &Node, key: &str) -> Result<Reference, ProjectError> {
        Reference::parse(self.string(node, key)?).map_err(|source| ProjectError::InvalidImage {
            file: self.file.to_string(),
            pos: node.pos,
            key: key.to_string(),
            source,
        })
    }

    fn list<'n>(
        &self,
        node: &'n Node,
        key: &str,
        expected: &'static str,
    ) -> Result<&'n [Node], ProjectError> {
        if node.is_null() {
            return Ok(&[]);
        }
        node.as_seq().ok_or_else(|| self.wrong(node, key, expected))
    }

    fn registry(&self, node: &Node) -> Result<Option<String>, ProjectError> {
        if node.is_null() {
            return Ok(None);
        }
        let mut env = None;
        for (k, v) in self.fields(node, "registry", REGISTRY_KEYS)? {
            if k.as_str() == Some("env") {
                env = Some(self.variable(v, "registry.env")?);
            }
        }
        // `registry: {}` says nothing: a registry override without its variable is a mistake.
        match env {
            Some(env) => Ok(Some(env)),
            None => Err(ProjectError::Missing {
                file: self.file.to_string(),
                pos: node.pos,
                key: "env",
                context:
                    "`registry:` (the registry override variable; remove `registry:` for none)"
                        .into(),
            }),
        }
    }

    fn manifests(&self, node: &Node) -> Result<Vec<Manifest>, ProjectError> {
        let expected = "a list of paths, `-`, or `kustomize: DIR` entries";
        let mut out = Vec::new();
        for item in self.list(node, "manifests", expected)? {
            if item.as_map().is_some() {
                for (_, dir) in self.fields(item, "a manifests entry", &["kustomize"])? {
                    out.push(Manifest {
                        source: ManifestSource::Kustomize(PathBuf::from(
                            self.string(dir, "manifests[].kustomize")?,
                        )),
                        pos: dir.pos,
                    });
                }
                continue;
            }
            let source = match self.string(item, "manifests[]")? {
                "-" => ManifestSource::Stdin,
                path => ManifestSource::Path(PathBuf::from(path)),
            };
            out.push(Manifest {
                source,
                pos: item.pos,
            });
        }
        Ok(out)
    }

    /// `imagePaths:` or `configPaths:` (`section`): `{kind, apiVersion?, path}` entries.
    fn field_paths(&self, node: &Node, section: &str) -> Result<Vec<ImagePath>, ProjectError> {
        let mut out = Vec::new();
        for item in self.list(node, section, "a list of {kind, path} entries")? {
            let context = format!("a {section} entry");
            let allowed = match section {
                "configPaths" => CONFIG_PATH_KEYS,
                _ => IMAGE_PATH_KEYS,
            };
            let entries = self.fields(item, &context, allowed)?;
            let (mut kind, mut api_version, mut path, mut key_path) = (None, None, None, None);
            for (k, v) in entries {
                match k.as_str().unwrap_or_default() {
                    "kind" => {
                        kind = Some(self.string(v, &format!("{section}[].kind"))?.to_string())
                    }
                    "apiVersion" => {
                        api_version = Some(
                            self.string(v, &format!("{section}[].apiVersion"))?
                                .to_string(),
                        )
                    }
                    "path" => {
                        let key = format!("{section}[].path");
                        let text = self.string(v, &key)?;
                        let parsed = parse_field_path(text).ok_or_else(|| {
                            self.invalid(v, &key, text, "a dotted field path such as `spec.server.image`; `[]` walks a list (`spec.images[].ref`)")
                        })?;
                        if matches!(parsed.first(), Some(PathSegment::Key(k)) if k == "metadata") {
                            return Err(self.invalid(v, &key, text, "a path under `metadata` would rename or relabel the object itself; point at the field of the spec that names the image or config"));
                        }
                        path = Some((parsed, text.to_string()));
                    }
                    "key" => {
                        let key = format!("{section}[].key");
                        let text = self.string(v, &key)?;
                        key_path = Some(parse_field_path(text).ok_or_else(|| {
                            self.invalid(v, &key, text, "a dotted field path such as `spec.overrideConfig.key`, beside the name `path:` gives")
                        })?);
                    }
                    _ => {}
                }
            }
            let missing = |key| ProjectError::Missing {
                file: self.file.to_string(),
                pos: item.pos,
                key,
                context: context.clone(),
            };
            let (path, text) = path.ok_or_else(|| missing("path"))?;
            out.push(ImagePath {
                kind: kind.ok_or_else(|| missing("kind"))?,
                api_version,
                path,
                key: key_path,
                text,
                pos: item.pos,
            });
        }
        Ok(out)
    }

    /// Two users of one variable are an error (`tag_pos`: where `tag:` is written).
    fn check_variables(&self, project: &Project, tag_pos: Pos) -> Result<(), ProjectError> {
        let mut users: Vec<(&str, String)> = Vec::new();
        if let Some(var) = &project.registry_env {
            users.push((var, "`registry.env`".into()));
        }
        if let Some(var) = &project.tag_env {
            if let Some((_, first)) = users.iter().find(|(v, _)| *v == var.as_str()) {
                return Err(ProjectError::DuplicateVariable {
                    file: self.file.to_string(),
                    pos: tag_pos,
                    var: var.clone(),
                    first: first.clone(),
                    second: "`tag.env`".into(),
                });
            }
            users.push((var, "`tag.env`".into()));
        }
        for c in &project.components {
            let roles = [
                Some((&c.env, "env")),
                Some((&c.tag_env, "tagEnv")),
                c.repository_env.as_ref().map(|v| (v, "repositoryEnv")),
            ];
            for (var, role) in roles.into_iter().flatten() {
                let who = format!("`images.{}.{role}`", c.name);
                if let Some((_, first)) = users.iter().find(|(v, _)| *v == var.as_str()) {
                    return Err(ProjectError::DuplicateVariable {
                        file: self.file.to_string(),
                        pos: c.image_pos,
                        var: var.clone(),
                        first: first.clone(),
                        second: who,
                    });
                }
                users.push((var, who));
            }
        }
        Ok(())
    }
}

/// `spec.containers[].image` into segments; `None` when malformed.
pub fn parse_field_path(text: &str) -> Option<Vec<PathSegment>> {
    let mut out = Vec::new();
    for part in text.split('.') {
        let (key, each) = match part.strip_suffix("[]") {
            Some(key) => (key, true),
            None => (part, false),
        };
        // Field names start with a letter: `5` or `-x` is no path.
        if !key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$')
            || key.contains(['[', ']'])
        {
            return None;
        }
        out.push(PathSegment::Key(key.to_string()));
        if each {
            out.push(PathSegment::Each);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests;
