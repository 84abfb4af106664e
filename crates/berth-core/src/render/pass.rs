//! The one pass over every object of every input: each object checked,
//! rewritten (images, related images, CA bundles, config references), its
//! findings gathered, and handed on before the next is read. [`Pass`] holds the
//! rewriters and what they found; [`transform`] drives it.

use berth_yaml::{Node, Pos};

use super::documents::{self, expand_list};
use super::findings::{self, Stray};
use super::kustomize_names::KustomizeNames;
use super::{input, metadata_text, related};
use super::{
    CaInjector, ConfigRewriter, DriftFinding, ImageRewriter, Input, MissingKeyFinding, RenderError,
    ReplacedKey, Spec,
};
use crate::place::Place;

pub(super) type UsedIn = std::collections::BTreeSet<Option<String>>;

/// What [`transform`] saw besides the objects themselves.
pub(super) struct Transformed {
    /// Image fields that matched a component.
    pub(super) matched: usize,
    /// Per generated config, the namespaces that use it.
    pub(super) used_in: Vec<UsedIn>,
    /// The one namespace every object that names one names (none if they differ
    /// or none does): where a config no object uses goes, beside the others.
    pub(super) home: Option<String>,
    /// Components (indices) no image field matched.
    pub(super) unmatched: Vec<usize>,
    /// `file:line:column` and value of image fields that are no reference.
    pub(super) unparsed: Vec<(crate::place::Place, String)>,
    pub(super) drifted: Vec<DriftFinding>,
    pub(super) strays: Vec<Stray>,
    pub(super) missing_keys: Vec<MissingKeyFinding>,
    pub(super) image_paths_seen: Vec<(bool, bool)>,
    pub(super) config_paths_seen: Vec<(bool, bool)>,
    pub(super) related: Vec<related::RelatedFinding>,
    pub(super) operator_missing: Option<related::RelatedFinding>,
    pub(super) trust: Vec<(crate::place::Place, String)>,
    pub(super) variant_resources: Vec<(crate::place::Place, String)>,
    pub(super) joined_images: Vec<(crate::place::Place, String)>,
    pub(super) containers: std::collections::BTreeSet<String>,
    pub(super) replaced_keys: Vec<ReplacedKey>,
    pub(super) untagged: Vec<(Place, usize)>,
}

/// Each input object transformed (images, pull policies, CA injection, config
/// references), handed to `each` with its apiVersion and kind; what it saw on the
/// way is returned ([`Transformed`]).
pub(super) fn transform(
    spec: &Spec<'_>,
    inputs: &[Input],
    each: &mut dyn FnMut(Node, String, String),
) -> Result<Transformed, RenderError> {
    let mut pass = Pass::new(spec);
    for (index, input) in inputs.iter().enumerate() {
        let replaced = input::for_each_document(input, spec.limits, &mut |doc| {
            if doc.is_null() {
                return Ok(()); // empty documents are skipped
            }
            for object in expand_list(&input.file.to_string(), doc)? {
                pass.object(inputs, index, object, each)?;
            }
            Ok(())
        })?;
        pass.replaced_keys
            .extend(replaced.into_iter().map(|r| ReplacedKey {
                at: Place::in_(input.file.clone()).at(r.last),
                key: r.key,
                first: r.first,
            }));
    }
    pass.names.finish(each);
    Ok(pass.finish())
}

/// The rewriters of one render and what they found so far.
struct Pass<'s, 'r> {
    spec: &'s Spec<'r>,
    rewriter: ImageRewriter<'s>,
    injector: CaInjector<'s>,
    related: related::RelatedImages<'s>,
    configs: ConfigRewriter<'s>,
    names: KustomizeNames<'s>,
    seen: Seen,
    namespaces: std::collections::BTreeSet<String>,
    matched: usize,
    unparsed: Vec<(crate::place::Place, String)>,
    drifted: Vec<DriftFinding>,
    variant_resources: Vec<(Place, String)>,
    joined_images: Vec<(Place, String)>,
    strays: Vec<Stray>,
    missing_keys: Vec<MissingKeyFinding>,
    related_findings: Vec<related::RelatedFinding>,
    trust: Vec<(crate::place::Place, String)>,
    replaced_keys: Vec<ReplacedKey>,
    untagged: Vec<(Place, usize)>,
}

