//! Image families (#49 item 6): one kustomize `images:` name (a placeholder such
//! as `REPLACE_MODEL_SERVER_IMAGE`, or a repository) that the repository's
//! Components and overlays move to sibling repositories — an accelerator's or a
//! platform's build each — is one component with `variants:`, each named after
//! the directory that sets it, and the profiles whose overlays include one
//! select it.

use std::collections::{BTreeMap, BTreeSet};

use berth_ref::Reference;

use crate::{normalize, Facts, Kustomization, Source};

/// One member of a family: the kustomization that sets it, and its image.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    /// The kustomization's directory.
    pub(crate) dir: String,
    /// The image it sets.
    pub(crate) image: Reference,
    /// Its variant name (unique in the family).
    pub(crate) name: String,
}

/// The members of one `images:` name, the default first.
#[derive(Debug, Clone)]
pub(crate) struct Family {
    /// The `images:` name they all move.
    pub(crate) name: String,
    /// The members, the default first.
    pub(crate) members: Vec<Member>,
}

/// What a berth.yaml variant entry says of `member` in a family whose default is
/// `family`: a repository alone at the family's tag, the repository and a tag
/// suffix when its tag adds one, else the whole reference (its own tag).
pub(crate) fn variant_image(family: &Reference, member: &Reference) -> (String, Option<String>) {
    let repository = member.repository().to_string();
    match (family.tag(), member.tag()) {
        (Some(family), Some(own)) if own == family => (repository, None),
        (Some(family), Some(own)) => match own.as_str().strip_prefix(family.as_str()) {
            Some(suffix) if !suffix.is_empty() => (repository, Some(suffix.to_string())),
            _ => (member.to_string(), None),
        },
        _ => (member.to_string(), None),
    }
}

