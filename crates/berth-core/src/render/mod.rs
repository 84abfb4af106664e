//! Render: manifests in, manifests out, with component images resolved.
//!
//! Pure: the caller reads the inputs (files, stdin, `kubectl kustomize`) and
//! writes the output. Each document is loaded, transformed and written before
//! the next is read, so memory stays near the size of input plus output (an
//! object naming a kustomize-hashed ConfigMap not read yet waits for it:
//! `kustomize_names.rs`).

mod chart_values;
mod documents;
mod family;
mod findings;
mod helm;
mod images;
mod inject;
mod input;
mod kustomize_names;
mod pass;
mod placeholders;
pub mod pods;
mod refs;
pub mod related;
mod spec;
mod tag_default;
mod workloads;

use std::ops::Range;

use berth_yaml::{Limits, Node, Pos};

use crate::configs::Generated;
use crate::resolve::Resolution;
use crate::suggest::hint;
pub use chart_values::{
    child_path, default_drift, dotted_keys, for_charts, leaves, lookup, lookup_under, merge_values,
    values_for_charts, ChartValues, Layer,
};
pub use family::{Contradiction, Resources, VariantConflict};
pub use findings::{operator_missing, path_warnings, unreached_overrides, Stray};
pub use helm::{image_values, HelmValuesError};
pub use images::ImageRewriter;
pub use inject::CaInjector;
pub use input::{Input, TextStream};
use pass::{transform, Transformed, UsedIn};
pub use placeholders::{unfilled_placeholders, Unfilled};
pub use refs::{for_each_reference, referenced, ConfigRewriter, Site, CONFIG_HASH_ANNOTATION};
pub use spec::{Definition, Spec};
pub use tag_default::{empty_default, EmptyDefault};
pub use workloads::{workloads, workloads_of, PodSelector, Workload};

/// Render settings beyond the project and the resolution.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Pull policies by component, as given (the CLI's `--pull-policy NAME=POLICY`).
    pub pull_policies: Vec<(String, String)>,
    /// How messages name that source, `{component}` standing for the component's
    /// name (the CLI: `--pull-policy {component}=`); empty: `pull policy override {component}=`.
    pub pull_policy_source: String,
    /// Limits applied to every input document.
    pub limits: Limits,
    /// Rewrite only the images of components an override touched (a variable, a
    /// flag, the registry prefix, the lock): as a Helm post-renderer, the chart's
    /// own tags stay unless berth was asked to change them.
    pub only_overridden: bool,
}

/// The rendered stream and where each object is in it.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The YAML stream, `---` between objects.
    pub yaml: String,
    /// One entry per object, in output order.
    pub objects: Vec<ObjectInfo>,
    /// Image fields that matched a component.
    pub images_matched: usize,
    /// What `berth validate` warns about.
    pub findings: Findings,
}

/// What a render saw that is probably a mistake, though not an error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// Components whose image no container (or image path) in the inputs has.
    pub unmatched_components: Vec<String>,
    /// Configs and CA bundles no object refers to.
    pub unused_configs: Vec<String>,
    /// `file:line:column (Kind/name)` and value of image fields that are neither a
    /// reference nor a placeholder of a component's variable (`${NOPE_IMAGE}`, `BAD REF`).
    pub unparsed_images: Vec<(crate::place::Place, String)>,
    /// Components (indices into the resolution) no image field matched.
    pub unmatched: Vec<usize>,
    /// Image fields whose own tag or digest berth replaced with berth.yaml's default
    /// although no override was active.
    pub drifted: Vec<DriftFinding>,
    /// Component images where berth does not rewrite (ConfigMap data, env values).
    pub strays: Vec<Stray>,
    /// Keys asked of generated configs that they do not have.
    pub missing_keys: Vec<MissingKeyFinding>,
    /// Per `imagePaths` entry: an object of its kind was seen; a field was at its path.
    pub image_paths_seen: Vec<(bool, bool)>,
    /// The same per `configPaths` entry.
    pub config_paths_seen: Vec<(bool, bool)>,
    /// Related images the manifests disagree with or that name no component.
    pub related: Vec<related::RelatedFinding>,
    /// `operator:`'s container was in no object (judged over every manifest
    /// set, like an unmatched component: a profile may leave the operator out).
    pub operator_missing: Option<related::RelatedFinding>,
    /// `(where, what)`: a CA bundle's variable a container already set otherwise.
    pub trust: Vec<(crate::place::Place, String)>,
    /// The names of the pods' containers, when a CA bundle is injected (for a
    /// rule that chose none).
    pub containers: std::collections::BTreeSet<String>,
    /// Keys a chart's output wrote twice in one mapping (the last kept, as helm does).
    pub replaced_keys: Vec<ReplacedKey>,
    /// `(where, what)`: a container that does not request the extended resource
    /// the family member it runs needs, or requests another member's.
    pub variant_resources: Vec<(crate::place::Place, String)>,
    /// Container images of a chart's output that join a prefix to a component's
    /// whole repository (a `repository:` path the chart completes), with the text.
    pub joined_images: Vec<(crate::place::Place, String)>,
    /// Repositories spelt without a tag in text an `imagePaths` entry reaches,
    /// of components an override touched (where, component index): the program
    /// appends its own tag there.
    pub untagged: Vec<(crate::place::Place, usize)>,
}

