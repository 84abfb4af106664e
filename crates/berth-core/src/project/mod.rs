//! `berth.yaml`: the project model and its strict loader.
//!
//! Unknown keys are errors (with a "did you mean"), every error carries
//! `file:line:column`, and values are parsed into their types here, once:
//! image references become [`Reference`]s, never strings split later.

use std::path::PathBuf;

use berth_ref::{RefError, Reference, Repository};
use berth_yaml::{Limits, Node, Pos};

use crate::suggest::{closest, hint};

mod accept;
mod components;
mod dev;
mod generated;
mod helm;
mod load;
mod runtime;
pub mod schema;
mod sync;
mod trust;
mod variants;
mod verify;
pub use dev::{Dev, Forward};
pub use generated::{ConfigSpec, Spanned};
pub use helm::{HelmChart, HelmPart};
pub use runtime::Runtime;
pub use sync::{RunStep, SyncPath, SyncRule, SyncTarget};
pub use trust::{
    CaBundleSpec, ClusterObject, ClusterSource, Defaults, Inject, InjectRequest, PasswordRef,
    TrustSpec,
};
pub use variants::{lagging, unknown_variant, Variant, DEFAULT_VARIANT};
pub use verify::{Roots, Signer, TransparencyLog, VerifyPolicy};

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
    "audit",
    "accept",
    "operator",
    "verify",
];
/// The keys of `audit:`.
pub(super) const AUDIT_KEYS: &[&str] = &["exclude"];
const REGISTRY_KEYS: &[&str] = &["env"];
const IMAGE_PATH_KEYS: &[&str] = &["kind", "apiVersion", "path"];
const CONFIG_PATH_KEYS: &[&str] = &["kind", "apiVersion", "path", "key"];

/// `operator:` of berth.yaml: the container that gets `RELATED_IMAGE_*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    /// The workload's kind (`Deployment`).
    pub kind: String,
    /// The workload's name.
    pub name: String,
    /// The container's name.
    pub container: String,
    /// Where `operator:` is written (`berth.yaml:12:3`).
    pub at: crate::place::Place,
}

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
    pub gitops: Option<Option<crate::names::Engine>>,
    /// `audit.exclude`: globs (gitignore syntax, relative to the audited
    /// directory) `berth audit` does not search.
    pub audit_exclude: Vec<String>,
    /// `accept:`: warnings acknowledged at one place each, with the reason.
    pub accepts: Vec<crate::warning::Accept>,
    /// `operator:`: the container that gets the `RELATED_IMAGE_*` variables.
    pub operator: Option<Operator>,
    /// `verify:`: the signatures `berth pin` requires, by component.
    pub verify: Vec<VerifyPolicy>,
}

/// A component as any source declares it (berth.yaml's `images:` or a
/// `Berth`'s `spec.images`): its name, its default image and what matches it.
/// How variables reach it is the source's business ([`Component`] for berth.yaml).
#[derive(Debug, Clone, PartialEq)]
pub struct ComponentSpec {
    /// Its name (the key under `images:`).
    pub name: String,
    /// The default reference.
    pub image: Reference,
    /// `pullPolicy:`; `None` leaves pull policies as they are.
    pub pull_policy: Option<PullPolicy>,
    /// Repositories that are this component: the default's and `match:` entries.
    pub repositories: Vec<Repository>,
    /// `deployed:` (default true); `false`: built and pushed, never in manifests, so
    /// nothing looks for it there.
    pub deployed: bool,
    /// `resource:`: the extended resource a pod running the default image must request.
    pub resource: Option<String>,
    /// `variants:`, in file order: the family's other members (their repositories
    /// are in `repositories` too).
    pub variants: Vec<Variant>,
}

/// One entry of berth.yaml's `images:`: a [`ComponentSpec`] with where it is
/// written and the variables and shared settings that override it.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    /// What any source says of a component.
    pub spec: ComponentSpec,
    /// Where `image:` is written.
    pub image_pos: Pos,
    /// The full-reference override variable (`env:`, default `<NAME>_IMAGE`).
    pub env: String,
    /// The tag-only override variable (`tagEnv:`, default `<NAME>_TAG`).
    pub tag_env: String,
    /// `registry:` (default true); `false` keeps the component out of the registry
    /// override (a third-party image a fork does not mirror).
    pub follows_registry: bool,
    /// `repositoryEnv:`: a variable that replaces the repository and keeps the tag
    /// (operator-sdk's `IMAGE_TAG_BASE`); it wins over the registry override.
    pub repository_env: Option<String>,
    /// `tag:` (default true, but false with `registry: false`); `false` keeps the
    /// component out of the shared tag variable (`tag.env`).
    pub follows_tag: bool,
    /// `sameAs:`: the component whose resolved image is this one's default. `image`
    /// then holds that component's `image:` (for messages); the resolver uses its
    /// resolved reference instead.
    pub same_as: Option<String>,
    /// `helmValues:`: the chart values that receive its resolved image.
    pub helm_values: Vec<(HelmPart, String)>,
    /// `tagSuffix:` (default false): a manifest tag that is the default tag plus a
    /// suffix (`latest-gpu`) is a variant of this component, rewritten to the
    /// resolved tag plus the suffix (`v0.17.0-gpu`), so one component owns a
    /// repository's variants.
    pub tag_suffix: bool,
    /// `relatedImage: true|NAME`: an image an operator pulls at run time, by
    /// this name (the component's when `true`): `render` sets
    /// `RELATED_IMAGE_<NAME>` on `operator:`'s container and fills a
    /// ClusterServiceVersion's `spec.relatedImages`.
    pub related_image: Option<String>,
    /// `variantEnv:` (default `<NAME>_VARIANT`): the variable that selects a variant.
    pub variant_env: String,
    /// `versions: {pattern: REGEX}`: how its tags read as versions, for `berth
    /// outdated` and `berth update` (the common `v1.2.3` scheme by default).
    pub versions: berth_ref::version::Scheme,
    /// `verify:` (default true); `false` keeps the component out of every `verify:` policy.
    pub verify: bool,
}

