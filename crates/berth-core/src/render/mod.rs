//! Render: manifests in, manifests out, with component images resolved.
//!
//! Pure: the caller reads the inputs (files, stdin, `kubectl kustomize`) and
//! writes the output. Each document is loaded, transformed and written before
//! the next is read, so memory stays near the size of input plus output.

mod chart_values;
mod documents;
mod findings;
mod helm;
mod images;
mod inject;
mod input;
mod placeholders;
pub mod pods;
mod refs;
pub mod related;
mod spec;
mod workloads;

use std::ops::Range;

use berth_yaml::{Limits, Node, Pos};

use crate::configs::Generated;
use crate::resolve::Resolution;
use crate::suggest::hint;
pub use chart_values::{
    child_path, default_drift, dotted_keys, for_charts, leaves, lookup, merge_values,
    values_for_charts, ChartValues,
};
use documents::expand_list;
pub use findings::{operator_missing, path_warnings, unreached_overrides, Stray};
pub use helm::{image_values, HelmValuesError};
pub use images::ImageRewriter;
pub use inject::CaInjector;
pub use input::{Input, TextStream};
pub use placeholders::{unfilled_placeholders, Unfilled};
pub use refs::{for_each_reference, referenced, ConfigRewriter, Site, CONFIG_HASH_ANNOTATION};
pub use spec::{Definition, Spec};
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
    pub unparsed_images: Vec<(String, String)>,
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
    pub trust: Vec<(String, String)>,
    /// The names of the pods' containers, when a CA bundle is injected (for a
    /// rule that chose none).
    pub containers: std::collections::BTreeSet<String>,
    /// Keys a chart's output wrote twice in one mapping (the last kept, as helm does).
    pub replaced_keys: Vec<ReplacedKey>,
}

/// A key a chart's output wrote twice in one mapping: its value at `at` is the
/// one kept, as `helm install` and kubectl keep it; the one at `first` is lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplacedKey {
    /// `input:line:column` of the second key.
    pub at: String,
    /// The key.
    pub key: String,
    /// Where the key was first written (same input).
    pub first: Pos,
}

/// An image field whose tag or digest differs from berth.yaml's default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriftFinding {
    /// `file:line:column (Kind/name)`.
    pub at: String,
    /// The field's value.
    pub found: String,
    /// The component (index into the resolution).
    pub component: usize,
}

/// A key a reference asks of a generated config that is not in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingKeyFinding {
    /// `file:line:column (Kind/name)`.
    pub at: String,
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
    fn new(generated: &Generated, at: String, missing: refs::MissingKey) -> Self {
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
type UsedIn = std::collections::BTreeSet<Option<String>>;

/// What [`transform`] saw besides the objects themselves.
struct Transformed {
    /// Image fields that matched a component.
    matched: usize,
    /// Per generated config, the namespaces that use it.
    used_in: Vec<UsedIn>,
    /// The one namespace every object that names one names (none if they differ
    /// or none does): where a config no object uses goes, beside the others.
    home: Option<String>,
    /// Components (indices) no image field matched.
    unmatched: Vec<usize>,
    /// `file:line:column` and value of image fields that are no reference.
    unparsed: Vec<(String, String)>,
    drifted: Vec<DriftFinding>,
    strays: Vec<Stray>,
    missing_keys: Vec<MissingKeyFinding>,
    image_paths_seen: Vec<(bool, bool)>,
    config_paths_seen: Vec<(bool, bool)>,
    related: Vec<related::RelatedFinding>,
    operator_missing: Option<related::RelatedFinding>,
    trust: Vec<(String, String)>,
    containers: std::collections::BTreeSet<String>,
    replaced_keys: Vec<ReplacedKey>,
}

/// Each input object transformed (images, pull policies, CA injection, config
/// references), handed to `each` with its apiVersion and kind; what it saw on the
/// way is returned ([`Transformed`]).
/// The objects rendered so far, by kustomize's resource id (group, kind,
/// namespace, name: not the version), with the first definition's input and
/// position: a second one is an error, as in kustomize.
#[derive(Default)]
struct Seen(std::collections::HashMap<ResourceId, (usize, Pos)>);

/// Finds the components' repositories in text (image strays in ConfigMaps and env).
fn component_scanner(resolution: &Resolution<'_>) -> crate::scan::Scanner {
    crate::scan::Scanner::new(
        resolution
            .images
            .iter()
            .enumerate()
            .map(|(i, r)| (i, r.component.repositories.as_slice())),
    )
}

/// `metadata.<field>` of an object, when it is text.
pub(crate) fn metadata_text<'n>(object: &'n Node, field: &str) -> Option<&'n str> {
    object.get("metadata")?.get(field)?.as_str()
}

