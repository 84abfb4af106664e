//! Rewrites component images, and pull policies where the project asks.

use std::collections::HashMap;

use berth_ref::{Reference, Repository};
use berth_yaml::{Node, Pos, Value};

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
}

/// What one matched image field is rewritten to.
struct Rewrite {
    image: String,
    pull_policy: Option<&'static str>,
    /// `auto` without a digest: a manifest's explicit `Always` stays (a moving tag
    /// such as `:dev` written with `Always` must keep being pulled).
    keeps_always: bool,
}

impl Target {
    /// The image for a field that held `own`: the resolved reference, or — when
    /// that names neither tag nor digest (a component whose `image:` has no tag,
    /// a full override without one) — the resolved repository with the field's
    /// own tag and digest, as kustomize's `newName` keeps them.
    fn for_field(&self, own: Option<&Reference>) -> Rewrite {
        let reference = match (&self.image, own) {
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
        };
        Rewrite {
            pull_policy: self.pull_policy.map(|p| p.for_image(&reference)),
            keeps_always: self.pull_policy == Some(PullPolicy::Auto)
                && reference.digest().is_none(),
            image: reference.to_string(),
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
    image_paths: &'a [ImagePath],
    /// Image fields matched, per target (for `berth validate`'s warnings).
    hits: Vec<std::cell::Cell<usize>>,
    /// Image values that are neither references nor known placeholders, since the last take.
    unparsed: std::cell::RefCell<Vec<(Pos, String)>>,
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
            let untouched = only_overridden && !resolved.origins.overridden();
            if untouched {
                // Still a target (its index must line up), but nothing maps to it; it
                // counts as matched so validate does not warn about it.
                targets.push(Target {
                    image: None,
                    reference: resolved.reference.clone(),
                    pull_policy: None,
                });
                continue;
            }
            if !resolved.component.env.is_empty() {
                by_variable
                    .entry(resolved.component.env.as_str())
                    .or_insert(i);
            }
            for repository in &resolved.component.repositories {
                // Earlier components win a repository two components both claim.
                by_repository.entry(repository).or_insert(i);
            }
            let reference = &resolved.reference;
            let pinned = reference.tag().is_some() || reference.digest().is_some();
            targets.push(Target {
                image: pinned.then(|| reference.to_string()),
                reference: reference.clone(),
                pull_policy: pull_policies.get(i).copied().flatten(),
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
            targets,
            image_paths,
        }
    }

    /// What `image` becomes, if it is a component's.
    fn target(&self, image: &str) -> Option<Rewrite> {
        // `${EPP_IMAGE}` or `$EPP_IMAGE`, as envsubst fills them: the component whose
        // variable it is, with its resolved reference.
        if let Some(variable) = placeholder_variable(image) {
            let index = *self.by_variable.get(variable)?;
            self.hit(index);
            return Some(self.targets[index].for_field(None));
        }
        let (reference, own) = match Reference::parse(image) {
            Ok(parsed) => (parsed.clone(), Some(parsed)),
            Err(_) => (placeholder_tag(image)?, None),
        };
        let index = *self.by_repository.get(reference.repository())?;
        self.hit(index);
        Some(self.targets[index].for_field(own.as_ref()))
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
                    count += self.rewrite_field(source, "reference", Some("pullPolicy"));
                }
            });
        });
        for path in self.image_paths {
            let applies =
                path.kind == kind && path.api_version.as_deref().is_none_or(|v| v == api_version);
            if applies {
                count += self.rewrite_path(object, &path.path);
            }
        }
        count
    }

    fn rewrite_container(&self, container: &mut Node) -> usize {
        self.rewrite_field(container, "image", Some("imagePullPolicy"))
    }

    /// Rewrites `holder[field]` and, when the component sets one, `holder[policy_field]`.
    fn rewrite_field(&self, holder: &mut Node, field: &str, policy_field: Option<&str>) -> usize {
        let Some((pos, text)) = holder
            .get(field)
            .and_then(|n| n.as_str().map(|t| (n.pos, t)))
        else {
            return 0;
        };
        let Some(target) = self.target(text) else {
            // Neither a reference nor a placeholder berth knows: say so (validate warns).
            if Reference::parse(text).is_err() && placeholder_tag(text).is_none() {
                self.unparsed.borrow_mut().push((pos, text.to_string()));
            }
            return 0;
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
        1
    }

    fn rewrite_path(&self, node: &mut Node, path: &[PathSegment]) -> usize {
        match path {
            [] => 0,
            [PathSegment::Key(key)] => {
                let Some(target) = node
                    .get(key)
                    .and_then(Node::as_str)
                    .and_then(|s| self.target(s))
                else {
                    return 0;
                };
                node.get_mut(key).map_or(0, |n| {
                    n.set_string(target.image);
                    1
                })
            }
            [PathSegment::Key(key), rest @ ..] => {
                node.get_mut(key).map_or(0, |n| self.rewrite_path(n, rest))
            }
            [PathSegment::Each, rest @ ..] => match &mut node.value {
                Value::Seq(items) => items
                    .iter_mut()
                    .map(|item| self.rewrite_each(item, rest))
                    .sum(),
                _ => 0,
            },
        }
    }

    /// A list item at the end of a path (`images[]`) is itself the image.
    fn rewrite_each(&self, item: &mut Node, rest: &[PathSegment]) -> usize {
        if !rest.is_empty() {
            return self.rewrite_path(item, rest);
        }
        match item.as_str().and_then(|s| self.target(s)) {
            Some(target) => {
                item.set_string(target.image);
                1
            }
            None => 0,
        }
    }
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