impl Component {
    /// A component no variable reaches (a `Berth`'s: a controller takes its
    /// overrides from the resource): it follows no shared setting but those a
    /// caller's overrides name.
    pub fn from_spec(spec: ComponentSpec) -> Component {
        Component {
            spec,
            image_pos: Pos::default(),
            env: String::new(),
            tag_env: String::new(),
            follows_registry: true,
            repository_env: None,
            follows_tag: true,
            same_as: None,
            helm_values: Vec::new(),
            tag_suffix: false,
            related_image: None,
            variant_env: String::new(),
            versions: berth_ref::version::Scheme::Standard,
            verify: true,
        }
    }
}

/// berth.yaml's component reads as what any source says of it.
impl std::ops::Deref for Component {
    type Target = ComponentSpec;
    fn deref(&self) -> &ComponentSpec {
        &self.spec
    }
}

/// One entry of `profiles:`: a named set of manifests used instead of `manifests:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The key under `profiles:`.
    pub name: String,
    /// Its manifests, in order.
    pub manifests: Vec<Manifest>,
    /// `variants: {COMPONENT: VARIANT}` of the map form: which member of each
    /// family its manifests run, with where each is written.
    pub variants: Vec<(String, String, Pos)>,
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
    /// `helm: {chart, …}`: the output of `helm template`.
    Helm(Box<HelmChart>),
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
pub(crate) fn is_dns_label(text: &str, max: usize) -> bool {
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
    /// A node of a shape berth.yaml never has: a key that is not text, a YAML tag, an empty
    /// component name.
    #[error("{file}:{pos}: {problem}")]
    Shape {
        /// The file.
        file: String,
        /// Where.
        pos: Pos,
        /// What is wrong, and how to fix it.
        problem: String,
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
            if !c.variants.is_empty() {
                out.push(c.variant_env.as_str());
            }
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

/// `<NAME>_<SUFFIX>`, the name given by [`variable_part`].
pub fn default_variable(component: &str, suffix: &str) -> String {
    let mut var = variable_part(component);
    var.push('_');
    var.push_str(suffix);
    var
}

/// `name` as part of a variable's name: upper-cased, anything but an ASCII
/// letter or digit as `_` (`remote-vllm.v2` → `REMOTE_VLLM_V2`).
pub fn variable_part(name: &str) -> String {
    (name.chars())
        .map(|c| match c.is_ascii_alphanumeric() {
            true => c.to_ascii_uppercase(),
            false => '_',
        })
        .collect()
}

fn is_variable_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

struct Loader<'a> {
    file: &'a str,
}

/// The field path of a ConfigMap's data key `key`: `data.agent`, or quoted
/// when the key has dots (`data["config.yaml"]`).
pub fn data_key_path(key: &str) -> String {
    let dotted = format!("data.{key}");
    match parse_field_path(&dotted).is_some_and(|p| p.len() == 2) {
        true => dotted,
        false => format!("data[\"{key}\"]"),
    }
}

/// `spec.containers[].image` into segments (a key with dots quoted:
/// `data["config.yaml"]`); `None` when malformed.
pub fn parse_field_path(text: &str) -> Option<Vec<PathSegment>> {
    // Field names start with a letter: `5` or `-x` is no path.
    let name = |key: &str| {
        let valid = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$');
        valid.then(|| PathSegment::Key(key.to_string()))
    };
    let end = |rest: &str| rest.find(['.', '[']).unwrap_or(rest.len());
    let first = end(text);
    let mut out = vec![name(&text[..first])?];
    let mut rest = &text[first..];
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("[]") {
            out.push(PathSegment::Each);
            rest = after;
        } else if let Some(after) = rest.strip_prefix('[') {
            // A key with dots, quoted (`data["config.yaml"]`).
            let quote = after.chars().next().filter(|c| *c == '"' || *c == '\'')?;
            let inner = &after[1..];
            let close = inner.find(quote)?;
            if close == 0 {
                return None;
            }
            out.push(PathSegment::Key(inner[..close].to_string()));
            rest = inner[close + 1..].strip_prefix(']')?;
        } else {
            let after = rest.strip_prefix('.')?;
            let next = end(after);
            out.push(name(&after[..next])?);
            rest = &after[next..];
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests;
