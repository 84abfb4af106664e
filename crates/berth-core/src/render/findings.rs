//! What a render saw that disagrees with berth.yaml or will fail later, and the
//! warnings that say so (`render`, `apply` and `diff` print them; `validate
//! --strict` fails on them). Each message names both sides and the fix.

use berth_yaml::Node;

use super::pods::{for_each_container, for_each_pod};
use crate::project::{data_key_path, ImagePath, PathSegment, Project};
use crate::resolve::{Origin, Resolution};
use crate::scan::Scanner;
use crate::warning::{Code, Warning};

/// A component image spelt where berth does not rewrite it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stray {
    /// `file:line:column (Kind/name)`.
    pub at: crate::place::Place,
    /// Where in the object: `data key `run.yaml``, `env `RELATED_IMAGE_X` of container `c``.
    pub place: String,
    /// The spelling.
    pub text: String,
    /// The component (index into the resolution).
    pub component: usize,
    /// The fix, when the caller knows a better one than the general advice (a
    /// chart's value that berth can set through `helmValues:`).
    pub fix: Option<String>,
}

/// Whether `stray` is a component's resolved image that berth gave the chart
/// through `helmValues:`: the chart copied it from those values, so overrides
/// do reach it.
fn from_helm_values(stray: &Stray, resolution: &Resolution<'_>) -> bool {
    resolution.images.get(stray.component).is_some_and(|image| {
        !image.component.helm_values.is_empty()
            && berth_ref::Reference::parse(&stray.text).as_ref() == Ok(&image.reference)
    })
}

/// The fix for a component image in ConfigMap data key `key`: the
/// `imagePaths` entry that reaches it (quoted for YAML's flow context when it
/// has brackets), after which berth rewrites the images in its text.
fn data_key_fix(key: &str) -> String {
    let path = data_key_path(key);
    let path = match path.contains('[') {
        true => format!("'{path}'"),
        false => path,
    };
    format!("add `{{kind: ConfigMap, path: {path}}}` under `imagePaths:` and berth rewrites the images in it")
}

/// Component images in ConfigMap data (but comment lines and `_example` keys),
/// container env values, command and args (but the fields an
/// `imagePaths` entry rewrote, `skip`), pushed to `out` with `at` (`file:line:column
/// (Kind/name)` given a position). In a chart's output rendered with berth's
/// image values (`chart`), berth's own answer there is no stray.
pub(super) fn strays(
    scanner: &Scanner,
    object: &mut Node,
    kind: &str,
    skip: &dyn Fn(berth_yaml::Pos) -> bool,
    at: &dyn Fn(berth_yaml::Pos) -> crate::place::Place,
    chart: Option<&Resolution<'_>>,
    out: &mut Vec<Stray>,
) {
    if scanner.is_empty() {
        return;
    }
    let mut push = |node: &Node, place: String, fix: Option<String>| {
        let Some(text) = node.as_str() else { return };
        if skip(node.pos) || !scanner.may_match(text) {
            return;
        }
        // A quoted scalar's text starts after its quote; a block scalar's lines at its
        // position's column (the indentation YAML strips).
        let quoted = node
            .as_scalar()
            .is_some_and(|s| s.style != berth_yaml::Style::Plain && !text.contains('\n'));
        for (n, line) in text.lines().enumerate() {
            // A comment in a config file (`# installed in the alpine/k8s image`) names
            // an image in prose; no program reads it.
            let trimmed = line.trim_start();
            if trimmed.starts_with('#') || trimmed.starts_with("//") {
                continue;
            }
            for found in scanner.line(line) {
                let mut pos = node.pos;
                pos.line += n as u32;
                pos.column += found.offset as u32 + u32::from(quoted);
                let stray = Stray {
                    at: at(pos),
                    place: place.clone(),
                    text: found.text.to_string(),
                    component: found.component,
                    fix: fix.clone(),
                };
                if !chart.is_some_and(|r| from_helm_values(&stray, r)) {
                    out.push(stray);
                }
            }
        }
    };
    if kind == "ConfigMap" {
        for (key, value) in object
            .get("data")
            .and_then(Node::as_map)
            .unwrap_or_default()
        {
            let key = key.as_str().unwrap_or_default();
            // Knative's and KServe's documentation keys: an example, never read.
            if key == "_example" || key.ends_with("_example") {
                continue;
            }
            push(value, format!("data key `{key}`"), Some(data_key_fix(key)));
        }
        return;
    }
    let mut envs: Vec<(Node, String)> = Vec::new();
    each_named_container(object, kind, &mut |container, name| {
        for item in container
            .get("env")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            if let Some(value) = item.get("value") {
                let var = item.get("name").and_then(Node::as_str).unwrap_or_default();
                envs.push((value.clone(), format!("env `{var}` of container `{name}`")));
            }
        }
        // A chart (or a hand-written manifest) that copies the image into a flag.
        for field in ["command", "args"] {
            let items = container
                .get(field)
                .and_then(Node::as_seq)
                .unwrap_or_default();
            for (i, item) in items.iter().enumerate() {
                envs.push((item.clone(), format!("{field}[{i}] of container `{name}`")));
            }
        }
    });
    for (value, place) in envs {
        push(&value, place, None);
    }
}

