//! The components init proposes: one per repository the manifests and charts
//! run, named and given the Makefile variables that move it.

use super::names::{assign_names, component_name, repo_owner_name, Wanted};
use super::{named, Built, Defined, Facts, Found, Proposed};
use berth_ref::Reference;

/// The tag variable of image variable `var`: what its raw value ends in
/// (`:$(EPP_TAG)`), else `NAME_TAG`.
fn tag_variable(facts: &Facts, var: &str) -> String {
    let raw = facts
        .make_vars
        .iter()
        .rev()
        .find(|v| v.name == *var)
        .map(|v| v.value.trim().to_string())
        .unwrap_or_default();
    let from_value = raw
        .rsplit_once(':')
        .map(|(_, t)| {
            t.trim_start_matches("$(")
                .trim_start_matches("${")
                .trim_end_matches([')', '}'])
                .to_string()
        })
        .filter(|_| raw.ends_with(')') || raw.ends_with('}'))
        .filter(|t| t.ends_with("TAG") || t.ends_with("VERSION"));
    from_value.unwrap_or_else(|| format!("{}_TAG", var.trim_end_matches("_IMAGE")))
}

/// A component's default image: the Makefile's (`SIDECAR_IMAGE ?= …:$(SIDECAR_TAG)`
/// expanded) when it names one — what the project's pipeline builds and pushes
/// wins over a tag an overlay happens to carry — else the tag most places carry
/// (the first on a tie); and the note that says which.
fn default_image(all: &[&Found], variable: Option<&Defined>) -> (String, String) {
    let mut tags: Vec<(String, usize)> = Vec::new();
    // The manifests' tags, when any carry the image; a chart's values only else.
    let from_manifests = all.iter().any(|f| !f.in_chart);
    for f in all.iter().filter(|f| !from_manifests || !f.in_chart) {
        let t = f.reference.to_string();
        match tags.iter_mut().find(|(x, _)| *x == t) {
            Some((_, n)) => *n += 1,
            None => tags.push((t, 1)),
        }
    }
    let carried = tags
        .iter()
        .max_by_key(|(_, n)| *n)
        .map(|(t, _)| t.clone())
        .unwrap_or_default();
    let from_make = variable.and_then(|(var, value, at)| {
        let made = Reference::parse(value).ok().filter(|r| r.tag().is_some())?;
        (made.to_string() != carried).then(|| (made.to_string(), var, at))
    });
    match from_make {
        Some((made, var, at)) => {
            let note =
                format!("; the default is make's `{var}` ({at}), not the manifests' `{carried}`");
            (made, note)
        }
        None => (carried, String::new()),
    }
}

/// When the manifests carry one repository under a tag and that tag plus a
/// suffix (`:latest` and `:latest-gpu`, KServe's runtimes), the plain one: the
/// component's default, its variants kept by `tagSuffix: true`.
fn variant_base(all: &[&Found]) -> Option<Reference> {
    let tags: Vec<String> = all
        .iter()
        .filter_map(|f| f.reference.tag().map(|t| t.to_string()))
        .collect();
    let base = tags.iter().find(|t| {
        tags.iter()
            .any(|other| other.len() > t.len() + 1 && other.starts_with(&format!("{t}-")))
    })?;
    all.iter()
        .find(|f| f.reference.tag().is_some_and(|t| t.to_string() == *base))
        .map(|f| f.reference.clone())
}

/// How a reference is told apart from its repository's other copies.
fn spelled(reference: &Reference) -> String {
    match (reference.tag(), reference.digest()) {
        (_, Some(d)) => format!("@{d}"),
        (Some(t), None) => format!(":{t}"),
        (None, None) => "no tag".to_string(),
    }
}

/// The tags (and digests) the project runs one repository at, each with its
/// first place, when there are several and they are not one tag and its
/// suffixed variants (`:latest`, `:latest-gpu`): Kubeflow's applications each
/// pin their own `mysql` (8.0, 8.3, 8.4), which no one default can be. What
/// the candidates built counts when they were built (an overlay's `newTag`
/// applied), else the files' own tags.
fn several_tags(built: Option<&Built>, repo: &str, all: &[&Found]) -> Option<Vec<String>> {
    if variant_base(all).is_some() {
        return None;
    }
    let places: Vec<(&Reference, &str)> = match built {
        Some(built) => (built.get(repo).into_iter().flatten())
            .map(|(r, dir)| (r, dir.as_str()))
            .collect(),
        None => (all.iter().filter(|f| !f.in_chart))
            .map(|f| (&f.reference, f.at.as_str()))
            .collect(),
    };
    let mut tags: Vec<(String, &str)> = Vec::new();
    for (reference, at) in places {
        let spelled = spelled(reference);
        if !tags.iter().any(|(t, _)| *t == spelled) {
            tags.push((spelled, at));
        }
    }
    (tags.len() > 1).then(|| {
        tags.into_iter()
            .map(|(t, at)| format!("{t} in {at}"))
            .collect()
    })
}

