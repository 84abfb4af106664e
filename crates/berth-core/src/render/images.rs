//! Rewrites component images, and pull policies where the project asks.

use std::collections::HashMap;

use berth_ref::{Reference, Repository};
use berth_yaml::{Node, Pos, Value};

use super::family::{Family, Member, Resources, VariantConflict};
use super::pods::{for_each_container, for_each_pod, for_each_volume};
use crate::project::{ImagePath, PathSegment, PullPolicy};
use crate::resolve::Resolution;

/// What a matching image becomes.
struct Target {
    /// The resolved reference.
    reference: Reference,
    /// Its text, when it has a tag or digest (then every match gets exactly it).
    image: Option<String>,
    /// The component's pull policy, if it sets one.
    pull_policy: Option<PullPolicy>,
    /// `--only-overridden`: the parts of a field's own reference to keep.
    keep: Option<Keep>,
    /// `tagSuffix: true`: berth.yaml's default tag, of which a field's tag plus a
    /// suffix (`latest-gpu`) is a variant.
    variant_of: Option<String>,
    /// The component's image family, when it has variants or a `resource:`.
    family: Option<Family>,
}

/// Parts of a field's own reference no override changed (`--only-overridden`).
#[derive(Debug, Clone, Copy)]
struct Keep {
    repository: bool,
    tag: bool,
    digest: bool,
}

/// Whether an origin is an override (not berth.yaml's default).
fn overridden_part(origin: &crate::resolve::Origin) -> bool {
    !matches!(origin, crate::resolve::Origin::Project { .. })
}

/// Whether the component was given a full reference (which replaces every part).
fn is_full(resolved: &crate::resolve::ResolvedImage<'_>) -> bool {
    use crate::resolve::Origin;
    matches!(
        resolved.origins.name,
        Origin::Image(_) | Origin::ImageEnv(_)
    )
}

/// What one matched image field is rewritten to.
struct Rewrite {
    image: String,
    pull_policy: Option<&'static str>,
    /// `auto` without a digest: a manifest's explicit `Always` stays (a moving tag
    /// such as `:dev` written with `Always` must keep being pulled).
    keeps_always: bool,
    /// A family's field: the target and the member the field runs once rewritten.
    runs: Option<(usize, String)>,
}

impl Target {
    /// The image for a field that held `own`: the resolved reference, or — when
    /// that names neither tag nor digest (a component whose `image:` has no tag,
    /// a full override without one) — the resolved repository with the field's
    /// own tag and digest, as kustomize's `newName` keeps them.
    fn for_field(&self, own: Option<&Reference>) -> Rewrite {
        let reference = match (self.keep, own) {
            (Some(keep), Some(own)) => self.keeping(keep, own),
            _ => self.resolved_for(own),
        };
        Rewrite {
            pull_policy: self.pull_policy.map(|p| p.for_image(&reference)),
            keeps_always: self.pull_policy == Some(PullPolicy::Auto)
                && reference.digest().is_none(),
            image: reference.to_string(),
            runs: None,
        }
    }

    /// A field whose tag is berth.yaml's default tag plus a suffix (`latest-gpu`)
    /// under `tagSuffix: true`: the resolved tag plus that suffix (`v0.17.0-gpu`).
    /// A digest pinned for the main tag is not the variant's, so none is written.
    fn variant(&self, own: &Reference) -> Option<Rewrite> {
        let base = self.variant_of.as_deref()?;
        let own_tag = own.tag()?.to_string();
        let suffix = own_tag.strip_prefix(base).filter(|s| !s.is_empty())?;
        let tag = self.reference.tag()?;
        let text = format!("{}:{tag}{suffix}", self.reference.repository());
        let reference = Reference::parse(&text).ok()?;
        Some(Rewrite {
            pull_policy: self.pull_policy.map(|p| p.for_image(&reference)),
            keeps_always: self.pull_policy == Some(PullPolicy::Auto),
            image: reference.to_string(),
            runs: None,
        })
    }