/// Container images in a chart's output (rendered with berth's image values,
/// `resolution`) that end in a component's whole repository after a prefix:
/// `ghcr.io/kubeflow/katib/docker.io/library/katib-controller:0.16.0`, where
/// the chart joins the value berth set at the component's `repository:` path
/// to a registry value of its own. No component is that image, so nothing else
/// would say so: the pod would pull an image that does not exist.
pub(super) fn joined_images(
    object: &mut Node,
    kind: &str,
    at: &dyn Fn(berth_yaml::Pos) -> crate::place::Place,
    resolution: &Resolution<'_>,
    out: &mut Vec<(crate::place::Place, String)>,
) {
    let mut found: Vec<(Node, String)> = Vec::new();
    each_named_container(object, kind, &mut |container, name| {
        if let Some(image) = container.get("image") {
            found.push((image.clone(), name.to_string()));
        }
    });
    for (node, container) in found {
        let Some(reference) = node
            .as_str()
            .and_then(|t| berth_ref::Reference::parse(t).ok())
        else {
            continue;
        };
        let repository = reference.repository().to_string();
        let joined = resolution.images.iter().find(|image| {
            let own = image.reference.repository().to_string();
            repository.len() > own.len() && repository.ends_with(&format!("/{own}"))
        });
        let Some(image) = joined else { continue };
        let c = image.component;
        let path = (c.helm_values.iter())
            .find(|(part, _)| *part == crate::project::HelmPart::Repository)
            .map_or("repository".to_string(), |(_, path)| path.clone());
        out.push((at(node.pos).about(c.name.clone()), format!(
            "image `{reference}` of container `{container}` ends in component `{}`'s repository `{}` after a prefix: the chart joins the value berth sets at `{path}` to a registry value of its own, so the pod runs an image no registry has; name that value `registry:` and `{path}` `name:` in `images.{}.helmValues` (`berth init` writes them), and berth sets both",
            c.name, image.reference.repository(), c.name
        )));
    }
}

/// Each container of `object`'s pods, with its name (empty when it has none).
fn each_named_container(object: &mut Node, kind: &str, f: &mut dyn FnMut(&Node, &str)) {
    for_each_pod(object, kind, &mut |mut pod| {
        let Some(spec) = pod.spec() else { return };
        for_each_container(spec, &mut |container| {
            let name = container
                .get("name")
                .and_then(Node::as_str)
                .unwrap_or_default();
            f(container, name);
        });
    });
}

/// Whether `origin` moves every component alike (the registry prefix, the
/// shared tag variable, the lock) rather than `component` alone.
fn shared(origin: &Origin, project: &Project, component: &crate::project::Component) -> bool {
    match origin {
        Origin::Registry(_) | Origin::RegistryEnv(_) | Origin::Lock(_) => true,
        Origin::TagEnv(var) => {
            project.tag_env.as_deref() == Some(var.name.as_str()) && component.tag_env != var.name
        }
        _ => false,
    }
}