/// A key a chart's output wrote twice in one mapping: its value at `at` is the
/// one kept, as `helm install` and kubectl keep it; the one at `first` is lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplacedKey {
    /// `input:line:column` of the second key.
    pub at: crate::place::Place,
    /// The key.
    pub key: String,
    /// Where the key was first written (same input).
    pub first: Pos,
}

/// An image field whose tag or digest differs from berth.yaml's default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriftFinding {
    /// `file:line:column (Kind/name)`.
    pub at: crate::place::Place,
    /// The field's value.
    pub found: String,
    /// The component (index into the resolution).
    pub component: usize,
    /// The family member the field runs, and the reference berth writes for it.
    pub member: Option<(String, String)>,
}

/// A key a reference asks of a generated config that is not in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingKeyFinding {
    /// `file:line:column (Kind/name)`.
    pub at: crate::place::Place,
    /// The field that asks.
    pub field: &'static str,
    /// The config's base name.
    pub config: String,
    /// The key asked for.
    pub key: String,
    /// The keys the config has.
    pub available: Vec<String>,
}

impl MissingKeyFinding {
    /// The finding for `missing`, a key config `generated` lacks, asked for at `at`.
    fn new(generated: &Generated, at: crate::place::Place, missing: refs::MissingKey) -> Self {
        MissingKeyFinding {
            at,
            field: missing.field,
            config: generated.base_name.clone(),
            key: missing.key,
            available: generated
                .data
                .iter()
                .chain(&generated.binary_data)
                .map(|(k, _)| k.clone())
                .collect(),
        }
    }
}

/// Identity of a rendered object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name`, if any.
    pub name: Option<String>,
    /// `metadata.namespace`, if any.
    pub namespace: Option<String>,
    /// Its bytes in [`Rendered::yaml`] (without the `---` separator).
    pub range: Range<usize>,
}