    /// The field's own reference with the overridden parts of the resolved one.
    fn keeping(&self, keep: Keep, own: &Reference) -> Reference {
        let mut out = if keep.repository {
            own.clone()
        } else {
            own.with_repository(self.reference.repository())
        };
        if !keep.tag {
            out = match self.reference.tag() {
                Some(tag) => out.with_tag(tag.clone()),
                None => out,
            };
        }
        if !keep.digest {
            out = match self.reference.digest() {
                Some(digest) => out.with_digest(digest.clone()),
                None => out.without_digest(),
            };
        }
        out
    }

    /// The resolved reference for a field (its own tag kept when that names none).
    fn resolved_for(&self, own: Option<&Reference>) -> Reference {
        match (&self.image, own) {
            (None, Some(own)) => {
                let mut keep = self.reference.clone();
                if let Some(tag) = own.tag() {
                    keep = keep.with_tag(tag.clone());
                }
                if let Some(digest) = own.digest() {
                    keep = keep.with_digest(digest.clone());
                }
                keep
            }
            _ => self.reference.clone(),
        }
    }
}

/// The variable of an image that is exactly `${VAR}` or `$VAR` (an envsubst placeholder).
pub(crate) fn placeholder_variable(image: &str) -> Option<&str> {
    let name = match image.strip_prefix("${") {
        Some(rest) => rest.strip_suffix('}')?,
        None => image.strip_prefix('$')?,
    };
    let mut bytes = name.bytes();
    let valid = matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
    valid.then_some(name)
}

/// A reference whose tag is a `{PLACEHOLDER}` (`repo:{GENERATED_TAG}`, which
/// kustomize's images transformer accepts): its repository.
fn placeholder_tag(image: &str) -> Option<Reference> {
    let (repository, tag) = image.rsplit_once(':')?;
    let name = tag.strip_prefix('{')?.strip_suffix('}')?;
    let word = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !word {
        return None;
    }
    Reference::parse(repository)
        .ok()
        .filter(|r| r.tag().is_none() && r.digest().is_none())
}

/// Matches images by normalized repository (so `nginx` matches
/// `docker.io/library/nginx`; tag and digest are ignored) and rewrites them.
pub struct ImageRewriter<'a> {
    by_repository: HashMap<&'a Repository, usize>,
    /// Components by their full-reference variable (`EPP_IMAGE`), for placeholders.
    by_variable: HashMap<&'a str, usize>,
    targets: Vec<Target>,
    /// The components' names, by target.
    names: Vec<String>,
    image_paths: &'a [ImagePath],
    /// Image fields matched, per target (for `berth validate`'s warnings).
    hits: Vec<std::cell::Cell<usize>>,
    /// Image values that are neither references nor known placeholders, since the last take.
    unparsed: std::cell::RefCell<Vec<(Pos, String)>>,
    /// Per target, whether an override touched it (then a manifest's own tag is not drift).
    overridden: Vec<bool>,
    /// Image fields whose own tag or digest differs from the component's default
    /// while no override is active (position, value, target), since the last take.
    drift: std::cell::RefCell<Vec<Drift>>,
    /// Per `imagePaths` entry: an object of its kind was seen; a field was at its path.
    paths_seen: Vec<(std::cell::Cell<bool>, std::cell::Cell<bool>)>,
    /// Positions of the fields `imagePaths` rewrote (they are not stray copies).
    path_fields: std::cell::RefCell<std::collections::HashSet<Pos>>,
    /// Finds component images inside an `imagePaths` field that holds text.
    scanner: crate::scan::Scanner,
    /// Fields running another member than the one selected, since the last take.
    conflicts: std::cell::RefCell<Vec<VariantConflict>>,
    /// Containers lacking their member's resource, since the last take.
    resources: std::cell::RefCell<Vec<(usize, Resources)>>,
    /// Repositories spelt without a tag in text an `imagePaths` entry reaches, of
    /// components an override touched (position, target), since the last take:
    /// the program appends a tag of its own, which may not be berth's.
    untagged: std::cell::RefCell<Vec<(Pos, usize)>>,
}

/// An image field whose tag or digest berth replaces with berth.yaml's default
/// although no override asked it to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    /// Where the field is.
    pub pos: Pos,
    /// The field's value.
    pub found: String,
    /// The component (index into the resolution).
    pub component: usize,
    /// The family member the field runs (`None`: the component's own image), and
    /// the reference berth writes for it.
    pub member: Option<(String, String)>,
}