/// Overrides that changed nothing in any of the renders `all` (one for `render`,
/// each profile's for `validate`): a component's own override (its variables,
/// `--image`, `--tag`) when no image field of any render is that component; an
/// override every component follows (the registry prefix, the shared tag, the
/// lock) only when none of the components it moves is in any render — a
/// registry exported for the whole project does not warn about each component
/// a profile leaves out. `whole` says `all` is every manifest set of the
/// project (`validate`, or a project without profiles); the render of one
/// profile judges no override: the developer's variables are exported for the
/// whole project, and the other profiles may be what they are for.
pub fn unreached_overrides(
    all: &[&super::Findings],
    project: &Project,
    resolution: &Resolution<'_>,
    whole: bool,
) -> Vec<Warning> {
    let mut out = Vec::new();
    // Shared overrides: (as the source names it, components it moved, any of them rendered).
    let mut shared_seen: Vec<(String, usize, bool, String)> = Vec::new();
    for (index, resolved) in resolution.images.iter().enumerate() {
        let component = resolved.component;
        if !component.deployed {
            continue;
        }
        let unmatched = all.iter().all(|f| f.unmatched.contains(&index));
        let origins = std::iter::once(&resolved.origins.name).chain(resolved.origins.parts());
        let mut own: Option<&Origin> = None;
        for origin in origins.filter(|o| !matches!(o, Origin::Project { .. })) {
            if !shared(origin, project, component) {
                own = own.or(Some(origin));
                continue;
            }
            let text = origin.to_string();
            match shared_seen.iter_mut().find(|(t, _, _, _)| *t == text) {
                Some((_, moved, rendered, _)) => {
                    *moved += 1;
                    *rendered |= !unmatched;
                }
                None => shared_seen.push((text, 1, !unmatched, origin.subject())),
            }
        }
        if let (Some(origin), true) = (own, unmatched && whole) {
            out.push(Warning::about(Code::UnreachedOverride, origin.subject(), format!(
                "{origin} is set for component `{}`, but no image field of the manifests is `{}`, so the override changes nothing: check `images.{}.image` and `match:` in {}, add the field under `imagePaths:` (custom resources, env values), or unset it",
                component.name, component.image.repository(), component.name, project.file
            )));
        }
    }
    for (origin, moved, rendered, subject) in shared_seen {
        if whole && !rendered {
            out.push(Warning::about(Code::UnreachedOverride, subject, format!(
                "{origin} is set, but none of the {moved} component(s) it moves has an image field in the manifests, so it changes nothing: check `images:` and `match:` in {}, or unset it",
                project.file
            )));
        }
    }
    out
}

/// `operator:` found in none of the renders `all`: a warning once.
pub fn operator_missing(all: &[&super::Findings]) -> Option<Warning> {
    if all.is_empty() || all.iter().any(|f| f.operator_missing.is_none()) {
        return None;
    }
    let finding = all[0].operator_missing.as_ref()?;
    Some(Warning::at(
        Code::RelatedImage,
        finding.at.clone(),
        &finding.problem,
    ))
}

impl super::Findings {
    /// The warnings of one render: manifests that disagree with berth.yaml,
    /// overrides that reach nothing, images berth cannot rewrite, missing keys.
    pub fn warnings(&self, project: &Project, resolution: &Resolution<'_>) -> Vec<Warning> {
        let mut out = Vec::new();
        for (at, value) in &self.unparsed_images {
            let hint = match value.strip_prefix('$') {
                Some(rest) if rest.starts_with('{') && !rest.ends_with('}') || rest.contains(":-") || rest.contains('}') && !rest.ends_with('}') => {
                    "not filled in: berth fills only a whole `${VAR}` or `$VAR` placeholder that is a component's variable (no defaults, no text around it); write the value as exactly `${VAR}`"
                }
                Some(_) => "a placeholder that names no component's variable (`env:`); add the component, or set its `env:` to this variable",
                None => "not an image reference, so no component can match it; fix the value, or render the templating step first",
            };
            let shown: String = value.chars().take(200).collect();
            out.push(Warning::at(
                Code::UnparsedImage,
                at.clone(),
                format_args!("image `{shown}` is {hint}"),
            ));
        }
        for drift in &self.drifted {
            let Some(resolved) = resolution.images.get(drift.component) else {
                continue;
            };
            let c = resolved.component;
            if let Some((member, writes)) = &drift.member {
                let pos = c.variant(member).map_or(c.image_pos, |v| v.pos);
                let at = drift.at.clone().about(format!("{}/{member}", c.name));
                out.push(Warning::at(Code::Drift, at, format_args!(
                    "image `{}` differs from what berth.yaml gives variant `{member}` of component `{}` ({}:{pos}), and berth writes `{writes}`: if the variant lags on purpose, give it its own tag (`images.{}.variants.{member}.image: REPOSITORY:TAG`), otherwise drop the tag from the manifest",
                    drift.found, c.name, project.file, c.name
                )));
                continue;
            }
            out.push(Warning::at(Code::Drift, drift.at.clone(), format_args!(
                "image `{}` differs from berth.yaml's default for component `{}` (`{}`, {}:{}), and berth writes `{}`: put the tag you want in `images.{}.image` of {} (a kustomize `newTag` or a chart value berth.yaml does not know), or drop the tag from the manifest",
                drift.found, c.name, c.image, project.file, c.image_pos, resolved.reference, c.name, project.file
            )));
        }
        for stray in &self.strays {
            let Some(resolved) = resolution.images.get(stray.component) else {
                continue;
            };
            let name = &resolved.component.name;
            let env = &resolved.component.env;
            let fix = stray.fix.clone().unwrap_or_else(|| format!("for an env value or a custom resource's field add it under `imagePaths:`, otherwise have the program take `{env}` from its environment"));
            out.push(Warning::at(Code::Copy, stray.at.clone(), format_args!(
                "{} holds `{}`, an image of component `{name}`, where berth does not rewrite it: overrides (`{env}`, the registry) and pins never reach it; {fix}",
                stray.place, stray.text
            )));
        }
        out.extend(untagged_warnings(&self.untagged, resolution));
        for (at, problem) in &self.trust {
            out.push(Warning::at(Code::TrustVariable, at.clone(), problem));
        }
        for (at, problem) in &self.joined_images {
            out.push(Warning::at(Code::Copy, at.clone(), problem));
        }
        for (at, problem) in &self.variant_resources {
            out.push(Warning::at(Code::VariantResource, at.clone(), problem));
        }
        for replaced in &self.replaced_keys {
            out.push(Warning::at(Code::DuplicateKey, replaced.at.clone(), format_args!(
                "key `{}` is written twice in one mapping (first at {}); berth keeps the last value, as helm install and kubectl do, so the first is never deployed: remove one of them from the chart's template",
                replaced.key, replaced.first
            )));
        }
        for finding in &self.related {
            out.push(Warning::at(
                Code::RelatedImage,
                finding.at.clone(),
                &finding.problem,
            ));
        }
        for missing in &self.missing_keys {
            let keys = if missing.available.is_empty() {
                "it has no keys".to_string()
            } else {
                format!("its keys: {}", missing.available.join(", "))
            };
            out.push(Warning::at(Code::MissingKey, missing.at.clone(), format_args!(
                "{} asks `{}` for key `{}`, which it does not have ({keys}); the pod would fail with CreateContainerConfigError: fix the key, or add it to `{}` in {}",
                missing.field, missing.config, missing.key, missing.config, project.file
            )));
        }
        out
    }
}