/// Why a render failed. Nothing is written when it does.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RenderError {
    /// A container runs one member of a family while another was selected: the
    /// overlay's image and the selection disagree, and neither may win silently.
    #[error("{0}")]
    VariantConflict(Box<family::Contradiction>),
    /// A mapping key that is a mapping or a list: no Kubernetes object has one, and
    /// `name: {{ .Release.Name }}` is read as one.
    #[error("{file}:{pos}: a mapping key that is not text, which no Kubernetes object has; `{{{{ … }}}}` reads as one in YAML: if this is an unrendered template, run `helm template` (or your templating step) first")]
    KeyNotText {
        /// The input.
        file: String,
        /// Where the key is.
        pos: Pos,
    },
    /// A YAML tag outside the core schema (`!Ref`, `!foo`): Kubernetes reads plain data.
    #[error("{file}:{pos}: the YAML tag `{tag}` means nothing to Kubernetes (only the core `!!str`, `!!int`, … do); remove it, or run the tool that understands it first")]
    CustomTag {
        /// The input.
        file: String,
        /// Where the tagged node is.
        pos: Pos,
        /// The tag as written.
        tag: String,
    },
    /// Not valid YAML, and it has `{{`: most likely an unrendered template.
    #[error("{file}:{source}; it looks like an unrendered template (it has `{{{{ … }}}}`): run `helm template` (or your templating step) first and render its output")]
    Template {
        /// The input.
        file: String,
        /// The YAML error, with its position.
        source: berth_yaml::Error,
    },
    /// The same object twice: which one is meant is ambiguous (kustomize refuses too).
    #[error("{file}:{pos}: {object} is defined twice (first at {first}); remove one, or give them different names or namespaces")]
    Duplicate {
        /// The input of the second definition.
        file: String,
        /// Where the second definition starts.
        pos: Pos,
        /// `Kind/name (namespace ns)`.
        object: String,
        /// `file:line:column` of the first.
        first: String,
    },
    /// A stream stopped before its end: a read error, a size limit, bytes that are not UTF-8.
    #[error("{file}: {message}")]
    Read {
        /// The input.
        file: String,
        /// What stopped it.
        message: String,
    },
    /// An input is not valid YAML (or breaks a limit).
    #[error("{file}:{source}")]
    Yaml {
        /// The input.
        file: String,
        /// What is wrong, and where.
        source: berth_yaml::Error,
    },
    /// A document lacks `apiVersion` or `kind`, or is not a mapping.
    #[error("{file}:{pos}: not a Kubernetes object: {problem}")]
    NotAnObject {
        /// The input.
        file: String,
        /// Where the document starts.
        pos: Pos,
        /// What is missing.
        problem: &'static str,
    },
    /// An object of the manifests has the id or base name of a generated config.
    #[error("{file}:{pos}: {object} is also what berth generates from {generated}: two objects would claim one name (or the manifests' copy would be left unused beside berth's); remove it from the manifests (a kustomize `configMapGenerator`/`secretGenerator` or an inline copy), or rename the berth entry")]
    Collision {
        /// The input.
        file: String,
        /// Where the object starts.
        pos: Pos,
        /// `ConfigMap/name (namespace ns)`.
        object: String,
        /// `berth.yaml:L:C (`configs.NAME`)`.
        generated: String,
    },
    /// A pull-policy override names no component.
    #[error("{source_name}…: no component `{name}` in {file}{}", hint(suggestion.as_deref()))]
    UnknownComponent {
        /// The override as its source names it (`--pull-policy web=`).
        source_name: String,
        /// The name given.
        name: String,
        /// The project file.
        file: String,
        /// The closest component name.
        suggestion: Option<String>,
    },
    /// A pull-policy override gives an unknown policy.
    #[error("{source_name}{value}: use one of auto, Always, IfNotPresent, Never")]
    InvalidPullPolicy {
        /// The override as its source names it (`--pull-policy web=`).
        source_name: String,
        /// The component.
        name: String,
        /// The value given.
        value: String,
    },
}

/// Renders `inputs` in order, after the `generated` configs (each emitted in
/// every namespace that uses it, or once in the manifests' one namespace, if
/// they have one, when none does), as
/// one YAML stream: the text edge of [`render_objects`], written object by object
/// so memory stays near the size of the output.
pub fn render(spec: &Spec<'_>, inputs: &[Input]) -> Result<Rendered, RenderError> {
    let total: usize = inputs.iter().map(|i| i.text.len()).sum(); // 0 for streams
    let mut out = Rendered {
        yaml: String::with_capacity(total + total / 8),
        objects: Vec::new(),
        images_matched: 0,
        findings: Findings::default(),
    };
    let t = transform(spec, inputs, &mut |object, api_version, kind| {
        emit(&mut out, object, api_version, kind)
    })?;
    out.images_matched = t.matched;
    let used_in = t.used_in.clone();
    let home = t.home.clone();
    out.findings = Findings::new(spec.generated, spec.resolution, t);
    Ok(prepend_generated(
        out,
        spec.generated,
        &used_in,
        home.as_deref(),
    ))
}

/// The rendered objects as YAML trees, generated configs first: what `apply` and
/// the controller send, with no text in between.
#[derive(Debug, Clone)]
pub struct RenderedObjects {
    /// The objects, in output order.
    pub objects: Vec<Node>,
    /// Image fields that matched a component.
    pub images_matched: usize,
    /// What `berth validate` warns about.
    pub findings: Findings,
}