impl<'a> ImageRewriter<'a> {
    /// `pull_policies[i]` is the policy of `resolution.images[i]`, if any.
    pub fn new(
        resolution: &'a Resolution<'a>,
        pull_policies: &[Option<PullPolicy>],
        image_paths: &'a [ImagePath],
        only_overridden: bool,
    ) -> Self {
        let mut by_repository = HashMap::new();
        let mut by_variable = HashMap::new();
        let mut targets = Vec::with_capacity(resolution.images.len());
        for (i, resolved) in resolution.images.iter().enumerate() {
            if !resolved.component.env.is_empty() {
                // Placeholders are filled in either mode: `${API_IMAGE}` is no image.
                by_variable
                    .entry(resolved.component.env.as_str())
                    .or_insert(i);
            }
            let untouched = only_overridden && !resolved.origins.overridden();
            if untouched {
                // Still a target (its index must line up), but nothing maps to it; it
                // counts as matched so validate does not warn about it.
                targets.push(Target {
                    image: Some(resolved.reference.to_string()),
                    reference: resolved.reference.clone(),
                    pull_policy: None,
                    keep: None,
                    variant_of: None,
                    family: None,
                });
                continue;
            }
            for repository in &resolved.component.repositories {
                // Earlier components win a repository two components both claim.
                by_repository.entry(repository).or_insert(i);
            }
            if !resolved.component.helm_values.is_empty() {
                // A chart given berth's image values writes the resolved repository
                // (`quay.io/me/epp` under a registry override): that field is this component.
                by_repository
                    .entry(resolved.reference.repository())
                    .or_insert(i);
            }
            let reference = &resolved.reference;
            let pinned = reference.tag().is_some() || reference.digest().is_some();
            // --only-overridden: a field keeps the parts of its own reference that no
            // override changed (a chart's tag under a registry override).
            let keep = (only_overridden && !is_full(resolved)).then(|| Keep {
                repository: !overridden_part(&resolved.origins.registry)
                    && !overridden_part(&resolved.origins.name),
                tag: !resolved.origins.tag.as_ref().is_some_and(overridden_part),
                digest: !resolved
                    .origins
                    .digest
                    .as_ref()
                    .is_some_and(overridden_part)
                    && !resolved.origins.tag.as_ref().is_some_and(overridden_part),
            });
            let component = resolved.component;
            let variant_of = component
                .tag_suffix
                .then(|| component.image.tag().map(|t| t.to_string()))
                .flatten();
            targets.push(Target {
                image: pinned.then(|| reference.to_string()),
                reference: reference.clone(),
                pull_policy: pull_policies.get(i).copied().flatten(),
                keep,
                variant_of,
                family: Family::of(resolved),
            });
        }
        let hits = resolution
            .images
            .iter()
            .map(|r| std::cell::Cell::new(usize::from(only_overridden && !r.origins.overridden())))
            .collect();
        ImageRewriter {
            by_repository,
            by_variable,
            hits,
            unparsed: std::cell::RefCell::new(Vec::new()),
            // A selected variant is an override too: the default's tag is not the field's.
            overridden: (resolution.images.iter())
                .map(|r| {
                    r.origins.overridden() || r.variant.as_ref().is_some_and(|s| s.by.is_explicit())
                })
                .collect(),
            drift: std::cell::RefCell::new(Vec::new()),
            paths_seen: image_paths.iter().map(|_| Default::default()).collect(),
            path_fields: Default::default(),
            scanner: component_scanner(resolution),
            conflicts: Default::default(),
            resources: Default::default(),
            untagged: Default::default(),
            names: (resolution.images.iter())
                .map(|r| r.component.name.clone())
                .collect(),
            targets,
            image_paths,
        }
    }

    /// The fields seen since the last call that run another member of a family
    /// than the one selected.
    pub fn take_conflicts(&self) -> Vec<VariantConflict> {
        std::mem::take(&mut *self.conflicts.borrow_mut())
    }