/// The repository variable of the component of `repo` and where it is defined:
/// a component's own `<X>_IMAGE_TAG_BASE` (`EPP_IMAGE ?=
/// $(EPP_IMAGE_TAG_BASE):$(EPP_TAG)`), else operator-sdk's `IMAGE_TAG_BASE`,
/// when its value is that repository.
fn repository_env<'d>(
    variable: Option<&Defined>,
    defined: &'d [Defined],
    tag_base: Option<&'d Defined>,
    repo: &str,
) -> Option<(&'d str, &'d str)> {
    let own_base = variable.map(|(var, _, _)| format!("{var}_TAG_BASE"));
    own_base
        .iter()
        .filter_map(|name| defined.iter().find(|(n, _, _)| n == name))
        .chain(tag_base)
        .find(|(_, base, _)| {
            Reference::parse(base).is_ok_and(|b| b.repository().to_string() == *repo)
        })
        .map(|(var, _, at)| (var.as_str(), at.as_str()))
}

/// An image variable that holds a repository alone and that make composes with
/// a tag variable (model-registry: `IMG := ${IMG_REGISTRY}/${IMG_ORG}/${IMG_REPO}`,
/// built as `${IMG}:$(IMG_VERSION)`): name, repository, tag variable, where.
type RepositoryOnly = (String, String, String, String);

/// `defined` split into the variables that may hold a whole image and those that
/// hold a repository make adds a tag to ([`RepositoryOnly`]): berth setting the
/// latter to a whole image would make make build `repo:tag:tag`.
fn repository_only(facts: &Facts, defined: &[Defined]) -> (Vec<Defined>, Vec<RepositoryOnly>) {
    let mut full = Vec::new();
    let mut repository = Vec::new();
    for (name, value, at) in defined {
        // Image variables only: a `*_TAG_BASE` is a repository by name ([`repository_env`]).
        let image_variable = name.ends_with("_IMAGE") || generic_image_variable(name);
        let tagless = Reference::parse(value)
            .ok()
            .filter(|r| image_variable && r.tag().is_none() && r.digest().is_none());
        let tag = tagless.as_ref().and_then(|_| composed_tag(facts, name));
        match (tagless, tag) {
            (Some(r), Some(tag)) => {
                let repo = r.repository().to_string();
                repository.push((name.clone(), repo, tag, at.clone()));
            }
            _ => full.push((name.clone(), value.clone(), at.clone())),
        }
    }
    (full, repository)
}

/// The variable the Makefiles append as `name`'s tag: `$(NAME):$(TAG)`, `${NAME}:${TAG}`.
fn composed_tag(facts: &Facts, name: &str) -> Option<String> {
    facts.make_texts.iter().find_map(|(_, text)| {
        [format!("$({name}):"), format!("${{{name}}}:")]
            .iter()
            .find_map(|head| {
                let after = &text[text.find(head.as_str())? + head.len()..];
                let inner = after
                    .strip_prefix("$(")
                    .or_else(|| after.strip_prefix("${"))?;
                let tag = inner.split([')', '}']).next()?;
                let name =
                    !tag.is_empty() && tag.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                name.then(|| tag.to_string())
            })
    })
}

/// `repositoryEnv:` (and the tag variable make appends to it) of the component
/// of `repo`: `base`, the component's own or operator-sdk's tag base, else, for a
/// component with no full-image variable (`unlinked`), a [`RepositoryOnly`]
/// variable whose value is `repo`.
fn repository_variables(
    (base, repository_only): (Option<(&str, &str)>, &[RepositoryOnly]),
    (repo, unlinked): (&str, bool),
    defined: &[Defined],
    entry: &mut Proposed,
    why: &mut String,
) {
    if let Some((base_var, at)) = base {
        entry.repository_env = Some(base_var.to_string());
        why.push_str(&format!("; {base_var} from {at}"));
        return;
    }
    let found = repository_only
        .iter()
        .find(|(_, value, _, _)| unlinked && value == repo);
    let Some((var, _, tag, at)) = found else {
        return;
    };
    entry.repository_env = Some(var.clone());
    why.push_str(&format!(
        "; {var} from {at}, to which make appends `:$({tag})`"
    ));
    let Some((t, value, at)) = defined.iter().find(|(n, _, _)| n == tag) else {
        return;
    };
    entry.tag_env = Some(t.clone());
    why.push_str(&format!("; {t} from {at}"));
    // What make builds is the default, as for a whole-image variable ([`default_image`]).
    let made = Reference::parse(&format!("{repo}:{value}")).ok();
    if let Some(made) = made.filter(|m| m.to_string() != entry.image) {
        why.push_str(&format!(
            "; the default is make's `{var}:{t}`, not the manifests' `{}`",
            entry.image
        ));
        entry.image = made.to_string();
    }
}