impl Findings {
    fn new(generated: &[Generated], resolution: &Resolution<'_>, t: Transformed) -> Self {
        Findings {
            unmatched_components: t
                .unmatched
                .iter()
                .map(|&i| resolution.images[i].component.name.clone())
                .collect(),
            unused_configs: generated
                .iter()
                .zip(&t.used_in)
                .filter(|(_, used)| used.is_empty())
                .map(|(g, _)| g.base_name.clone())
                .collect(),
            unparsed_images: t.unparsed,
            unmatched: t.unmatched,
            drifted: t.drifted,
            strays: t.strays,
            missing_keys: t.missing_keys,
            image_paths_seen: t.image_paths_seen,
            config_paths_seen: t.config_paths_seen,
            related: t.related,
            operator_missing: t.operator_missing,
            trust: t.trust,
            containers: t.containers,
            replaced_keys: t.replaced_keys,
            variant_resources: t.variant_resources,
            joined_images: t.joined_images,
            untagged: t.untagged,
        }
    }
}

/// [`render`], returning the objects instead of text.
pub fn render_objects(spec: &Spec<'_>, inputs: &[Input]) -> Result<RenderedObjects, RenderError> {
    let mut body = Vec::new();
    let t = transform(spec, inputs, &mut |object, _, _| body.push(object))?;
    let mut objects: Vec<Node> = generated_objects(spec.generated, &t.used_in, t.home.as_deref())
        .map(|(node, _)| node)
        .collect();
    objects.extend(body);
    Ok(RenderedObjects {
        objects,
        images_matched: t.matched,
        findings: Findings::new(spec.generated, spec.resolution, t),
    })
}

/// The namespaces that use one generated config (`None`: an object without one).
/// `metadata.<field>` of an object, when it is text.
pub(crate) fn metadata_text<'n>(object: &'n Node, field: &str) -> Option<&'n str> {
    object.get("metadata")?.get(field)?.as_str()
}

/// Each generated config in every namespace that uses it (once in `home`, the
/// manifests' one namespace, if none does), with its kind.
fn generated_objects<'g>(
    generated: &'g [Generated],
    used_in: &'g [UsedIn],
    home: Option<&'g str>,
) -> impl Iterator<Item = (Node, &'static str)> + 'g {
    generated
        .iter()
        .zip(used_in)
        .flat_map(move |(config, namespaces)| {
            let namespaces: Vec<Option<String>> = if namespaces.is_empty() {
                vec![home.map(str::to_string)]
            } else {
                namespaces.iter().cloned().collect()
            };
            namespaces
                .into_iter()
                .map(move |ns| (config.to_node(ns.as_deref()), config.kind.as_str()))
        })
}

/// Generated objects go first, so `kubectl apply` creates them before their users.
fn prepend_generated(
    body: Rendered,
    generated: &[Generated],
    used_in: &[UsedIn],
    home: Option<&str>,
) -> Rendered {
    if generated.is_empty() {
        return body;
    }
    let mut out = Rendered {
        yaml: String::new(),
        objects: Vec::new(),
        images_matched: body.images_matched,
        findings: body.findings.clone(),
    };
    for (node, kind) in generated_objects(generated, used_in, home) {
        emit(&mut out, node, "v1".into(), kind.into());
    }
    if !body.objects.is_empty() {
        out.yaml.push_str("---\n");
    }
    let shift = out.yaml.len();
    out.yaml.push_str(&body.yaml);
    out.objects.extend(body.objects.into_iter().map(|mut o| {
        o.range = o.range.start + shift..o.range.end + shift;
        o
    }));
    out
}

fn emit(out: &mut Rendered, object: Node, api_version: String, kind: String) {
    if !out.objects.is_empty() {
        out.yaml.push_str("---\n");
    }
    let start = out.yaml.len();
    berth_yaml::write_document(&mut out.yaml, &object);
    let text = |key: &str| metadata_text(&object, key).map(str::to_string);
    out.objects.push(ObjectInfo {
        api_version,
        kind,
        name: text("name"),
        namespace: text("namespace"),
        range: start..out.yaml.len(),
    });
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod related_tests;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod inject_tests;

#[cfg(test)]
mod kustomize_names_tests;