    /// The repositories spelt without a tag in text, of components an override
    /// touched, seen since the last call (position, component).
    pub fn take_untagged(&self) -> Vec<(Pos, usize)> {
        std::mem::take(&mut *self.untagged.borrow_mut())
    }

    /// The drifted image fields seen since the last call.
    pub fn take_drift(&self) -> Vec<Drift> {
        std::mem::take(&mut *self.drift.borrow_mut())
    }

    /// Per `imagePaths` entry: whether an object of its kind was seen, and whether a
    /// field was found at its path.
    pub fn paths_seen(&self) -> Vec<(bool, bool)> {
        self.paths_seen
            .iter()
            .map(|(kind, field)| (kind.get(), field.get()))
            .collect()
    }

    /// Whether the field at `pos` is one an `imagePaths` entry rewrote.
    pub fn rewrote_path_field(&self, pos: Pos) -> bool {
        self.path_fields.borrow().contains(&pos)
    }

    /// What `image` (at `pos`) becomes, if it is a component's.
    fn target(&self, image: &str, pos: Pos) -> Option<Rewrite> {
        // `${EPP_IMAGE}` or `$EPP_IMAGE`, as envsubst fills them: the component whose
        // variable it is, with its resolved reference.
        if let Some(variable) = placeholder_variable(image) {
            let index = *self.by_variable.get(variable)?;
            self.hit(index);
            let target = &self.targets[index];
            let mut rewrite = target.for_field(None);
            rewrite.runs = target.family.as_ref().map(|f| (index, f.selected.clone()));
            return Some(rewrite);
        }
        let (reference, own) = match Reference::parse(image) {
            Ok(parsed) => (parsed.clone(), Some(parsed)),
            Err(_) => (placeholder_tag(image)?, None),
        };
        let index = *self.by_repository.get(reference.repository())?;
        self.hit(index);
        let target = &self.targets[index];
        let family = target.family.as_ref();
        if let (Some(own), Some(family)) = (&own, family) {
            if let Some(member) = family.members.iter().find(|m| m.runs(own)) {
                let mut rewrite = self.member(index, member, own, image, pos);
                rewrite.runs = Some((index, member.name.clone()));
                return Some(rewrite);
            }
        }
        let runs = family.map(|f| (index, f.selected.clone()));
        if let Some(mut rewrite) = own.as_ref().and_then(|own| target.variant(own)) {
            rewrite.runs = runs;
            return Some(rewrite);
        }
        if let (Some(own), false, Some(_), None) =
            (&own, self.overridden[index], &target.image, &target.keep)
        {
            let resolved = &target.reference;
            let tag_differs = own.tag().is_some() && own.tag() != resolved.tag();
            let digest_differs = own.digest().is_some() && own.digest() != resolved.digest();
            if tag_differs || digest_differs {
                self.drift.borrow_mut().push(Drift {
                    pos,
                    found: image.to_string(),
                    component: index,
                    member: None,
                });
            }
        }
        let mut rewrite = target.for_field(own.as_ref());
        rewrite.runs = runs;
        Some(rewrite)
    }

    /// A field running `member` of target `index`'s family: the selected member's
    /// image when that is the member, the member's own when nothing selected
    /// another, and a conflict when something did.
    fn member(
        &self,
        index: usize,
        member: &Member,
        own: &Reference,
        image: &str,
        pos: Pos,
    ) -> Rewrite {
        let target = &self.targets[index];
        let explicit = target.family.as_ref().and_then(|f| f.explicit.as_ref());
        match explicit {
            Some((selected, by)) if *selected != member.name => {
                self.conflicts.borrow_mut().push(VariantConflict {
                    pos,
                    found: image.to_string(),
                    component: self.names[index].clone(),
                    runs: member.name.clone(),
                    selected: selected.clone(),
                    by: by.clone(),
                });
                target.for_field(Some(own))
            }
            Some(_) => target.for_field(Some(own)),
            None => {
                // A member's own tag that is not the one berth writes is drift too.
                let differs = own.tag().is_some() && own.tag() != member.reference.tag();
                if differs && !self.overridden[index] {
                    self.drift.borrow_mut().push(Drift {
                        pos,
                        found: image.to_string(),
                        component: index,
                        member: Some((member.name.clone(), member.reference.to_string())),
                    });
                }
                self.member_rewrite(index, member)
            }
        }
    }