/// Warnings about `imagePaths` and `configPaths` entries that reached nothing:
/// `seen[i]` says whether an object of entry `i`'s kind was seen, and whether a
/// field was at its path.
pub fn path_warnings(
    project: &Project,
    section: &str,
    entries: &[ImagePath],
    seen: &[(bool, bool)],
) -> Vec<Warning> {
    let mut out = Vec::new();
    for (entry, &(kind, field)) in entries.iter().zip(seen) {
        let key = entry
            .key
            .as_ref()
            .map(|k| format!(", key: {}", path_text(k)))
            .unwrap_or_default();
        let shown = format!("{{kind: {}, path: {}{key}}}", entry.kind, entry.text);
        if !kind {
            out.push(Warning::at(Code::UnusedPath, crate::Place::file(&project.file).at(entry.pos), format_args!(
                "`{section}` entry `{shown}` matches nothing: no object of kind `{}` is in the manifests; check the kind's spelling, or remove the entry",
                entry.kind
            )));
        } else if !field {
            out.push(Warning::at(Code::UnusedPath, crate::Place::file(&project.file).at(entry.pos), format_args!(
                "`{section}` entry `{shown}` matches no field: no `{}` object has `{}`; check the field path against the objects",
                entry.kind, entry.text
            )));
        }
    }
    out
}

fn path_text(path: &[PathSegment]) -> String {
    let mut out = String::new();
    for segment in path {
        match segment {
            PathSegment::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            PathSegment::Each => out.push_str("[]"),
        }
    }
    out
}

/// A repository spelt without a tag in text berth rewrites, where berth writes
/// another tag than berth.yaml's default, or a digest: the program appends a tag
/// of its own (Kubeflow's `sync.py` appends its release), so a pin or a tag
/// override reaches the repository and not the tag.
fn untagged_warnings(
    untagged: &[(crate::Place, usize)],
    resolution: &Resolution<'_>,
) -> Vec<Warning> {
    let mut out = Vec::new();
    for (at, index) in untagged {
        let Some(resolved) = resolution.images.get(*index) else {
            continue;
        };
        let (c, writes) = (resolved.component, &resolved.reference);
        if writes.digest().is_none() && writes.tag() == c.image.tag() {
            continue; // the default tag: what the program's own tag stands for
        }
        out.push(Warning::at(Code::Copy, at.clone(), format_args!(
            "the text spells component `{}`'s repository without a tag, so berth writes `{}` there and the program appends a tag of its own: berth's `{writes}` does not reach it; spell the image with its tag in the text (`{}`), or give the program berth's tag as well",
            c.name, writes.repository(), c.image
        )));
    }
    out
}