/// What the repositories' last path components share, trimmed of a trailing
/// `-`, `_` or `.`, when that is a name of two characters or more.
pub(crate) fn stem<'r>(images: impl Iterator<Item = &'r Reference>) -> Option<String> {
    let names: Vec<&str> = images.map(|r| r.repository().last_component()).collect();
    let first = *names.first()?;
    let mut len = first.len();
    for name in &names[1..] {
        len = len.min(
            first
                .bytes()
                .zip(name.bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    let stem = first[..len].trim_end_matches(['-', '_', '.']);
    let usable = stem.len() >= 2 && stem.starts_with(|c: char| c.is_ascii_alphabetic());
    usable.then(|| stem.to_string())
}

/// The name berth.yaml gives the component's own image.
pub(crate) const DEFAULT: &str = "default";

impl Family {
    /// The component's name: what its repositories' names share (`server` for
    /// `server-cuda`, `server-rocm`), when that is a name.
    pub(crate) fn stem(&self) -> Option<String> {
        stem(self.members.iter().map(|m| &m.image))
    }

    /// What berth.yaml's `variants:` says of member `m`: its image (a repository
    /// alone when its tag is the family's; with its own tag when it lags) and its
    /// tag suffix (same tag plus a suffix).
    pub(crate) fn variant(&self, m: &Member) -> (String, Option<String>) {
        variant_image(&self.members[0].image, &m.image)
    }
}

/// The families the kustomizations define: names mapped to two repositories or
/// more. The default member is the one the `manifests:` overlay includes, else
/// the first by directory.
pub(crate) fn families(facts: &Facts, manifests: &[Source]) -> Vec<Family> {
    let mut names: Vec<&str> = Vec::new();
    for k in &facts.kustomizations {
        for (name, _, _) in &k.images {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
    }
    let main = manifests.iter().find_map(|s| match s {
        Source::Kustomize(dir) => Some(normalize(dir)),
        _ => None,
    });
    let mut out = Vec::new();
    for name in names {
        let mut members: Vec<Member> = Vec::new();
        for k in &facts.kustomizations {
            for (n, new_name, new_tag) in k.images.iter().filter(|(n, _, _)| n == name) {
                let repository = new_name.as_deref().unwrap_or(n);
                let text = match new_tag {
                    Some(tag) => format!("{repository}:{tag}"),
                    None => repository.to_string(),
                };
                let Ok(image) = Reference::parse(&text) else {
                    continue;
                };
                if !members.iter().any(|m| m.image == image) {
                    let dir = normalize(&k.dir);
                    members.push(Member {
                        dir,
                        image,
                        name: String::new(),
                    });
                }
            }
        }
        for group in same_workload(facts, name, members) {
            if let Some(family) = family(facts, name, group, main.as_deref()) {
                out.push(family);
            }
        }
    }
    out
}

/// The family of one workload's `members`, or none when they name one
/// repository (an overlay's tag is no family).
fn family(
    facts: &Facts,
    name: &str,
    mut members: Vec<Member>,
    main: Option<&str>,
) -> Option<Family> {
    let repositories: BTreeSet<String> = (members.iter())
        .map(|m| m.image.repository().to_string())
        .collect();
    if repositories.len() < 2 {
        return None;
    }
    members.sort_by(|a, b| a.dir.cmp(&b.dir));
    let default = main
        .and_then(|main| members.iter().position(|m| includes(facts, main, &m.dir)))
        .unwrap_or(0);
    let first = members.remove(default);
    members.insert(0, first);
    name_members(&mut members);
    Some(Family {
        name: name.to_string(),
        members,
    })
}

/// `members` split by the workload their `images:` entry edits: the files that
/// run image `name` which each member's kustomization includes. Members whose
/// files meet edit one workload (an accelerator's overlay of a shared base); a
/// scaffold's placeholder (`controller`) that separate programs each fill in
/// their own `manager.yaml` is no family. A member whose files are not found
/// here (a kustomize Component, which includes no base) joins the first group.
fn same_workload(facts: &Facts, name: &str, members: Vec<Member>) -> Vec<Vec<Member>> {
    let mut groups: Vec<(BTreeSet<String>, Vec<Member>)> = Vec::new();
    let mut unplaced = Vec::new();
    for member in members {
        let files = running(facts, &member.dir, name);
        if files.is_empty() {
            unplaced.push(member);
            continue;
        }
        let (meeting, apart): (Vec<_>, Vec<_>) = groups
            .into_iter()
            .partition(|(f, _)| !f.is_disjoint(&files));
        let mut merged = (files, vec![member]);
        for (f, m) in meeting {
            merged.0.extend(f);
            merged.1.extend(m);
        }
        groups = apart;
        groups.push(merged);
    }
    let mut groups: Vec<Vec<Member>> = groups.into_iter().map(|(_, m)| m).collect();
    match groups.first_mut() {
        Some(first) => first.extend(unplaced),
        None => groups.push(unplaced),
    }
    groups
}

/// The manifest files the kustomization at `dir` includes (transitively) that
/// run an image called `name`, as kustomize's `images:` matches it: the name
/// without its tag or digest.
fn running(facts: &Facts, dir: &str, name: &str) -> BTreeSet<String> {
    let reached = reached(&by_dir(facts), dir);
    (facts.manifests.iter())
        .filter(|(path, text)| reached.contains(&normalize(path)) && runs(text, name))
        .map(|(path, _)| normalize(path))
        .collect()
}

/// Whether a manifest's pods run an image whose kustomize name is `name`
/// (through init's one pod walker).
fn runs(text: &str, name: &str) -> bool {
    (crate::pod_images(text, "").iter()).any(|(image, _)| kustomize_name(image).0 == name)
}

/// An image field as kustomize's `images:` reads it: the name it matches (the
/// field without its tag or digest) and the tag. A placeholder need not be a
/// valid reference (`REPLACE_IMAGE:v0.0.0-placeholder`), so this is not
/// [`Reference::parse`].
pub(crate) fn kustomize_name(image: &str) -> (&str, Option<&str>) {
    let (name_and_tag, _digest) = image.split_once('@').unwrap_or((image, ""));
    match name_and_tag.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name, Some(tag)),
        _ => (name_and_tag, None),
    }
}

/// Each member named after its directory's last component, or its last two
/// where those collide (`amd/release`, `gpu/release`), as a DNS label.
fn name_members(members: &mut [Member]) {
    let last = |dir: &str, n: usize| {
        let parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
        parts[parts.len().saturating_sub(n)..].join("-")
    };
    let short: Vec<String> = members.iter().map(|m| last(&m.dir, 1)).collect();
    let mut taken: Vec<String> = Vec::new();
    for (i, member) in members.iter_mut().enumerate() {
        let clash = short.iter().filter(|s| **s == short[i]).count() > 1;
        let mut name = label(&if clash {
            last(&member.dir, 2)
        } else {
            short[i].clone()
        });
        if name.is_empty() || name == DEFAULT || taken.contains(&name) {
            name = format!(
                "{}-{}",
                if name.is_empty() { "variant" } else { &name },
                i + 1
            );
        }
        taken.push(name.clone());
        member.name = name;
    }
}

/// `text` as a DNS label: lowercase letters, digits and `-`, at most 63.
pub(crate) fn label(text: &str) -> String {
    let lowered = crate::names::dashed(text);
    let trimmed = lowered.trim_matches('-');
    trimmed
        .chars()
        .take(63)
        .collect::<String>()
        .trim_end_matches('-')
        .to_string()
}

/// Whether the kustomization at `dir` includes `target` (itself, or through its
/// `resources:`/`components:`, transitively).
pub(crate) fn includes(facts: &Facts, dir: &str, target: &str) -> bool {
    reached(&by_dir(facts), dir).contains(target)
}

/// The kustomizations by their normalized directory.
fn by_dir(facts: &Facts) -> BTreeMap<String, &Kustomization> {
    (facts.kustomizations.iter())
        .map(|k| (normalize(&k.dir), k))
        .collect()
}

/// The kustomization at `dir` and every path its `resources:`/`components:`
/// reach, transitively (directories and files, normalized).
fn reached(by_dir: &BTreeMap<String, &Kustomization>, dir: &str) -> BTreeSet<String> {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut stack = vec![normalize(dir)];
    while let Some(current) = stack.pop() {
        if !seen.insert(current.clone()) {
            continue;
        }
        let Some(k) = by_dir.get(&current) else {
            continue;
        };
        for entry in &k.resources {
            stack.push(normalize(&format!("{current}/{entry}")));
        }
    }
    seen
}

/// kustomize's `images:` edits as they reach each manifest file: a file's image
/// is renamed by the entries of the kustomizations that include it (and of the
/// bases and Components those include), not by whichever kustomization of the
/// repository names it last — a scaffold's `controller` is another program in
/// each of its trees.
pub(crate) struct Renames {
    /// Each kustomization's reach, with the `images:` entries in it, its own first.
    reach: Vec<(BTreeSet<String>, Vec<Edit>)>,
}

/// One `images:` entry: `(name, newName, newTag)`.
type Edit = (String, Option<String>, Option<String>);

impl Renames {
    pub(crate) fn new(facts: &Facts) -> Self {
        let index = by_dir(facts);
        let by_dir = |d: &str| index.get(&normalize(d)).copied();
        let reach = (facts.kustomizations.iter())
            .map(|k| {
                let reached = reached(&index, &k.dir);
                let mut dirs: Vec<&str> = vec![k.dir.as_str()];
                dirs.extend(reached.iter().map(String::as_str));
                let mut edits: Vec<Edit> = Vec::new();
                for edit in dirs.into_iter().filter_map(by_dir).flat_map(|k| &k.images) {
                    if !edits.contains(edit) {
                        edits.push(edit.clone());
                    }
                }
                (reached, edits)
            })
            .collect();
        Renames { reach }
    }

    /// The `(newName, newTag)` edits of image name `bare` in the file at `path`,
    /// each once, in kustomization order; none when no kustomization that
    /// includes the file edits it.
    pub(crate) fn of(&self, path: &str, bare: &str) -> Vec<(Option<String>, Option<String>)> {
        let path = normalize(path);
        let mut out = Vec::new();
        let reaching = (self.reach.iter()).filter(|(reached, _)| reached.contains(&path));
        for (_, edits) in reaching {
            for (_, new_name, new_tag) in edits.iter().filter(|(n, _, _)| n == bare) {
                let edit = (new_name.clone(), new_tag.clone());
                if !out.contains(&edit) {
                    out.push(edit);
                }
            }
        }
        out
    }
}