    /// What a field running `member` becomes when nothing selected another.
    fn member_rewrite(&self, index: usize, member: &Member) -> Rewrite {
        let target = &self.targets[index];
        Rewrite {
            pull_policy: target.pull_policy.map(|p| p.for_image(&member.reference)),
            keeps_always: target.pull_policy == Some(PullPolicy::Auto)
                && member.reference.digest().is_none(),
            image: member.reference.to_string(),
            runs: None,
        }
    }

    fn hit(&self, index: usize) {
        if let Some(count) = self.hits.get(index) {
            count.set(count.get() + 1);
        }
    }

    /// The image values seen since the last call that were neither references nor
    /// placeholders of a component's variable, with their positions.
    pub fn take_unparsed(&self) -> Vec<(Pos, String)> {
        std::mem::take(&mut *self.unparsed.borrow_mut())
    }

    /// The targets (components, by index) no image field matched.
    pub fn unmatched(&self) -> Vec<usize> {
        self.hits
            .iter()
            .enumerate()
            .filter(|(_, c)| c.get() == 0)
            .map(|(i, _)| i)
            .collect()
    }

    /// Rewrites one object; returns how many image fields were changed or confirmed.
    pub fn rewrite(&self, object: &mut Node, api_version: &str, kind: &str) -> usize {
        let mut count = 0;
        for_each_pod(object, kind, &mut |mut pod| {
            let Some(spec) = pod.spec() else { return };
            for_each_container(spec, &mut |container| {
                count += self.rewrite_container(container)
            });
            for_each_volume(spec, &mut |volume| {
                if let Some(source) = volume.get_mut("image") {
                    let rewritten = self.rewrite_field(source, "reference", Some("pullPolicy"));
                    count += usize::from(rewritten.is_some());
                }
            });
        });
        for (index, path) in self.image_paths.iter().enumerate() {
            if path.applies(api_version, kind) {
                self.paths_seen[index].0.set(true);
                count += self.rewrite_path(object, &path.path, index);
            }
        }
        count
    }

    fn rewrite_container(&self, container: &mut Node) -> usize {
        let Some(rewrite) = self.rewrite_field(container, "image", Some("imagePullPolicy")) else {
            return 0;
        };
        if let Some((index, member)) = &rewrite.runs {
            let family = self.targets[*index].family.as_ref();
            if let Some(lacking) = family.and_then(|f| f.lacking(container, member)) {
                self.resources.borrow_mut().push((*index, lacking));
            }
        }
        1
    }

    /// The scanner that finds the components' images in text.
    pub fn scanner(&self) -> &crate::scan::Scanner {
        &self.scanner
    }

    /// The containers seen since the last call that do not request what the
    /// member they run needs (target index, what is lacking).
    pub fn take_resources(&self) -> Vec<(usize, Resources)> {
        std::mem::take(&mut *self.resources.borrow_mut())
    }

    /// Rewrites `holder[field]` and, when the component sets one, `holder[policy_field]`.
    fn rewrite_field(
        &self,
        holder: &mut Node,
        field: &str,
        policy_field: Option<&str>,
    ) -> Option<Rewrite> {
        let (pos, text) = holder
            .get(field)
            .and_then(|n| n.as_str().map(|t| (n.pos, t)))?;
        let Some(target) = self.target(text, pos) else {
            // Neither a reference nor a placeholder berth knows: say so (validate warns).
            if Reference::parse(text).is_err() && placeholder_tag(text).is_none() {
                self.unparsed.borrow_mut().push((pos, text.to_string()));
            }
            return None;
        };
        if let Some(node) = holder.get_mut(field) {
            if node.as_str() != Some(target.image.as_str()) {
                node.set_string(target.image.as_str());
            }
        }
        if let (Some(policy), Some(key)) = (target.pull_policy, policy_field) {
            let explicit_always = holder.get(key).and_then(Node::as_str) == Some("Always");
            if !(target.keeps_always && explicit_always) {
                set_after(holder, key, policy, field);
            }
        }
        Some(target)
    }