/// `helmValues:` from the chart values that carry the component's image, if any.
fn helm_values(all: &[&Found], entry: &mut Proposed, why: &mut String) {
    let Some(f) = all.iter().find(|f| !f.helm_values.is_empty()) else {
        return;
    };
    entry.helm_values = f.helm_values.clone();
    let paths: Vec<String> = f
        .helm_values
        .iter()
        .map(|(_, p)| format!("`{p}`"))
        .collect();
    why.push_str(&format!(
        "; berth sets {} in the chart's values",
        paths.join(", ")
    ));
}

/// The Makefile variable whose value names `repo` (`*_IMAGE`, `IMG`, `IMAGE`).
fn variable_of<'d>(defined: &'d [Defined], repo: &str) -> Option<&'d Defined> {
    defined.iter().find(|(n, v, _)| {
        (n.ends_with("_IMAGE") || generic_image_variable(n))
            && named_repository(v).is_some_and(|r| r == *repo)
    })
}

/// An image variable whose name says nothing of the component (`IMG`, `IMAGE`,
/// `IMAGE_NAME`).
pub(super) fn generic_image_variable(name: &str) -> bool {
    matches!(name, "IMG" | "IMAGE" | "IMAGE_NAME")
}

/// The repository a Makefile value names: the reference's, or, when make
/// computes the tag (`ghcr.io/acme/controller:$(shell cat VERSION | sed "s/^v//")`,
/// kept as written), the text before `:$(` when that is a repository alone.
fn named_repository(value: &str) -> Option<String> {
    if let Ok(reference) = Reference::parse(value) {
        return Some(reference.repository().to_string());
    }
    let computed = value.find("$(").into_iter().chain(value.find("${")).min()?;
    let head = value[..computed].strip_suffix(':')?;
    Reference::parse(head)
        .ok()
        .filter(|r| r.tag().is_none() && r.digest().is_none())
        .map(|r| r.repository().to_string())
}

/// Whether `repo` is not under the project's registry and organisation.
fn third_party(project_owner: Option<&str>, repo: &str) -> bool {
    project_owner.is_some_and(|o| !repo.starts_with(&format!("{o}/")))
}

/// The name each repository asks for, and how strongly (a Makefile variable
/// first, then the project's own images, then third-party ones).
fn wanted(
    facts: &Facts,
    by_repo: &[(String, Vec<&Found>)],
    named: &[berth_make::NameOnly],
    defined: &[Defined],
    project_owner: Option<&str>,
) -> Vec<Wanted> {
    by_repo
        .iter()
        .map(|(repo, _)| {
            let variable = variable_of(defined, repo);
            let by_name = named::of_repository(named, repo).filter(|_| variable.is_none());
            let name = match (variable, by_name) {
                (Some((n, _, _)), _) if !generic_image_variable(n) => component_name(n),
                (None, Some(n)) => component_name(&n.var),
                _ => component_name(repo.rsplit('/').next().unwrap_or(repo)),
            };
            let mut claimed: Vec<String> = Vec::new();
            if let Some((var, _, _)) = variable {
                claimed.push(var.clone());
                claimed.push(tag_variable(facts, var));
            }
            Wanted {
                name,
                rank: match (
                    variable.is_some() || by_name.is_some(),
                    third_party(project_owner, repo),
                ) {
                    (true, _) => 0,
                    (false, false) => 1,
                    (false, true) => 2,
                },
                owner: third_party(project_owner, repo)
                    .then(|| repo_owner_name(repo))
                    .flatten(),
                claimed,
            }
        })
        .collect()
}

/// The images found, grouped by repository in the order first seen.
fn by_repository(found: &[Found]) -> Vec<(String, Vec<&Found>)> {
    let mut by_repo: Vec<(String, Vec<&Found>)> = Vec::new();
    for f in found {
        let repo = f.reference.repository().to_string();
        match by_repo.iter_mut().find(|(r, _)| *r == repo) {
            Some((_, all)) => all.push(f),
            None => by_repo.push((repo, vec![f])),
        }
    }
    by_repo
}