impl<'s, 'r> Pass<'s, 'r> {
    fn new(spec: &'s Spec<'r>) -> Self {
        Pass {
            spec,
            rewriter: ImageRewriter::new(
                spec.resolution,
                &spec.pull_policies,
                spec.image_paths,
                spec.only_overridden,
            ),
            injector: CaInjector::new(&spec.ca_bundles, spec.resolution),
            related: related::RelatedImages::new(spec.operator, spec.resolution),
            configs: ConfigRewriter::new(spec.generated),
            names: KustomizeNames::new(spec.image_paths, spec.config_paths),
            seen: Seen::default(),
            namespaces: std::collections::BTreeSet::new(),
            matched: 0,
            unparsed: Vec::new(),
            drifted: Vec::new(),
            variant_resources: Vec::new(),
            joined_images: Vec::new(),
            strays: Vec::new(),
            missing_keys: Vec::new(),
            related_findings: Vec::new(),
            trust: Vec::new(),
            replaced_keys: Vec::new(),
            untagged: Vec::new(),
        }
    }

    /// One object of `inputs[index]`: checked, rewritten, its findings kept, handed to `each`.
    fn object(
        &mut self,
        inputs: &[Input],
        index: usize,
        mut object: Node,
        each: &mut dyn FnMut(Node, String, String),
    ) -> Result<(), RenderError> {
        let (spec, input) = (self.spec, &inputs[index]);
        let (api_version, kind) = documents::checked(&input.file.to_string(), &object)?;
        check_collision(spec, input, &object, &kind)?;
        let hashed = self.names.before(&object, &kind);
        self.matched += self.rewriter.rewrite(&mut object, &api_version, &kind);
        // The object too: a kustomize output's line is not in any source file.
        let object_name = metadata_text(&object, "name")
            .unwrap_or("(no name)")
            .to_string();
        let at = |pos: Pos| {
            Place::in_(input.file.clone())
                .at(pos)
                .object(format!("{kind}/{object_name}"))
        };
        if let Some(conflict) = self.rewriter.take_conflicts().into_iter().next() {
            return Err(RenderError::VariantConflict(Box::new(
                super::family::Contradiction {
                    at: at(conflict.pos),
                    conflict,
                },
            )));
        }
        let unparsed = self.rewriter.take_unparsed().into_iter();
        self.unparsed.extend(unparsed.map(|(p, v)| (at(p), v)));
        let untagged = self.rewriter.take_untagged().into_iter();
        self.untagged.extend(untagged.map(|(p, i)| (at(p), i)));
        let related = &mut self.related_findings;
        (self.related).apply(&mut object, &kind, &object_name, &at, related);
        let drift = self.rewriter.take_drift().into_iter();
        self.drifted.extend(drift.map(|d| DriftFinding {
            at: at(d.pos),
            found: d.found,
            component: d.component,
            member: d.member,
        }));
        for (index, lacking) in self.rewriter.take_resources() {
            let component = &spec.resolution.images[index].component.name;
            let place = at(lacking.pos).about(format!("{component}/{}", lacking.member));
            let text = super::family::resources_text(component, &lacking);
            self.variant_resources.push((place, text));
        }
        let rewriter = &self.rewriter;
        findings::strays(
            self.rewriter.scanner(),
            &mut object,
            &kind,
            // What berth rewrote, or wrote itself (no source position).
            &|pos| rewriter.rewrote_path_field(pos) || pos == Pos::default(),
            &at,
            input.values_set.then_some(spec.resolution),
            &mut self.strays,
        );
        if input.values_set {
            let joined = &mut self.joined_images;
            findings::joined_images(&mut object, &kind, &at, spec.resolution, joined);
        }
        self.injector
            .inject(&mut object, &kind, &at, &mut self.trust);
        let namespace = metadata_text(&object, "namespace").map(str::to_string);
        let configs = &mut self.configs;
        configs.rewrite(&mut object, &kind, namespace.as_deref());
        let paths = spec.config_paths;
        configs.rewrite_paths(
            &mut object,
            &api_version,
            &kind,
            namespace.as_deref(),
            paths,
        );
        let missing = configs.take_missing().into_iter();
        self.missing_keys.extend(missing.map(|missing| {
            MissingKeyFinding::new(&spec.generated[missing.config], at(missing.pos), missing)
        }));
        self.names.after(&mut object, &kind, hashed);
        let id = (&api_version, &kind, &namespace);
        self.seen.admit(inputs, index, &object, id)?;
        self.namespaces.extend(namespace);
        self.names.hand_on(object, api_version, kind, each);
        Ok(())
    }

