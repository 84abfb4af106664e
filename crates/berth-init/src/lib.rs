//! `berth init`, above the core: a first berth.yaml from what a repository already says — its
//! kustomizations, Helm charts and YAML manifests, the images their pods run
//! (and charts' values hold), and the image variables its Makefile defines.
//! Pure: the CLI reads the files and hands them over as [`Facts`]; this
//! decides ([`propose`]) and the [`Proposal`] writes and explains itself.

#![warn(missing_docs)]

mod chart_variants;
mod charts;
pub mod check;
mod components;
mod composed;
mod config_images;
mod deployed;
mod families;
mod manifests;
mod named;
mod names;
mod proposal;
mod related;
mod salvage;
pub use berth_make::{make_vars, MakeVar, EXPANSION_LIMIT};
use berth_make::{Defs, Unexpandable, EXPANSION_DEPTH};
pub use chart_variants::variant_of_file;
pub use charts::Chart;
use components::components;
pub use manifests::candidates;
use manifests::{add_charts, bundle_input, manifests_and_profiles};
pub use proposal::{Proposal, Proposed, ProposedOperator, ProposedVariant, Source};
pub use salvage::salvage;

use std::collections::BTreeMap;

use berth_ref::Reference;
use berth_yaml::{Limits, Node};

/// A kustomization found in the repository.
#[derive(Debug, Clone)]
pub struct Kustomization {
    /// Its directory, relative to the repository (`config/default`).
    pub dir: String,
    /// Its `resources:`, `bases:` and `components:` entries, as written.
    pub resources: Vec<String>,
    /// Its `images:` entries: `(name, newName, newTag)`.
    pub images: Vec<(String, Option<String>, Option<String>)>,
}

#[cfg(test)]
impl Kustomization {
    /// One with `resources:` and no `images:`, for the tests' facts.
    pub(crate) fn with(dir: &str, resources: &[&str]) -> Kustomization {
        Kustomization {
            dir: dir.into(),
            resources: resources.iter().map(|r| r.to_string()).collect(),
            images: Vec::new(),
        }
    }
}

/// What the CLI found.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// The repository's directory name (the project's name by default).
    pub name: String,
    /// Every kustomization.
    pub kustomizations: Vec<Kustomization>,
    /// YAML files that hold Kubernetes objects: `(relative path, text)`.
    pub manifests: Vec<(String, String)>,
    /// Helm charts (not the subcharts inside one).
    pub charts: Vec<Chart>,
    /// Make variables, in file order.
    pub make_vars: Vec<MakeVar>,
    /// The Makefiles' whole text, `(file, text)`: recipes compose images too.
    pub make_texts: Vec<(String, String)>,
    /// Candidate kustomizations ([`candidates`]) that did not build: (directory,
    /// why, in one line).
    pub unbuildable: Vec<(String, String)>,
    /// Of [`Facts::unbuildable`], the directories whose inputs are generated
    /// (gitignored, written by a make target): where the images likely are.
    pub generated_inputs: Vec<String>,
    /// Charts `helm template` refuses with their own values (a value only
    /// their user can give): (directory, why, in one line).
    pub unrenderable: Vec<(String, String)>,
    /// What each other chart renders with its own values, `(directory, YAML)`:
    /// an image its templates join from two values (Kubeflow's katib:
    /// `global.imageRegistry` and `controller.image.repository`) is read there.
    pub chart_outputs: Vec<(String, String)>,
    /// JSON files (`(relative path, text)`), read when a manifest sets
    /// `RELATED_IMAGE_*` variables: where an operator may keep the images
    /// those stand for.
    pub data: Vec<(String, String)>,
    /// What the candidates that built rendered (`kubectl kustomize`), as
    /// `(directory, YAML)` in candidate order, when they were built: images
    /// only in files none renders are no components, and the tags come from
    /// the first output that runs the image.
    pub built: Option<Vec<(String, String)>>,
}