    /// Rewrites the field at `path` below `node` (entry `index` of `imagePaths`).
    fn rewrite_path(&self, node: &mut Node, path: &[PathSegment], index: usize) -> usize {
        match path {
            [] => self.rewrite_leaf(node, index),
            [PathSegment::Key(key), rest @ ..] => node
                .get_mut(key)
                .map_or(0, |n| self.rewrite_path(n, rest, index)),
            [PathSegment::Each, rest @ ..] => match &mut node.value {
                Value::Seq(items) => items
                    .iter_mut()
                    .map(|item| self.rewrite_path(item, rest, index))
                    .sum(),
                _ => 0,
            },
        }
    }

    /// The field a path ends at: its image, if it is a component's.
    fn rewrite_leaf(&self, node: &mut Node, index: usize) -> usize {
        let Some(text) = node.as_str() else {
            return 0;
        };
        self.paths_seen[index].1.set(true);
        match self.target(text, node.pos) {
            Some(target) => {
                self.path_fields.borrow_mut().insert(node.pos);
                node.set_string(target.image);
                1
            }
            None => self.rewrite_within(node),
        }
    }

    /// A field that holds a configuration as text (KServe's
    /// `inferenceservice-config` data: JSON with `"image" : "kserve/agent:latest"`):
    /// each component image spelt in it as a reference, but on comment lines.
    fn rewrite_within(&self, node: &mut Node) -> usize {
        let Some(text) = node.as_str().filter(|t| self.scanner.may_match(t)) else {
            return 0;
        };
        let mut out = String::with_capacity(text.len());
        let mut count = 0;
        for (n, line) in text.split_inclusive('\n').enumerate() {
            let comment = ["#", "//"].iter().any(|c| line.trim_start().starts_with(c));
            let mut last = 0;
            for found in self.scanner.line(line).into_iter().filter(|_| !comment) {
                let mut pos = node.pos;
                pos.line += u32::try_from(n).unwrap_or(u32::MAX);
                pos.column += u32::try_from(found.offset).unwrap_or(u32::MAX);
                let Ok(spelt) = Reference::parse(found.text) else {
                    continue;
                };
                let Some(target) = self.target(found.text, pos) else {
                    continue;
                };
                // A repository alone stays one: a program may append its own tag
                // (`os.environ.get("FRONTEND_IMAGE", "ghcr.io/kubeflow/kfp-frontend")`).
                let bare = spelt.tag().is_none() && spelt.digest().is_none();
                if let Some(&index) = self.by_repository.get(spelt.repository()) {
                    if bare && self.overridden[index] {
                        self.untagged.borrow_mut().push((pos, index));
                    }
                }
                let written = match Reference::parse(&target.image) {
                    Ok(r) if bare => r.repository().to_string(),
                    _ => target.image,
                };
                out.push_str(&line[last..found.offset]);
                out.push_str(&written);
                last = found.offset + found.text.len();
                count += 1;
            }
            out.push_str(&line[last..]);
        }
        if count > 0 {
            self.path_fields.borrow_mut().insert(node.pos);
            node.set_string(out);
        }
        count
    }
}

/// Finds the components' repositories in text: image strays in ConfigMaps and
/// env values, images inside an `imagePaths` field that holds text.
pub(super) fn component_scanner(resolution: &Resolution<'_>) -> crate::scan::Scanner {
    crate::scan::Scanner::new(
        resolution
            .images
            .iter()
            .enumerate()
            .map(|(i, r)| (i, r.component.repositories.as_slice())),
    )
}

/// Sets `key: value` in a mapping, inserting a missing key right after `after`.
fn set_after(map: &mut Node, key: &str, value: &str, after: &str) {
    if let Some(existing) = map.get_mut(key) {
        if existing.as_str() != Some(value) {
            existing.set_string(value);
        }
        return;
    }
    let Some(entries) = map.as_map_mut() else {
        return;
    };
    let at = entries
        .iter()
        .position(|(k, _)| k.as_str() == Some(after))
        .map_or(entries.len(), |i| i + 1);
    entries.insert(
        at,
        (
            Node::string(key, Pos::default()),
            Node::string(value, Pos::default()),
        ),
    );
}