    /// What the pass saw, once every object went through it.
    fn finish(mut self) -> Transformed {
        let spec = self.spec;
        let mut operator_missing = None;
        if let (Some(operator), false, false) = (
            spec.operator,
            self.related.is_empty(),
            self.related.operator_seen,
        ) {
            operator_missing = Some(related::RelatedFinding {
                at: operator.at.clone(),
                problem: format!("`operator:` names container `{}` of {}/{}, which no object of the manifests has, so no `RELATED_IMAGE_*` variable was set: check the workload's kind, name and container", operator.container, operator.kind, operator.name),
            });
        }
        let mut config_paths_seen = self.configs.paths_seen.clone();
        config_paths_seen.resize(spec.config_paths.len(), (false, false));
        // One namespace for every namespaced object: the spec.generated configs' too.
        let home = (self.namespaces.len() == 1)
            .then(|| self.namespaces.pop_first())
            .flatten();
        Transformed {
            matched: self.matched,
            used_in: self.configs.used_in,
            home,
            unmatched: self.rewriter.unmatched(),
            unparsed: self.unparsed,
            drifted: self.drifted,
            strays: self.strays,
            missing_keys: self.missing_keys,
            image_paths_seen: self.rewriter.paths_seen(),
            config_paths_seen,
            related: self.related_findings,
            operator_missing,
            trust: self.trust,
            containers: self.injector.containers_seen,
            replaced_keys: self.replaced_keys,
            variant_resources: self.variant_resources,
            joined_images: self.joined_images,
            untagged: self.untagged,
        }
    }
}

/// The objects rendered so far, by kustomize's resource id (group, kind,
/// namespace, name: not the version), with the first definition's input and
/// position: a second one is an error, as in kustomize.
#[derive(Default)]
struct Seen(std::collections::HashMap<ResourceId, (usize, Pos)>);

/// kustomize's resource id: group, kind, namespace, name.
type ResourceId = (String, String, Option<String>, String);

impl Seen {
    /// Admits `object` of `inputs[index]`, given as `(apiVersion, kind, namespace)`.
    fn admit(
        &mut self,
        inputs: &[Input],
        index: usize,
        object: &Node,
        (api_version, kind, namespace): (&String, &String, &Option<String>),
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
            let first_file = &inputs[first_input].file;
            return Err(RenderError::Duplicate {
                file: inputs[index].file.to_string(),
                pos: object.pos,
                object: match namespace {
                    Some(ns) => format!("{kind}/{name} (namespace {ns})"),
                    None => format!("{kind}/{name}"),
                },
                first: format!("{first_file}:{first_pos}"),
            });
        }
        self.0.insert(id, (index, object.pos));
        Ok(())
    }
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
        file: input.file.to_string(),
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