/// kustomize's resource id: group, kind, namespace, name.
type ResourceId = (String, String, Option<String>, String);

impl Seen {
    fn admit(
        &mut self,
        inputs: &[Input],
        input_index: usize,
        object: &Node,
        api_version: &str,
        kind: &str,
        namespace: &Option<String>,
    ) -> Result<(), RenderError> {
        let name = metadata_text(object, "name")
            .unwrap_or_default()
            .to_string();
        let group = api_version
            .rsplit_once('/')
            .map_or("", |(g, _)| g)
            .to_string();
        let id = (group, kind.to_string(), namespace.clone(), name.clone());
        if let Some(&(first_input, first_pos)) = self.0.get(&id) {
            let first_file = &inputs[first_input].name;
            return Err(RenderError::Duplicate {
                file: inputs[input_index].name.clone(),
                pos: object.pos,
                object: match namespace {
                    Some(ns) => format!("{kind}/{name} (namespace {ns})"),
                    None => format!("{kind}/{name}"),
                },
                first: format!("{first_file}:{first_pos}"),
            });
        }
        self.0.insert(id, (input_index, object.pos));
        Ok(())
    }
}

/// The one pass over every object of every input, each object checked,
/// rewritten (images, related images, CA bundles, config references), its
/// findings gathered and handed to `each` before the next is read.
/// Longer than 100 lines (about 120): each step is one call, and splitting the
/// per-object closure would thread its eight accumulators through another signature.
fn transform(
    spec: &Spec<'_>,
    inputs: &[Input],
    each: &mut dyn FnMut(Node, String, String),
) -> Result<Transformed, RenderError> {
    let rewriter = ImageRewriter::new(
        spec.resolution,
        &spec.pull_policies,
        spec.image_paths,
        spec.only_overridden,
    );
    let mut injector = CaInjector::new(&spec.ca_bundles, spec.resolution);
    let mut related = related::RelatedImages::new(spec.operator, spec.resolution);
    let mut related_findings = Vec::new();
    let mut trust = Vec::new();
    let mut configs = ConfigRewriter::new(spec.generated);
    let scanner = component_scanner(spec.resolution);
    let mut matched = 0;
    let mut unparsed = Vec::new();
    let mut drifted = Vec::new();
    let mut strays = Vec::new();
    let mut missing_keys = Vec::new();
    let mut seen = Seen::default();
    let mut namespaces = std::collections::BTreeSet::new();
    let mut replaced_keys = Vec::new();
    for (input_index, input) in inputs.iter().enumerate() {
        let replaced = input::for_each_document(input, spec.limits, &mut |doc| {
            if doc.is_null() {
                return Ok(()); // empty documents are skipped
            }
            for mut object in expand_list(&input.name, doc)? {
                let (api_version, kind) = documents::checked(&input.name, &object)?;
                check_collision(spec, input, &object, &kind)?;
                matched += rewriter.rewrite(&mut object, &api_version, &kind);
                // The object too: a kustomize output's line is not in any source file.
                let object_name = metadata_text(&object, "name")
                    .unwrap_or("(no name)")
                    .to_string();
                let at = |pos: Pos| format!("{}:{pos} ({kind}/{object_name})", input.name);
                unparsed.extend(
                    rewriter
                        .take_unparsed()
                        .into_iter()
                        .map(|(p, v)| (at(p), v)),
                );
                related.apply(&mut object, &kind, &object_name, &at, &mut related_findings);
                drifted.extend(rewriter.take_drift().into_iter().map(|d| DriftFinding {
                    at: at(d.pos),
                    found: d.found,
                    component: d.component,
                }));
                findings::strays(
                    &scanner,
                    &mut object,
                    &kind,
                    // What berth rewrote, or wrote itself (no source position).
                    &|pos| rewriter.rewrote_path_field(pos) || pos == Pos::default(),
                    &at,
                    input.values_set.then_some(spec.resolution),
                    &mut strays,
                );
                injector.inject(&mut object, &kind, &at, &mut trust);
                let namespace = metadata_text(&object, "namespace").map(str::to_string);
                configs.rewrite(&mut object, &kind, namespace.as_deref());
                configs.rewrite_paths(
                    &mut object,
                    &api_version,
                    &kind,
                    namespace.as_deref(),
                    spec.config_paths,
                );
                missing_keys.extend(configs.take_missing().into_iter().map(|missing| {
                    MissingKeyFinding::new(
                        &spec.generated[missing.config],
                        at(missing.pos),
                        missing,
                    )
                }));
                seen.admit(
                    inputs,
                    input_index,
                    &object,
                    &api_version,
                    &kind,
                    &namespace,
                )?;
                namespaces.extend(namespace);
                each(object, api_version, kind);
            }
            Ok(())
        })?;
        replaced_keys.extend(replaced.into_iter().map(|r| ReplacedKey {
            at: format!("{}:{}", input.name, r.last),
            key: r.key,
            first: r.first,
        }));
    }
    let mut operator_missing = None;
    if let (Some(operator), false, false) =
        (spec.operator, related.is_empty(), related.operator_seen)
    {
        operator_missing = Some(related::RelatedFinding {
            at: operator.at.clone(),
            problem: format!("`operator:` names container `{}` of {}/{}, which no object of the manifests has, so no `RELATED_IMAGE_*` variable was set: check the workload's kind, name and container", operator.container, operator.kind, operator.name),
        });
    }
    let mut config_paths_seen = configs.paths_seen.clone();
    config_paths_seen.resize(spec.config_paths.len(), (false, false));
    // One namespace for every namespaced object: the spec.generated configs' too.
    let home = (namespaces.len() == 1)
        .then(|| namespaces.pop_first())
        .flatten();
    Ok(Transformed {
        matched,
        used_in: configs.used_in,
        home,
        unmatched: rewriter.unmatched(),
        unparsed,
        drifted,
        strays,
        missing_keys,
        image_paths_seen: rewriter.paths_seen(),
        config_paths_seen,
        related: related_findings,
        operator_missing,
        trust,
        containers: injector.containers_seen,
        replaced_keys,
    })
}

/// A ConfigMap or Secret of the manifests whose name is a generated config's base
/// or generated name: kustomize's own generator output, or an inline copy.
fn check_collision(
    spec: &Spec<'_>,
    input: &Input,
    object: &Node,
    kind: &str,
) -> Result<(), RenderError> {
    let Some(name) = metadata_text(object, "name") else {
        return Ok(());
    };
    let Some(index) = spec
        .generated
        .iter()
        .position(|g| g.kind.as_str() == kind && (g.base_name == name || g.name == name))
    else {
        return Ok(());
    };
    let namespace = metadata_text(object, "namespace");
    Err(RenderError::Collision {
        file: input.name.clone(),
        pos: object.pos,
        object: match namespace {
            Some(ns) => format!("{kind}/{name} (namespace {ns})"),
            None => format!("{kind}/{name}"),
        },
        generated: spec
            .definitions
            .get(index)
            .map(ToString::to_string)
            .unwrap_or_default(),
    })
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