/// `images:`: one component per repository, in the order first seen, with the
/// variables the Makefile defines for it and a note of why.
pub(super) fn components(
    (facts, built): (&Facts, Option<&Built>),
    (found, named, shared_tag): (&[Found], &[berth_make::NameOnly], Option<&Defined>),
    defined: &[Defined],
    project_owner: Option<&str>,
    notes: &mut Vec<String>,
) -> Vec<Proposed> {
    let (full, repo_vars) = repository_only(facts, defined);
    let defined = full.as_slice();
    let mut by_repo = by_repository(found);
    by_repo.retain(|(repo, all)| {
        let unowned = third_party(project_owner, repo)
            && variable_of(defined, repo).is_none()
            && named::of_repository(named, repo).is_none();
        match unowned.then(|| several_tags(built, repo, all)).flatten() {
            Some(tags) => {
                notes.push(format!("left out `{repo}`: a third-party image the manifests run at {} tags ({}); one component would move every copy to one tag, so berth leaves them as the manifests write them (and `berth mirror` does not copy them)", tags.len(), tags.join("; ")));
                false
            }
            None => true,
        }
    });
    let mut images = Vec::new();
    let tag_base = defined.iter().find(|(n, _, _)| n == "IMAGE_TAG_BASE");
    let variable_of = |repo: &str| variable_of(defined, repo);
    let third_party_of = |repo: &str| third_party(project_owner, repo);
    let wanted = wanted(facts, &by_repo, named, defined, project_owner);
    let assigned = assign_names(&wanted);
    for ((repo, all), name) in by_repo.iter().zip(assigned) {
        let variable = variable_of(repo);
        let (mut image, make_note) = default_image(all, variable);
        let variant_of = variant_base(all).filter(|_| variable.is_none());
        if let Some(base) = &variant_of {
            image = base.to_string();
        }
        let by_name = named::of_repository(named, repo).filter(|_| variable.is_none());
        let mut tag_note = String::new();
        if let Some((made, note)) = by_name.and_then(|n| named::made_tag(n, shared_tag, &image)) {
            image = made;
            tag_note = note;
        }
        // Not under the project's registry (another registry or organisation).
        let third_party = third_party_of(repo);
        let mut entry = Proposed {
            image: image.clone(),
            third_party,
            ..Proposed::default()
        };
        let mut why = all[0].at.to_string();
        why.push_str(&make_note);
        if let Some((var, _, at)) = variable {
            entry.env = Some(var.clone());
            why.push_str(&format!("; {var} from {at}"));
            let tag_var = tag_variable(facts, var);
            if let Some((t, _, at)) = defined.iter().find(|(n, _, _)| *n == tag_var) {
                entry.tag_env = Some(t.clone());
                why.push_str(&format!("; {t} from {at}"));
            }
        }
        let bases = (
            repository_env(variable, defined, tag_base, repo),
            &repo_vars[..],
        );
        repository_variables(
            bases,
            (repo, variable.is_none()),
            defined,
            &mut entry,
            &mut why,
        );
        if let Some(base) = &variant_of {
            entry.tag_suffix = true;
            why.push_str(&format!(
                "; tags that add a suffix to `{}` are its variants",
                base.tag().map(|t| t.to_string()).unwrap_or_default()
            ));
        }
        if let Some(n) = by_name {
            why.push_str(&named::note(n, &format!("{}_IMAGE", n.stem())));
            why.push_str(&tag_note);
        }
        helm_values(all, &mut entry, &mut why);
        if third_party {
            why.push_str(
                "; third-party: not under the project's registry, so IMAGE_REGISTRY leaves it",
            );
        }
        notes.push(format!("component `{name}`: {} ({why})", entry.image));
        images.push(Proposed { name, why, ..entry });
    }
    if by_repo.is_empty() {
        notes.push(none_found(facts));
    }
    images
}

/// Why `images:` is empty, and what to do: when kustomizations were left out
/// because their inputs are generated (opendatahub-operator's
/// `config/manager/kustomization.yaml`), they are where the images are.
fn none_found(facts: &Facts) -> String {
    match facts.generated_inputs.len() {
        0 => "images: none found in the manifests' pods; add `images:` by hand".into(),
        n => format!("images: none found in the pods of what builds here; the {n} kustomization(s) left out above for generated inputs likely run the project's images: generate those inputs (as said above), then `berth init` again, or add `images:` by hand"),
    }
}