/// One project image found.
struct Found {
    reference: Reference,
    at: String,
    /// Where a chart's values carry it: `helmValues:` entries (part, path).
    helm_values: Vec<(&'static str, String)>,
    /// Found in a chart's values (whose empty tags are the appVersion): a
    /// tag the manifests carry wins over it.
    in_chart: bool,
}

/// The `domain/first-path-component` of a reference: what "the project's
/// registry" means (`ghcr.io/llm-d`).
fn owner(reference: &Reference) -> String {
    let path = reference.path();
    let first = path.split('/').next().unwrap_or(path);
    if path.contains('/') {
        format!("{}/{first}", reference.domain())
    } else {
        reference.domain().to_string()
    }
}

/// The images the charts' values name, each with the values paths that set it.
fn chart_images(facts: &Facts, notes: &mut Vec<String>) -> Vec<Found> {
    let mut found = Vec::new();
    // A chart helm refuses to render is in no profile: its images are not the
    // project's, nor are a library's that only such charts use.
    let refused = |c: &Chart| facts.unrenderable.iter().any(|(d, _)| *d == c.dir);
    let renders = |c: &&Chart| {
        if refused(c) || !c.library {
            return !refused(c);
        }
        let users: Vec<&Chart> = (facts.charts.iter())
            .filter(|u| u.dependencies.iter().any(|(name, _)| *name == c.name))
            .collect();
        users.is_empty() || users.iter().any(|u| !refused(u))
    };
    for chart in facts.charts.iter().filter(renders) {
        let mut images = charts::images(chart, &facts.charts, notes);
        let output = (facts.chart_outputs.iter()).find(|(dir, _)| *dir == chart.dir);
        if let Some(values) = &chart.values {
            let rendered = output.map(|(_, o)| composed::rendered_images(o));
            for image in &mut images {
                let seen = rendered
                    .as_ref()
                    .is_some_and(|rendered| composed::as_rendered(image, values, rendered, notes));
                if !seen {
                    composed::joined_in_templates(image, values, &chart.templates, notes);
                }
            }
        }
        found.extend(images.into_iter().map(|i| Found {
            reference: i.reference,
            at: i.at,
            helm_values: i.helm_values,
            in_chart: true,
        }));
    }
    found
}

/// The variable `registry: {env: …}` names and why: the Makefile's registry
/// variable, else one its image names compose, else `IMAGE_REGISTRY` — unless
/// make builds an image no component's variable moves (berth's invented
/// variable would leave it behind; a note says so).
fn registry_choice(
    facts: &Facts,
    registry_var: Option<&(String, String, String)>,
    named: &[berth_make::NameOnly],
    images: &[Proposed],
    notes: &mut Vec<String>,
) -> Option<(String, String)> {
    let built = berth_make::built_images(&facts.make_texts);
    let mut vars: Vec<&str> = named.iter().map(|n| n.var.as_str()).collect();
    vars.extend(component_variables(images));
    match (registry_var, named::registry(named)) {
        (Some((n, _, at)), _) => Some((n.clone(), format!("registry: {n} (from {at}) moves the project's images"))),
        (None, Some(composed)) => Some(composed),
        (None, None) => match named::left_behind(&built, &vars) {
            None => Some(("IMAGE_REGISTRY".to_string(), "registry: IMAGE_REGISTRY moves the project's images (no registry variable in the Makefile)".to_string())),
            Some((image, at)) => {
                notes.push(format!("registry: none written: the Makefile has no registry variable, and make builds `{image}` ({at}), which no component's variable moves; one berth invented would leave it behind (add `registry: {{env: …}}` once every image make builds follows it)"));
                None
            }
        },
    }
}

/// Decides a first berth.yaml.
pub fn propose(facts: &Facts) -> Proposal {
    let mut notes = Vec::new();
    let (mut manifests, mut profiles) = manifests_and_profiles(facts, &mut notes);
    add_charts(facts, &mut manifests, &mut profiles, &mut notes);
    let built = facts.built.as_deref().map(built_references);
    let (mut found, placeholders) = images_in_manifests(facts, built.as_ref(), &mut notes);
    found.extend(chart_images(facts, &mut notes));
    let families = families::families(facts, &manifests);
    claim_families(&families, &mut found);
    let defined = read_make_vars(facts, &placeholders, &mut notes);
    // A placeholder's image comes from the Makefile variable of that name.
    for (var, at) in &placeholders {
        if let Some((_, value, _)) = defined.iter().find(|(n, _, _)| n == var) {
            if let Ok(reference) = Reference::parse(value) {
                found.push(Found {
                    reference,
                    at: at.clone(),
                    helm_values: Vec::new(),
                    in_chart: false,
                });
            }
        }
    }
    let registry_var = defined
        .iter()
        .find(|(n, _, _)| n == "IMAGE_REGISTRY" || n == "REGISTRY")
        .map(|(n, v, at)| (n.clone(), v.clone(), at.clone()));
    let project_owner = project_owner(&found, &defined, registry_var.as_ref());
    let sources = facts.built.as_deref().unwrap_or(&facts.manifests);
    let config_texts = config_images::config_texts(sources);
    let spelt = config_images::spelt_images(&config_texts, project_owner.as_deref(), &found);
    found.extend(spelt);
    let named = berth_make::name_only(&facts.make_vars, &facts.make_texts);
    let shared_tag = named::tag(&named, &defined);
    let shared_def = shared_tag
        .as_ref()
        .and_then(|(var, _)| defined.iter().find(|(n, _, _)| n == var));
    let mut images = components(
        (facts, built.as_ref()),
        (&found, &named, shared_def),
        &defined,
        project_owner.as_deref(),
        &mut notes,
    );
    deployed::link(facts, &mut images, &mut notes);
    let mut profile_variants =
        attach_families(facts, &families, &mut images, &profiles, &mut notes);
    let chart_families = chart_variants::chart_families(&facts.charts, &mut notes);
    chart_variants::attach(
        &facts.charts,
        &chart_families,
        &mut images,
        &mut profiles,
        &mut profile_variants,
        &mut notes,
    );
    let operator = related::operator(sources).and_then(|operator| {
        let third_party = |repo: &str| {
            project_owner
                .as_ref()
                .is_some_and(|o| !repo.starts_with(&format!("{o}/")))
        };
        related::propose(
            &operator,
            &facts.data,
            &third_party,
            &mut images,
            &mut notes,
        )
    });
    let mut proposal = Proposal {
        name: project_name(&facts.name),
        manifests,
        profiles,
        profile_variants,
        ..Proposal::default()
    };
    if !images.is_empty() {
        proposal.registry =
            registry_choice(facts, registry_var.as_ref(), &named, &images, &mut notes).map(
                |(var, why)| {
                    notes.push(why);
                    var
                },
            );
        proposal.tag = shared_tag.map(|(var, why)| {
            notes.push(why);
            var
        });
        proposal.operator = operator;
        proposal.image_paths = config_images::image_paths(&config_texts, &images, &mut notes);
    }
    proposal.components = images;
    proposal.notes = notes;
    proposal
}

/// A family is one component: its default member's image is found (where it is
/// set), its other members' repositories are the family's, not components.
fn claim_families(families: &[families::Family], found: &mut Vec<Found>) {
    for family in families {
        let default = &family.members[0];
        let others: Vec<&berth_ref::Repository> = (family.members[1..].iter())
            .map(|m| m.image.repository())
            .filter(|r| *r != default.image.repository())
            .collect();
        found.retain(|f| !others.contains(&f.reference.repository()));
        if !found
            .iter()
            .any(|f| f.reference.repository() == default.image.repository())
        {
            found.push(Found {
                reference: default.image.clone(),
                at: format!("{}/kustomization.yaml", default.dir),
                helm_values: Vec::new(),
                in_chart: false,
            });
        }
    }
}

/// Each family's other members as its component's `variants:`, and each
/// profile whose overlays include a member selecting it.
fn attach_families(
    facts: &Facts,
    families: &[families::Family],
    images: &mut [Proposed],
    profiles: &[(String, Vec<Source>)],
    notes: &mut Vec<String>,
) -> Vec<(String, Vec<(String, String)>)> {
    let mut selected: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for family in families {
        let default = &family.members[0];
        let names: Vec<String> = images.iter().map(|c| c.name.clone()).collect();
        let Some(component) = (images.iter_mut()).find(|c| {
            Reference::parse(&c.image).is_ok_and(|r| r.repository() == default.image.repository())
        }) else {
            continue;
        };
        // Named after the family, not its default build, unless a Makefile named it.
        if let Some(stem) = family.stem().filter(|s| !names.contains(s)) {
            if component.env.is_none() && component.tag_env.is_none() {
                notes.push(format!(
                    "component `{}` is called `{stem}`: what its family's repositories share",
                    component.name
                ));
                component.name = stem;
            }
        }
        component.variants = (family.members[1..].iter())
            .map(|m| {
                let (image, tag_suffix) = family.variant(m);
                ProposedVariant {
                    name: m.name.clone(),
                    image,
                    tag_suffix,
                }
            })
            .collect();
        notes.push(format!(
            "component `{}`: a family of {} images that kustomizations set for `{}` ({} the default, from {}); the others are its variants: {}",
            component.name,
            family.members.len(),
            family.name,
            default.image,
            default.dir,
            (family.members[1..].iter()).map(|m| format!("{} ({})", m.name, m.dir)).collect::<Vec<_>>().join(", ")
        ));
        for (profile, sources) in profiles {
            let runs = family.members[1..].iter().find(|m| {
                sources.iter().any(|s| matches!(s, Source::Kustomize(dir) if families::includes(facts, dir, &m.dir)))
            });
            let Some(member) = runs else { continue };
            let pick = (component.name.clone(), member.name.clone());
            match selected.iter_mut().find(|(p, _)| p == profile) {
                Some((_, list)) => list.push(pick),
                None => selected.push((profile.clone(), vec![pick])),
            }
        }
    }
    selected
}

/// The `env:`, `tagEnv:` and `repositoryEnv:` variables of the components
/// proposed in `images`.
fn component_variables(images: &[Proposed]) -> Vec<&str> {
    (images.iter())
        .flat_map(|c| [&c.env, &c.tag_env, &c.repository_env])
        .filter_map(|v| v.as_deref())
        .collect()
}

/// A Makefile variable berth init read: name, expanded value, where it is defined.
type Defined = (String, String, String);

/// The images of every manifest's pods (kustomizations' `images:` applied), and the
/// `${VAR}` placeholders standing for images, with where each is.
fn images_in_manifests(
    facts: &Facts,
    outputs: Option<&Built>,
    notes: &mut Vec<String>,
) -> (Vec<Found>, Vec<(String, String)>) {
    // --- images: pod containers of every manifest, as the kustomizations that include it rename them.
    let renames = families::Renames::new(facts);
    let mut found: Vec<Found> = Vec::new();
    let mut placeholders: Vec<(String, String)> = Vec::new(); // variable, at
                                                              // With kustomizations, what they build is what the project deploys: YAML
                                                              // outside every kustomization's directory (regression fixtures, loose
                                                              // examples) is not read for components.
    let built: Vec<String> = facts
        .kustomizations
        .iter()
        .filter(|k| !bundle_input(&k.dir))
        .map(|k| normalize(&k.dir))
        .collect();
    let rendered = |path: &str| {
        built.is_empty()
            || built
                .iter()
                .any(|d| d == "." || path.starts_with(&format!("{d}/")))
    };
    let outside = facts.manifests.iter().filter(|(p, _)| !rendered(p)).count();
    if outside > 0 {
        notes.push(format!(
            "left out {outside} YAML file(s) that no kustomization's directory holds: components come from what the kustomizations build"
        ));
    }
    // What the candidate overlays built (when kubectl could build them): an image
    // only in a file none of them renders (an unused patch) is no component.
    let mut unbuilt: Vec<String> = Vec::new();
    for (path, text) in facts.manifests.iter().filter(|(p, _)| rendered(p)) {
        if berth_yaml::load_all(text, Limits::default()).is_err() {
            notes.push(format!("{path}: not valid YAML, skipped"));
            continue;
        }
        let images = pod_images(text, path);
        for (text, at) in images {
            if let Some(var) = text.strip_prefix("${").and_then(|t| t.strip_suffix('}')) {
                placeholders.push((var.to_string(), at));
                continue;
            }
            let references = renamed(&renames, path, &text);
            if references.is_empty() {
                continue; // no image reference (`ko://…`), before or after kustomize's rename
            }
            let mut kept = 0;
            for reference in references {
                let reference = match outputs {
                    Some(outputs) => match as_built(outputs, reference) {
                        Some(built) => built,
                        None => continue,
                    },
                    None => reference,
                };
                kept += 1;
                found.push(Found {
                    reference,
                    at: at.clone(),
                    helm_values: Vec::new(),
                    in_chart: false,
                });
            }
            if kept == 0 {
                unbuilt.push(at);
            }
        }
    }
    if let (Some(outputs), Some(order)) = (outputs, facts.built.as_deref()) {
        // The images the first candidate (`manifests:`) runs come first.
        found.sort_by_key(|f| first_run(outputs, order, &f.reference));
    }
    if !unbuilt.is_empty() {
        notes.push(format!(
            "left out {} image(s) no kustomization builds (an unused patch, a loose file): {}",
            unbuilt.len(),
            unbuilt.join(", ")
        ));
    }
    (found, placeholders)
}

/// The image `text` in the file at `path` as the kustomizations that include
/// the file rename it: one reference per distinct edit (the members of a
/// family), or the text itself when none edits it. The name is renamed before
/// it is parsed: a placeholder (`REPLACE_IMAGE:v0.0.0`) need not be a valid
/// reference, only what kustomize makes of it.
fn renamed(renames: &families::Renames, path: &str, text: &str) -> Vec<Reference> {
    let (bare, tag) = families::kustomize_name(text);
    let edits = renames.of(path, bare);
    if edits.is_empty() {
        return Reference::parse(text).ok().into_iter().collect();
    }
    (edits.into_iter())
        .filter_map(|(new_name, new_tag)| {
            let name = new_name.as_deref().unwrap_or(bare);
            let tag = new_tag.as_deref().or(tag).unwrap_or("latest");
            Reference::parse(&format!("{name}:{tag}")).ok()
        })
        .collect()
}

/// Every image the built kustomizations run, by repository: each reference once,
/// with the first candidate that runs it (the outputs come in candidate order,
/// `manifests:` first). Read once for init's decisions.
type Built = BTreeMap<String, Vec<(Reference, String)>>;

fn built_references(outputs: &[(String, String)]) -> Built {
    let mut out = Built::new();
    for (dir, yaml) in outputs {
        for (image, _) in pod_images(yaml, "") {
            if let Ok(r) = Reference::parse(&image) {
                let refs = out.entry(r.repository().to_string()).or_default();
                if !refs.iter().any(|(x, _)| *x == r) {
                    refs.push((r, dir.clone()));
                }
            }
        }
    }
    out
}

/// The position, among the built candidates, of the first that runs
/// `reference`'s repository.
fn first_run(outputs: &Built, order: &[(String, String)], reference: &Reference) -> usize {
    let first = (outputs.get(&reference.repository().to_string()))
        .and_then(|refs| refs.first())
        .and_then(|(_, dir)| order.iter().position(|(d, _)| d == dir));
    first.unwrap_or(order.len())
}

/// What the built outputs make of `reference`: the tag the first output that runs
/// its repository gives it (a `newTag` of the overlay), unless that output carries
/// this one too (a variant) — a tag the main overlay sets wins over a development
/// overlay's; `None` when no output runs it (an unused patch, a loose file).
fn as_built(outputs: &Built, reference: Reference) -> Option<Reference> {
    let refs = outputs.get(&reference.repository().to_string())?;
    let (head, first) = refs.first()?;
    let carried = (refs.iter()).any(|(r, dir)| dir == first && *r == reference);
    Some(if carried { reference } else { head.clone() })
}

/// The image fields of the pods in a YAML text, with `path:line:column`; a
/// text that is not YAML has none.
fn pod_images(text: &str, path: &str) -> Vec<(String, String)> {
    let Ok(docs) = berth_yaml::load_all(text, Limits::default()) else {
        return Vec::new();
    };
    let mut images: Vec<(String, String)> = Vec::new();
    for mut doc in docs {
        let kind = doc
            .get("kind")
            .and_then(Node::as_str)
            .unwrap_or_default()
            .to_string();
        berth_core::render::pods::for_each_pod(&mut doc, &kind, &mut |mut pod| {
            if let Some(spec) = pod.spec() {
                berth_core::render::pods::for_each_container(spec, &mut |container| {
                    if let Some(image) = container.get("image") {
                        if let Some(text) = image.as_str() {
                            images.push((text.to_string(), format!("{path}:{}", image.pos)));
                        }
                    }
                });
            }
        });
    }
    images
}

/// The project's registry: IMAGE_REGISTRY's value, else the owner of IMAGE_TAG_BASE or
/// IMG (operator-sdk), else the owner most images share.
fn project_owner(
    found: &[Found],
    defined: &[Defined],
    registry_var: Option<&Defined>,
) -> Option<String> {
    let mut owners: BTreeMap<String, usize> = BTreeMap::new();
    for f in found {
        *owners.entry(owner(&f.reference)).or_default() += 1;
    }
    let made = ["IMAGE_TAG_BASE", "IMG"].iter().find_map(|name| {
        let (_, value, _) = defined.iter().find(|(n, _, _)| n == name)?;
        Reference::parse(value).ok().map(|r| owner(&r))
    });
    registry_var
        .map(|(_, v, _)| v.trim_end_matches('/').to_string())
        .filter(|v| !v.is_empty())
        .or(made)
        .or_else(|| {
            // Docker's official images (`mysql`, `redis`) are nobody's project.
            owners
                .iter()
                .filter(|(o, _)| *o != "docker.io/library")
                .max_by_key(|(o, n)| (**n, std::cmp::Reverse((*o).clone())))
                .map(|(o, _)| o.clone())
        })
}

/// The Makefile variables init reads — image, tag, registry and placeholder
/// variables — as `(name, expanded value, where)` in file order, each once,
/// expanded lazily and within [`EXPANSION_LIMIT`]; a value that cannot be
/// expanded gets a note instead.
fn read_make_vars(
    facts: &Facts,
    placeholders: &[(String, String)],
    notes: &mut Vec<String>,
) -> Vec<(String, String, String)> {
    let defs = Defs::new(&facts.make_vars);
    let read = |name: &str| {
        name.ends_with("_IMAGE")
            || name.ends_with("TAG")
            || name.ends_with("VERSION")
            || name.ends_with("IMAGE_TAG_BASE")
            || components::generic_image_variable(name)
            || matches!(name, "IMAGE_REGISTRY" | "REGISTRY")
            || placeholders.iter().any(|(p, _)| p == name)
    };
    let mut out: Vec<(String, String, String)> = Vec::new();
    for var in &facts.make_vars {
        let Some(chosen) = defs.get(&var.name) else {
            continue;
        };
        if !read(&var.name) || !std::ptr::eq(chosen, var) {
            continue;
        }
        match defs.value(&var.name) {
            Some(Ok(value)) => out.push((var.name.clone(), value, var.at.to_string())),
            Some(Err(Unexpandable::TooLong)) => notes.push(format!(
                "{}: `{}` expands past {EXPANSION_LIMIT} characters; not used (set it in berth.yaml by hand)",
                var.at, var.name
            )),
            Some(Err(Unexpandable::TooDeep)) => notes.push(format!(
                "{}: `{}` refers to itself or nests more than {EXPANSION_DEPTH} variables deep; not used",
                var.at, var.name
            )),
            None => {}
        }
    }
    out
}

/// `a/./b/../c` → `a/c`, for comparing kustomization paths.
pub fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// A DNS label from a directory name.
fn project_name(dir: &str) -> String {
    let name = names::dashed(dir);
    let name = name.trim_matches('-');
    if name.is_empty() {
        "project".into()
    } else {
        name.chars().take(63).collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "lib_tests.rs"]
mod tests;
